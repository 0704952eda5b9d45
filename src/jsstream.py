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
from collections.abc import AsyncIterator, Callable
from typing import Any

import js
from pyodide.ffi import JsException, create_once_callable, create_proxy, to_js

from errors import ClientGone
from relay import Relay

log = logging.getLogger("jsstream")

# Alive while their proxies are: a leaked proxy keeps its owner here (see live_streams()).
_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()
_COUNTS = {"created": 0, "destroyed": 0, "relays": 0, "relays_ended": 0, "clients_gone": 0}

# Events the relay may queue for a client that reads slowly. Measured on workerd: a client
# that leaves after the upstream has ended gets no abort, no cancel and no timer in the
# Worker, so a pipe stalled on backpressure would never end. Reading ahead lets every
# answer reach its end (it is bounded by max_tokens); while the upstream is still open,
# request.signal does fire, and stops it at once.
READ_AHEAD_EVENTS = 16384


def live_streams() -> dict[str, Any]:
    gc.collect()
    objects = gc.get_objects()
    # The commonest types, so that a growing count says what grows (local stats route only).
    kinds: dict[str, int] = {}
    for obj in objects:
        name = type(obj).__qualname__
        kinds[name] = kinds.get(name, 0) + 1
    top = dict(sorted(kinds.items(), key=lambda kv: -kv[1])[:40])
    return {"live": len(_LIVE), **_COUNTS, "py_objects": len(objects), "py_types": top}


def js_object(value: dict[str, Any]) -> Any:
    """A plain JS object (not a Map, not a PyProxy): what JS APIs and bindings expect."""
    return to_js(value, dict_converter=js.Object.fromEntries)


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
    RelayPipe; read() serves only drive(), for a model that streams although asked for a whole
    answer. After cancel() no read reaches the stream again."""

    __slots__ = ("stream", "_reader", "_stopped")

    def __init__(self, stream: "js.ReadableStream") -> None:
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


# A body is read at least this much at a time: the byte limit is still checked every few KiB
# as the body arrives, and a sender's chunking (65,000 one-byte chunks cost ~6 s of CPU with
# one read per chunk, measured on workerd) no longer decides how often Python is called.
BODY_READ_BYTES = 8192
_UPLOAD_GONE = "The client closed the connection during the upload."


async def iter_body(request: "js.Request") -> AsyncIterator[bytes]:
    """A request body as chunks, for the core to count against its limit as they arrive.

    workerd's BYOB reader has readAtLeast(n, view): one read returns once n bytes (or the end)
    have arrived. A read that fails means the client went away mid-upload: a quiet end
    (client_gone, which nobody receives), not a server error with a traceback."""
    body = request.body
    if body is None or not body:
        return
    declared = request.headers.get("content-length")
    if isinstance(declared, str) and declared.isascii() and declared.strip().isdigit():
        # Measured on workerd: every resumption of Python from a JS promise costs ~0.1-0.2 ms
        # of CPU; one arrayBuffer() is one. Safe without a limit here: the core refuses a
        # declared length over its limit before it iterates, and workerd ends a body at its
        # Content-Length.
        try:
            data = await request.arrayBuffer()
        except JsException as exc:
            raise ClientGone(_UPLOAD_GONE) from exc
        if data.byteLength:
            yield data.to_bytes()
        return
    reader = body.getReader(js_object({"mode": "byob"}))
    try:
        while True:
            try:
                result = await reader.readAtLeast(BODY_READ_BYTES, js.Uint8Array.new(BODY_READ_BYTES * 8))
            except JsException as exc:
                raise ClientGone(_UPLOAD_GONE) from exc
            value = result.value  # undefined (None) or a zero-length view at the end
            if value and value.byteLength:
                yield value.to_bytes()
            if result.done:
                break
    finally:
        _ignore(reader.cancel())


class RelayPipe:
    """upstream.pipeTo(TransformStream) with the relay as the transformer.

    JavaScript does the pumping; Python is called once per upstream chunk, synchronously,
    and once per ping interval by one timer. It is wired step by step from Python (a few JS
    calls per answer), because workerd makes no code from strings.

    Ways it ends, and what stops the upstream read in each:
    - the relay closes the answer (complete, failed, timed out): terminate() our side, which
      errors the pipe's destination, so the pipe cancels what is left upstream;
    - the client cancels the response body: the transform's readable is cancelled, same;
    - the request signal aborts (client gone): our own listener terminates the transform
      and aborts the pipe's signal. It does not wait for pipeTo to settle: on workerd a pipe
      whose source never answers a cancel may never settle, and the proxies must not wait
      for it.
    Callbacks that run once are once-callables, which destroy themselves; the rest are
    proxies, destroyed on the first ending.
    """

    def __init__(
        self,
        upstream: "js.ReadableStream",
        relay: Relay,
        client_signal: Any,
        ctx: Any = None,
        on_end: Callable[[bool], None] | None = None,
    ) -> None:
        self._relay = relay
        # Called once, when everything is released, with whether the client went away.
        self._on_end = on_end
        self._gone = False
        # Measured on workerd: when a client leaves, the request's context may be torn down
        # before the abort reaches us, and then no callback of ours ever runs again. A
        # waitUntil() keeps the context alive until the relay has released everything.
        # The price, measured with many streams at once (bench/RESULTS.md, "Cancels while other
        # streams run"): the context then outlives the client, and most disconnects under load
        # reach neither request.signal nor the transformer's cancel(), so the upstream is read
        # to its end (bounded by max_tokens). Without waitUntil every upstream closes at once,
        # but nothing here is released. Open: see issue 14's note.
        self._done = js.Promise.withResolvers()
        if ctx is not None:
            ctx.waitUntil(self._done.promise)
        self._signal = client_signal if client_signal else None
        self._controller: Any = None
        self._enqueue: Any = None
        self._timer: Any = None
        self._released = False
        self._stop = js.AbortController.new()
        self._on_data = create_proxy(self._data)
        self._tick = create_proxy(self.tick)
        self._on_abort = create_proxy(self._client_gone)
        self._settled = create_once_callable(self.settled)
        self._settled_ran = False
        self._proxies = [self._on_data, self._tick, self._on_abort]
        _COUNTS["created"] += len(self._proxies) + 1
        _COUNTS["relays"] += 1
        _LIVE.add(self)
        transform = js.TransformStream.new(
            js_object({"start": create_once_callable(self.start), "transform": self._on_data, "flush": self._on_data, "cancel": self._on_abort}),
            js_object({"highWaterMark": 1}),
            js_object({"highWaterMark": READ_AHEAD_EVENTS}),
        )
        self.stream = transform.readable
        if self._signal is not None:
            if self._signal.aborted:
                self._stop.abort()
            else:
                self._signal.addEventListener("abort", self._on_abort)
        options = js_object({"signal": self._stop.signal, "preventAbort": True})
        _ignore(upstream.pipeTo(transform.writable, options).then(self._settled, self._settled))
        self._schedule()

    def _data(self, first: Any, second: Any = None) -> None:
        # One proxy for both: TransformStream calls transform(chunk, controller) and flush(controller).
        if second is None:
            self.flush(first)
        else:
            self.transform(first, second)

    def start(self, controller: Any) -> None:
        self._controller = controller
        # Looked up once: an attribute of a JS object costs a crossing (~5 us a chunk).
        self._enqueue = controller.enqueue
        if first := self._relay.start():
            self._enqueue(to_js(first))

    def transform(self, chunk: Any, _controller: Any) -> None:
        try:
            out = self._relay.feed(_bytes_of(chunk))
        except Exception as exc:
            out = self._relay.crash(exc)
        self._send(out)

    def flush(self, _controller: Any) -> None:
        try:
            out = self._relay.end()
        except Exception as exc:
            out = self._relay.crash(exc)
        if out:
            self._enqueue(to_js(out))
        self._end()

    def tick(self) -> None:
        self._timer = None
        if self._relay.closed:
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
            self._enqueue(to_js(out))
        if self._relay.closed:
            self._finish()

    def _schedule(self) -> None:
        delay_ms = max(self._relay.next_deadline() - time.monotonic(), 0) * 1000
        self._timer = js.setTimeout(self._tick, delay_ms)

    def _finish(self) -> None:
        # The answer is whole (or has failed): closing our side errors the pipe's
        # destination, so the pipe stops reading and cancels what is left upstream.
        try:
            self._controller.terminate()
        except Exception:
            pass
        self._stop.abort()
        self._end()

    def _client_gone(self, _event: Any = None) -> None:
        log.info("client went away; upstream cancelled")
        _COUNTS["clients_gone"] += 1
        self._gone = True
        self._relay.closed = True
        self._finish()

    def settled(self, reason: Any = None) -> None:
        """The pipe ended: upstream finished or failed, or one of the endings above."""
        self._settled_ran = True  # a once-callable: it destroys itself after this call
        _COUNTS["destroyed"] += 1
        if not self._relay.closed and not self._released:
            # The upstream errored, or the body was cancelled: tell whoever still listens.
            out = self._relay.fail(reason)
            try:
                if out:
                    self._enqueue(to_js(out))
                self._controller.terminate()
            except Exception:
                pass  # the client is gone; nothing to tell
        self._end()

    def _end(self) -> None:
        if self._released:
            return
        self._released = True
        if self._timer is not None:
            js.clearTimeout(self._timer)
            self._timer = None
        if self._signal is not None:
            self._signal.removeEventListener("abort", self._on_abort)
        # Not from inside a proxy's own call: destroy on the next turn of the loop.
        asyncio.get_event_loop().call_soon(self._release)

    def _release(self) -> None:
        if not self._settled_ran:
            # The pipe has not settled yet and may never do: if it does later, calling the
            # destroyed callable throws into a promise whose rejection _ignore() handles.
            self._settled_ran = True
            self._proxies.append(self._settled)
        _destroy(self, self._proxies)
        self._proxies = []
        _COUNTS["relays_ended"] += 1
        try:
            if self._on_end is not None:
                self._on_end(self._gone)
        finally:
            self._done.resolve()
