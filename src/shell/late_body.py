"""A whole answer that is late: its deadline (a JS timer, not asyncio's) and, past it, a
body that is whitespace until the answer comes (surface/early_head.py says why).

Measured on workerd: an asyncio timer outlives a request whose client left and keeps its
objects; the timers here are JS ones, cleared when the wait ends, and their proxies destroyed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import js
from pyodide.ffi import create_proxy, to_js

from shell.js_glue import void_caller
from surface.early_head import SPACE


class HeadTimer:
    """The early head's deadline, armed when the model starts answering whole (arm(), the
    model's on_whole hook): once `at()` (time.monotonic(); None: never) has come with the answer
    still being made, `due(late)` sends the head and says whether it did; `late` then gets the
    answer, or its failure, from settle(). A JS timer (see the module), cleared and its proxy
    destroyed by settle(). A streamed answer never arms it: no timer, no task, no wait."""

    def __init__(
        self, at: Callable[[], float | None], due: Callable[[asyncio.Future[Any]], bool]
    ) -> None:
        self._at = at
        self._due = due
        self._timer: Any = None
        self._proxy: Any = None
        self._late: asyncio.Future[Any] | None = None

    def arm(self) -> None:
        at = None if self._proxy is not None else self._at()
        if at is None:
            return
        self._proxy = create_proxy(self._fire)
        left = max(at - time.monotonic(), 0.0)
        self._timer = js.setTimeout(self._proxy, left * 1000)

    def _fire(self, *_: Any) -> None:
        self._timer = None
        late: asyncio.Future[Any] = asyncio.get_event_loop().create_future()
        if self._due(late):
            self._late = late

    def settle(self, response: Any = None, error: BaseException | None = None) -> bool:
        """The answer is made (or failed): whether its head went out already, and so the
        late body has it now."""
        if self._timer is not None:
            js.clearTimeout(self._timer)
            self._timer = None
        if self._proxy is not None:
            asyncio.get_event_loop().call_soon(self._proxy.destroy)
            self._proxy = None
        late, self._late = self._late, None
        if late is None:
            return False
        if error is not None:
            late.set_exception(error)
        else:
            late.set_result(response)
        return True


class LateBody:
    """The readable `stream` of a response whose head is out: a space now and every `every`
    seconds, then what `finish(task)` returns once the task has ended, then the end. The request's
    context is kept (waitUntil) until then, since the handler goes on after fetch() returned."""

    def __init__(
        self,
        task: asyncio.Future[Any],
        ctx: Any,
        every: float,
        finish: Callable[[asyncio.Future[Any]], bytes],
    ) -> None:
        pair = js.IdentityTransformStream.new()
        self.stream = pair.readable
        self._writer = pair.writable.getWriter()
        self._write = void_caller(js.Reflect.get(self._writer, "write"), self._writer)
        self._done = js.Promise.withResolvers()
        if ctx is not None:
            ctx.waitUntil(self._done.promise)
        self._finish = finish
        self._beat = create_proxy(self._space)
        self._write(to_js(SPACE))
        self._timer = js.setInterval(self._beat, max(every, 0.01) * 1000)
        task.add_done_callback(self._ended)

    def _space(self, *_: Any) -> None:
        self._write(to_js(SPACE))

    def _ended(self, task: asyncio.Future[Any]) -> None:
        js.clearInterval(self._timer)
        try:
            self._write(to_js(self._finish(task)))
        finally:
            void_caller(js.Reflect.get(self._writer, "close"), self._writer)(None)
            asyncio.get_event_loop().call_soon(self._release)

    def _release(self) -> None:
        self._beat.destroy()
        self._done.resolve()
