"""A whole answer that is late: the wait for it (a JS timer, not asyncio's) and, past it, a
body that is whitespace until the answer comes (surface/early_head.py says why).

Measured on workerd: an asyncio timer outlives a request whose client left and keeps its
objects; the timers here are JS ones, cleared when the wait ends, and their proxies destroyed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import js
from pyodide.ffi import create_proxy, to_js

from shell.js_glue import void_caller
from surface.early_head import SPACE


async def ended_or_whole(task: asyncio.Future[Any], model: Any) -> bool:
    """Wait until `task` ends or `model` starts answering whole (its `on_whole` hook); whether
    the task ended. No timer: a streamed answer ends the wait as soon as its response is made."""
    if task.done() or model.answers_whole:
        return task.done()
    woke: asyncio.Future[None] = asyncio.get_event_loop().create_future()

    def wake(*_: Any) -> None:
        if not woke.done():
            woke.set_result(None)

    task.add_done_callback(wake)
    model.on_whole = wake
    try:
        await woke
    finally:
        model.on_whole = None
        task.remove_done_callback(wake)
    return task.done()


async def within(task: asyncio.Future[Any], seconds: float) -> bool:
    """Whether `task` ended within `seconds`."""
    if task.done():
        return True
    woke: asyncio.Future[None] = asyncio.get_event_loop().create_future()

    def wake(*_: Any) -> None:
        if not woke.done():
            woke.set_result(None)

    proxy = create_proxy(wake)
    timer = js.setTimeout(proxy, max(seconds, 0.0) * 1000)
    task.add_done_callback(wake)
    try:
        await woke
    finally:
        js.clearTimeout(timer)
        task.remove_done_callback(wake)
        asyncio.get_event_loop().call_soon(proxy.destroy)
    return task.done()


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
