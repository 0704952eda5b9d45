"""JavaScript ReadableStream <-> Python bytes, and nothing else.

Every proxy made here is destroyed exactly once, whichever way the stream ends: the
response finishes, the client cancels the body, or the request signal aborts.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

import js
from pyodide.ffi import create_proxy, to_js

log = logging.getLogger("jsstream")

_NOOP = js.Function.new("")  # a JS function, so ignoring a promise costs no proxy

# Alive while their proxies are: a leaked proxy keeps its owner here (see live_streams()).
_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()
_COUNTS = {"created": 0, "destroyed": 0}


def live_streams() -> dict[str, int]:
    return {"live": len(_LIVE), **_COUNTS}


def _bytes_of(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode()
    return value.to_bytes()


class JsByteSource:
    """Reads a JS ReadableStream; after cancel() no read reaches the stream again."""

    __slots__ = ("_reader", "_stopped")

    def __init__(self, stream: "js.ReadableStream") -> None:
        self._reader = stream.getReader()
        self._stopped = False

    async def read(self) -> bytes | None:
        if self._stopped:
            return None
        result = await self._reader.read()
        if result.done or self._stopped:
            self._stopped = True
            return None
        return _bytes_of(result.value)

    def cancel(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._reader.cancel().catch(_NOOP)


async def iter_stream(stream: "js.ReadableStream | None") -> AsyncIterator[bytes]:
    if stream is None or not stream:
        return
    source = JsByteSource(stream)
    try:
        while (chunk := await source.read()) is not None:
            yield chunk
    finally:
        source.cancel()


class AbortWatch:
    """Runs callbacks when the request's signal aborts (the client went away).

    One listener per request, added only once something needs it, removed by release().
    """

    def __init__(self, signal: "js.AbortSignal | None") -> None:
        self._signal = signal if signal else None
        self._callbacks: list[Callable[[], None]] = []
        self._proxy: Any = None
        self._released = False

    def add(self, callback: Callable[[], None]) -> None:
        if self._signal is None or self._released:
            return
        if self._signal.aborted:
            callback()
            return
        self._callbacks.append(callback)
        if self._proxy is None:
            self._proxy = create_proxy(self._fire)
            _COUNTS["created"] += 1
            _LIVE.add(self)
            self._signal.addEventListener("abort", self._proxy)

    def _fire(self, _event: Any = None) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def release(self) -> None:
        self._released = True
        self._callbacks = []
        if self._proxy is not None:
            assert self._signal is not None
            self._signal.removeEventListener("abort", self._proxy)
            self._proxy.destroy()
            self._proxy = None
            _COUNTS["destroyed"] += 1
            _LIVE.discard(self)


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
        for proxy in self._proxies:
            proxy.destroy()
        _COUNTS["destroyed"] += len(self._proxies)
        self._proxies = []
        _LIVE.discard(self)
