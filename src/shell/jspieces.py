"""A Pieces body (surface.web) as a JS ReadableStream that pulls: Python makes the next piece
only when the stream asks for one (its queue is empty), so an answer of tens of megabytes is
never whole in Python or in JS at once. Its two proxies are destroyed once, when the pieces
run out, fail, or the client cancels the body; a pull that comes later finds nothing to do.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import js
from pyodide.ffi import create_proxy, to_js

from shell.js_glue import js_object
from surface import census

log = logging.getLogger("jspieces")


class PiecesStream:
    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks: Iterator[bytes] | None = chunks
        self._pull = create_proxy(self.pull)
        self._cancel = create_proxy(self.cancel)
        self._proxies = [self._pull, self._cancel]
        census.pipe_made(self, len(self._proxies))
        self.stream = js.ReadableStream.new(
            js_object({"pull": self._pull, "cancel": self._cancel}),
            js_object({"highWaterMark": 1}),  # one piece made ahead of the reader, no more
        )

    def pull(self, controller: Any) -> None:
        if self._chunks is None:
            return
        try:
            chunk = next(self._chunks, None)
        except Exception:
            # Its maker checked what can fail; a failure here is a bug: the client sees the
            # body end early (the status is sent) rather than a closed, truncated JSON.
            log.exception("a piece of the answer failed")
            controller.error(js.Error.new("The answer could not be completed."))
            self._end()
            return
        if chunk is None:
            controller.close()
            self._end()
        else:
            controller.enqueue(to_js(chunk))

    def cancel(self, _reason: Any = None) -> None:
        """The client went away: the rest is never made."""
        self._end()

    def _end(self) -> None:
        if self._chunks is None:
            return
        self._chunks = None  # the pieces still to make, and what they hold, go now
        # Not from inside a proxy's own call: destroy on the next turn of the loop.
        asyncio.get_event_loop().call_soon(self._release)

    def _release(self) -> None:
        for proxy in self._proxies:
            proxy.destroy()
        census.proxies_destroyed(self, len(self._proxies))
        census.pipe_ended()
        self._proxies = []
