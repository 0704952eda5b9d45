"""JavaScript ReadableStream <-> Python bytes, and nothing else.

Every proxy made here is destroyed exactly once, whichever way the stream ends: the
answer completes, fails or times out, the client cancels the body, or the request signal
aborts. Nothing here is kept in a module global but Python values: a deploy snapshots the
module state, and a JS object there fails it.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

import js
from pyodide.ffi import create_proxy, to_js

from js_values import js_numbers
from relay import Relay

log = logging.getLogger("jsstream")

# Alive while their proxies are: a leaked proxy keeps its owner here (see live_streams()).
_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()
_COUNTS = {"created": 0, "destroyed": 0, "relays": 0, "relays_ended": 0, "clients_gone": 0}


def live_streams() -> dict[str, Any]:
    # What the collection found unreachable: garbage requests left in cycles since the last one.
    collected = gc.collect()
    objects = gc.get_objects()
    # Every type, commonest first, so that a growing count says what grows, a few survivors of
    # ours included (local stats route only).
    kinds: dict[str, int] = {}
    for obj in objects:
        name = type(obj).__qualname__
        kinds[name] = kinds.get(name, 0) + 1
    top = dict(sorted(kinds.items(), key=lambda kv: -kv[1]))
    return {
        "live": len(_LIVE),
        **_COUNTS,
        "py_objects": len(objects),
        "gc_collected": collected,
        "py_types": top,
    }


def js_object(value: dict[str, Any]) -> Any:
    """A plain JS object (not a Map, not a PyProxy): what JS APIs and bindings expect."""
    return to_js(js_numbers(value), dict_converter=js.Object.fromEntries)


def _ignore(promise: Any) -> None:
    # Boolean is a JS function that accepts anything and has no effect: a rejection handler
    # that needs no proxy (and no code made from a string, which workerd forbids).
    promise.catch(js.Boolean)


def _destroy(owner: Any, proxies: list[Any]) -> None:
    """Destroy an owner's proxies (each exactly once: the caller then forgets them)."""
    for proxy in proxies:
        proxy.destroy()
    _COUNTS["destroyed"] += len(proxies)
    _LIVE.discard(owner)


def _bytes_of(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode()
    data: bytes = value.to_bytes()
    return data


class JsByteSource:
    """A streamed answer from env.AI.run(). The shell hands the untouched stream to a
    RelayPipe, for a streamed answer and a collected one alike; read() is the ByteSource
    protocol's, for host drivers (relay.drive). After cancel() no read reaches the stream again."""

    __slots__ = ("_reader", "_stopped", "stream")

    def __init__(self, stream: js.ReadableStream) -> None:
        self.stream = stream
        self._reader: Any = None
        self._stopped = False

    async def read(self) -> bytes | None:
        if self._stopped:
            return None
        if self._reader is None:
            self._reader = self.stream.getReader()
        result = await self._reader.read()
        if result.done or self._stopped:
            self._stopped = True
            return None
        return _bytes_of(result.value)

    def cancel(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._reader is not None:
            _ignore(self._reader.cancel())
        elif not self.stream.locked:
            _ignore(self.stream.cancel())


def js_bind(fn: Any, this: Any, *bound: Any) -> Any:
    """`fn.bind(this, *bound)`: a JS function, so no proxy to manage (and no code made from a
    string, which workerd forbids)."""
    return js.Reflect.apply(
        js.Reflect.get(js.Function.prototype, "bind"), fn, to_js([this, *bound])
    )


def _void_caller(fn: Any, this: Any, *bound: Any) -> Callable[[Any], None]:
    """call(value): `fn.call(this, *bound, value)`, made by JS, its result dropped in JS.

    Measured on workerd (bench/GLUE-NOTES.md): a JS call from Python that returns a promise
    hands Python a PyodideFuture, with Pyodide's own then() attached: ~35 us to make, and it
    enters Python again when it settles; a .catch() on it costs ~190 us. Per chunk that was
    most of the relay's CPU, and under load promise traffic through Pyodide ended in fatal
    errors. Array.prototype.forEach calls its callback and drops what it returns, so a writer's
    write() promise never reaches Python (~1.5 us a call). Built from built-ins only: workerd
    makes no code from strings. (forEach also passes the index and the array: every function
    called here ignores arguments past the ones it takes.)"""
    box = js.Array.new(1)
    for_each = js.Reflect.get(js.Array.prototype, "forEach")
    args = to_js([js_bind(fn, this, *bound)])
    put = js.Reflect.set
    apply = js.Reflect.apply

    def call(value: Any) -> None:
        put(box, 0, value)
        apply(for_each, box, args)

    return call


class RelayPipe:
    """upstream.pipeTo(a WritableStream whose sink is the relay), the relay writing its events
    into an IdentityTransformStream whose readable is the response body.

    JavaScript does the pumping; Python is called once per upstream chunk, synchronously, and
    returns nothing: no promise reaches Python per chunk (the writes go through _void_caller).
    The events are not awaited: they queue in the IdentityTransformStream for a client that
    reads slowly, bounded by the answer's max_tokens, so every answer reaches its end.
    It is wired step by step from Python, because workerd makes no code from strings.

    Ways it ends, and what stops the upstream read in each:
    - the upstream ends: the pipe closes the sink (close), the relay sends its last events;
    - the upstream fails: the pipe aborts the sink (abort(reason)), the relay says so;
    - the relay closes the answer itself ([DONE], a length cut, the idle limit from the
      timer): our AbortController aborts the pipe, which cancels the upstream;
    - the client leaves: the response body is cancelled, which rejects our writer's
      `closed`, or request.signal aborts; either one aborts the pipe.
    Proxies are destroyed on the first ending, on the next turn of the loop; a sink call that
    comes later (the pipe has not settled) throws into the pipe, which then cancels upstream.
    """

    def __init__(
        self,
        upstream: js.ReadableStream,
        relay: Relay,
        client_signal: Any,
        ctx: Any = None,
        on_end: Callable[[bool], None] | None = None,
        out: Callable[[bytes], None] | None = None,
    ) -> None:
        """out: where the relay's bytes go instead of a body of its own (a durable
        conversation stores and broadcasts them); then `stream` is None and only stop() or
        the upstream's end ends it."""
        self._relay = relay
        # Called once, when everything is released, with whether the client went away.
        self._on_end = on_end
        self._gone = False
        self._ended = False
        self._timer: Any = None
        # Measured on workerd: when a client leaves, the request's context may be torn down
        # before the news reaches us, and then no callback of ours ever runs again. A
        # waitUntil() keeps the context alive until the relay has released everything; with
        # it, the writer's `closed` still rejects for every client that leaves.
        self._done = js.Promise.withResolvers()
        if ctx is not None:
            ctx.waitUntil(self._done.promise)
        self._signal = client_signal if client_signal else None
        self.stream: Any = None
        self._writer: Any = None
        self._left: Any = None  # aborted when the writer's `closed` rejects: the client left
        if out is None:
            pair = js.IdentityTransformStream.new()
            self.stream = pair.readable
            self._writer = pair.writable.getWriter()
            write = _void_caller(js.Reflect.get(self._writer, "write"), self._writer)
            out = lambda data: write(to_js(data))  # noqa: E731
        self._out = out
        self._stop = js.AbortController.new()
        self._on_chunk = create_proxy(self._chunk)
        self._on_close = create_proxy(self._upstream_closed)
        self._on_abort = create_proxy(self._upstream_failed)
        self._on_gone = create_proxy(self._client_gone)
        self._tick = create_proxy(self.tick)
        self._proxies = [self._on_chunk, self._on_close, self._on_abort, self._on_gone, self._tick]
        _COUNTS["created"] += len(self._proxies)
        _COUNTS["relays"] += 1
        _LIVE.add(self)
        if first := relay.start():
            self._out(first)
        sink = js.WritableStream.new(
            js_object({"write": self._on_chunk, "close": self._on_close, "abort": self._on_abort})
        )
        # Its outcome is what the sink's close/abort say; its promise stays in JS. (Handed to
        # Python, a promise that never settles, as a pipe whose source ignores a cancel may
        # not, would keep its Pyodide future and the request's context alive for good.)
        # The client leaving cancels the body, which rejects the writer's `closed`: measured
        # on workerd with 1-25 streams at once, it did for every client that left, where
        # request.signal aborted for 2-20% of them and a TransformStream's cancel() hardly
        # ever ran (bench/GLUE-NOTES.md; writer.desiredSize never turned null). No Python
        # callable on `closed`: a client that leaves right after the last event can leave
        # `closed` unsettled for good, and what Pyodide hands the promise would then keep this
        # pipe alive (bench/notes/2026-11-24-soak.md). The rejection aborts a JS controller
        # instead, whose listener is our proxy, removed and destroyed when the pipe ends.
        if self._writer is not None:
            self._left = js.AbortController.new()
            self._left.signal.addEventListener("abort", self._on_gone)
            abort = js_bind(js.Reflect.get(js.AbortController.prototype, "abort"), self._left)
            catch = js.Reflect.get(js.Promise.prototype, "catch")
            _void_caller(catch, self._writer.closed)(abort)
        pipe_to = js.Reflect.get(upstream, "pipeTo")
        _void_caller(pipe_to, upstream, sink, js_object({"signal": self._stop.signal}))(None)
        if self._signal is not None:
            if self._signal.aborted:
                self._client_gone()
                return
            self._signal.addEventListener("abort", self._on_gone)
        self._schedule()

    async def to_end(self) -> None:
        """For a body nobody reads (an answer the client wants whole, collected by the relay's
        encoder): wait until the relay has ended and released everything, then cancel the
        unread body, so the writer's `closed` settles and nothing waits on it."""
        await self._done.promise
        _void_caller(js.Reflect.get(self.stream, "cancel"), self.stream)(None)

    def _chunk(self, chunk: Any, _controller: Any = None) -> None:
        if self._ended:
            return
        try:
            out = self._relay.feed(_bytes_of(chunk))
        except Exception as exc:
            out = self._relay.crash(exc)
        self._send(out)

    def _upstream_closed(self, *_: Any) -> None:
        """The sink's close(): the upstream ended."""
        self._last_words(None)

    def _upstream_failed(self, reason: Any = None, *_: Any) -> None:
        """The sink's abort(reason): the upstream failed (or our own stop aborted the pipe:
        then the relay is already closed and there is nothing to add)."""
        self._last_words(reason if reason is not None else "the upstream stream was aborted")

    def _last_words(self, failure: Any) -> None:
        if self._ended or self._relay.closed:
            return
        try:
            out = self._relay.end() if failure is None else self._relay.fail(failure)
        except Exception as exc:
            out = self._relay.crash(exc)
        if out:
            self._out(out)
        self._close_writer()
        self._end()

    def tick(self) -> None:
        self._timer = None
        if self._relay.closed or self._ended:
            return
        try:
            out = self._relay.tick(time.monotonic())
        except Exception as exc:
            out = self._relay.crash(exc)
        self._send(out)
        if not self._relay.closed:
            self._schedule()

    def _send(self, out: bytes) -> None:
        if out:
            self._out(out)
        if self._relay.closed:
            # The answer is whole (or has failed): close the body after what was written, and
            # stop the pipe, which cancels what is left upstream.
            self._close_writer()
            self._stop.abort()
            self._end()

    def _schedule(self) -> None:
        delay_ms = max(self._relay.next_deadline() - time.monotonic(), 0) * 1000
        self._timer = js.setTimeout(self._tick, delay_ms)

    def _close_writer(self) -> None:
        if self._writer is not None:
            _void_caller(js.Reflect.get(self._writer, "close"), self._writer)(None)

    def stop(self) -> None:
        """Stop the answer on purpose: the relay says so (stop_reason "cancelled") and the
        upstream read is cancelled."""
        if self._ended:
            return
        try:
            out = self._relay.cancel()
        except Exception as exc:
            out = self._relay.crash(exc)
        self._send(out)

    def _client_gone(self, _event: Any = None) -> None:
        if self._ended:
            return
        log.info("client went away; upstream cancelled")
        _COUNTS["clients_gone"] += 1
        self._gone = True
        self._relay.closed = True
        self._stop.abort()
        if self._writer is not None:
            _void_caller(js.Reflect.get(self._writer, "abort"), self._writer)(None)
        self._end()

    def _end(self) -> None:
        if self._ended:
            return
        self._ended = True
        if self._timer is not None:
            js.clearTimeout(self._timer)
            self._timer = None
        if self._signal is not None:
            self._signal.removeEventListener("abort", self._on_gone)
        if self._left is not None:
            self._left.signal.removeEventListener("abort", self._on_gone)
        # Not from inside a proxy's own call: destroy on the next turn of the loop.
        asyncio.get_event_loop().call_soon(self._release)

    def _release(self) -> None:
        _destroy(self, self._proxies)
        self._proxies = []
        _COUNTS["relays_ended"] += 1
        try:
            if self._on_end is not None:
                self._on_end(self._gone)
        finally:
            self._done.resolve()
