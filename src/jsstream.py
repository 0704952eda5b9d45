"""JavaScript ReadableStream <-> Python bytes, and nothing else.

Every proxy made here is destroyed exactly once, whichever way the stream ends: the
response finishes, the client cancels the body, or the request signal aborts.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

import js
from pyodide.ffi import create_once_callable, create_proxy, to_js

from relay import Relay

log = logging.getLogger("jsstream")

_NOOP = js.Function.new("")  # a JS function, so ignoring a promise costs no proxy

# Alive while their proxies are: a leaked proxy keeps its owner here (see live_streams()).
_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()
_COUNTS = {"created": 0, "destroyed": 0}


def live_streams() -> dict[str, int]:
    return {"live": len(_LIVE), **_COUNTS}


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
    """Reads a JS ReadableStream; after cancel() no read reaches the stream again.

    The reader is taken on the first read, so a shell may instead hand the untouched
    stream to a JS pipe (see RelayPipe) and never read it from Python at all. Only when
    Python does read it does the client leaving (the watch) cancel it from here.
    """

    __slots__ = ("stream", "_reader", "_stopped", "_watch")

    def __init__(self, stream: "js.ReadableStream", watch: "AbortWatch | None" = None) -> None:
        self.stream = stream
        self._reader: Any = None
        self._stopped = False
        self._watch = watch

    @property
    def untouched(self) -> bool:
        return self._reader is None and not self._stopped

    async def read(self) -> bytes | None:
        if self._stopped:
            return None
        if self._reader is None:
            self._reader = self.stream.getReader()
            if self._watch is not None:
                self._watch.add(self.cancel)
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
            self._reader.cancel().catch(_NOOP)
        elif not self.stream.locked:
            self.stream.cancel().catch(_NOOP)


async def iter_stream(stream: "js.ReadableStream | None") -> AsyncIterator[bytes]:
    if stream is None or not stream:
        return
    source = JsByteSource(stream)
    try:
        while (chunk := await source.read()) is not None:
            yield chunk
    finally:
        source.cancel()


async def iter_body(request: "js.Request") -> AsyncIterator[bytes]:
    """A request body as chunks. With a Content-Length (which the core checks against its
    limit before the first chunk is asked for) it is one arrayBuffer() read: the HTTP layer
    delivers exactly that many bytes, and one await costs far less than a read loop."""
    # A missing header is JS null, which arrives as pyodide.ffi.jsnull (falsy, not None).
    if not request.headers.get("content-length"):
        async for chunk in iter_stream(request.body):
            yield chunk
        return
    buffer = await request.arrayBuffer()
    if buffer.byteLength:
        yield buffer.to_bytes()


class AbortWatch:
    """Runs callbacks when the request's signal aborts (the client went away).

    One listener per request, added only once something needs it, removed by release().
    """

    def __init__(self, signal: "js.AbortSignal | None") -> None:
        self.signal = signal if signal else None
        self._callbacks: list[Callable[[], None]] = []
        self._proxy: Any = None
        self._released = False

    def add(self, callback: Callable[[], None]) -> None:
        if self.signal is None or self._released:
            return
        if self.signal.aborted:
            callback()
            return
        self._callbacks.append(callback)
        if self._proxy is None:
            self._proxy = create_proxy(self._fire)
            _COUNTS["created"] += 1
            _LIVE.add(self)
            self.signal.addEventListener("abort", self._proxy)

    def _fire(self, _event: Any = None) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def release(self) -> None:
        self._released = True
        self._callbacks = []
        if self._proxy is not None:
            assert self.signal is not None
            self.signal.removeEventListener("abort", self._proxy)
            _destroy(self, [self._proxy])
            self._proxy = None


# The pipe's wiring in one JS call. Made step by step from Python, each step is a JS
# crossing: ~170 us more on every answer's time to first byte. The relay stays in Python.
_PIPE = js.Function.new(
    "upstream",
    "start",
    "data",
    "settled",
    "clientSignal",
    "stopSignal",
    """
    const transform = new TransformStream({ start, transform: data, flush: data });
    const signal = clientSignal ? AbortSignal.any([clientSignal, stopSignal]) : stopSignal;
    upstream.pipeTo(transform.writable, { signal, preventAbort: true }).then(settled, settled);
    return transform.readable;
    """,
)


class RelayPipe:
    """upstream.pipeTo(TransformStream) with the relay as the transformer.

    JavaScript does the pumping; Python is called once per upstream chunk, synchronously,
    and once per ping interval by one timer. The pipe stops the upstream by itself when the
    client cancels the body (the transform's readable is cancelled) or the request signal
    aborts (the pipe's signal follows it), and when the relay ends the answer (complete,
    or timed out). Callbacks that run once are once-callables, which destroy themselves
    (~5 us, against ~87 us to make and destroy a proxy in Pyodide: time to first byte);
    the two that run repeatedly are proxies, destroyed when the pipe settles.
    """

    def __init__(self, upstream: "js.ReadableStream", relay: Relay, client_signal: Any) -> None:
        self._relay = relay
        self._client_signal = client_signal
        self._controller: Any = None
        self._enqueue: Any = None
        self._timer: Any = None
        self._stop = js.AbortController.new()
        self._on_data = create_proxy(self._data)
        self._tick = create_proxy(self.tick)
        self._proxies = [self._on_data, self._tick]
        _COUNTS["created"] += len(self._proxies)
        _LIVE.add(self)
        self.stream = _PIPE(
            upstream,
            create_once_callable(self.start),  # TransformStream runs start() at once
            self._on_data,
            create_once_callable(self.settled),
            client_signal,
            self._stop.signal,
        )
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
            self._stop.abort()

    def settled(self, reason: Any = None) -> None:
        """The pipe ended: upstream finished, failed, or the client cancelled."""
        if self._client_signal is not None and self._client_signal.aborted:
            log.info("client went away; upstream cancelled")
        elif not self._relay.closed:
            # The upstream errored (or the body was cancelled): tell whoever still listens.
            out = self._relay.fail(reason)
            try:
                if out:
                    self._enqueue(to_js(out))
                self._controller.terminate()
            except Exception:
                pass  # the client is gone; nothing to tell
        if self._timer is not None:
            js.clearTimeout(self._timer)
            self._timer = None
        # Not from inside a proxy's own call: destroy on the next turn of the loop.
        asyncio.get_event_loop().call_soon(self._release)

    def _release(self) -> None:
        _destroy(self, self._proxies)
        self._proxies = []


class OutgoingStream:
    """A JS ReadableStream pulled from a Python async iterator of bytes."""

    def __init__(
        self,
        chunks: AsyncIterator[bytes],
        on_cancel: Callable[[], None] | None,
        watch: AbortWatch,
    ) -> None:
        self._chunks = chunks
        self._on_cancel = on_cancel
        self._watch = watch
        self._task: asyncio.Future[bytes | None] | None = None
        self._ended = False
        self._pull = create_proxy(self.pull)
        self._cancel = create_proxy(self.cancel)
        self._proxies = [self._pull, self._cancel]
        _COUNTS["created"] += len(self._proxies)
        _LIVE.add(self)
        source = to_js({"pull": self._pull, "cancel": self._cancel}, dict_converter=js.Object.fromEntries)
        self.stream = js.ReadableStream.new(source)
        watch.add(self.cancel)

    async def pull(self, controller: "js.ReadableStreamDefaultController") -> None:
        if self._ended:
            return
        self._task = asyncio.ensure_future(anext(self._chunks, None))
        try:
            chunk = await self._task
        except asyncio.CancelledError:
            return
        except Exception:
            log.exception("response stream failed")
            chunk = None
        finally:
            self._task = None
        if self._ended:
            return
        if chunk is None:
            # Close only in a pull that enqueued nothing: the queue is empty, so the
            # stream is closed at once and cancel() can no longer be called.
            self._ended = True
            controller.close()
            self._release()
        else:
            controller.enqueue(to_js(chunk))

    def cancel(self, reason: Any = None) -> None:
        if self._ended:
            return
        self._ended = True
        if self._on_cancel is not None:
            self._on_cancel()
        if self._task is not None:
            self._task.cancel()
        else:
            asyncio.ensure_future(self._close_chunks())
        # Not from inside the proxy's own call: destroy on the next turn of the loop.
        asyncio.get_running_loop().call_soon(self._release)

    async def _close_chunks(self) -> None:
        aclose = getattr(self._chunks, "aclose", None)
        if aclose is not None:
            await aclose()

    def _release(self) -> None:
        if not self._proxies:
            return
        self._watch.release()
        _destroy(self, self._proxies)
        self._proxies = []
