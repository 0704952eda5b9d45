"""A request body from JS: read against a deadline, and drained before an early answer.

Three things the runtime does not do for us, each measured on workerd
(bench/notes/2026-11-24-request-body.md):
- a body has no deadline of its own: a client sending a byte now and then holds its request
  (and the isolate's memory for it) as long as it likes. The reads here stop at the deadline,
  and the core answers 408.
- an answer given before the body is read (415, 413 by Content-Length, 401, 429, ...) is
  followed by a reset of the connection once the client has sent more than the runtime will
  discard for it; a client that writes its whole body before it reads (Python's urllib) then
  never sees the answer. drain() reads and drops the rest, bounded by bytes and the deadline.
- a read that fails because the body's framing is broken (a bad chunk, an unusable
  Content-Length) looks like one whose client left; only the error's message tells them apart.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import js
from pyodide.ffi import JsException

from base.errors import ApiError, ClientGone, body_timeout, malformed_body
from shell.js_glue import js_bind, js_object

log = logging.getLogger("jsbody")

# A body is read at least this much at a time: the byte limit is still checked every few KiB
# as the body arrives, and a sender's chunking (65,000 one-byte chunks cost ~6 s of CPU with
# one read per chunk, measured on workerd) no longer decides how often Python is called.
BODY_READ_BYTES = 8192
# What drain() reads and drops at most, whatever MAX_BODY_BYTES is: past it (or when the
# Content-Length says there is more) the connection is left to the runtime, which resets it,
# so nobody makes the Worker read forever.
DRAIN_MAX_BYTES = 16 * 1024 * 1024
# Each resumption of Python from a JS promise costs CPU: the rest is read in big pieces.
DRAIN_READ_BYTES = 1024 * 1024
# A declared length up to this is read in one readAtLeast(); any other body piece by piece.
WHOLE_MAX_BYTES = DRAIN_MAX_BYTES
# A Content-Length past this is no length at all (the core refuses shorter ones over its
# limit, 413): workerd's own reads refuse it too ("Memory limit would be exceeded before EOF").
DECLARED_MAX = 2**63 - 1

_UPLOAD_GONE = "The client closed the connection during the upload."
# workerd's message when the peer closed the connection (entirely, or only its sending half):
# every other failure of a body read is a framing the runtime refused.
_DISCONNECTED = "Network connection lost"


def _declared_length(request: Any) -> int | None:
    declared = request.headers.get("content-length")
    if not (isinstance(declared, str) and declared.isascii() and declared.strip().isdigit()):
        return None
    digits = declared.strip().lstrip("0") or "0"
    # int() refuses thousands of digits: any length past DECLARED_MAX is just "too long".
    return int(digits) if len(digits) <= len(str(DECLARED_MAX)) else DECLARED_MAX + 1


class RequestBody:
    """One request's body: chunks() is what the core reads (WebRequest.body); drain() reads
    and drops what it left, before the answer goes out. Every read stops at the deadline: an
    AbortSignal.timeout cancels the reader, so the wait is in JS (an asyncio timer outlived
    cancelled requests and kept their objects, measured on workerd)."""

    __slots__ = (
        "_cancel",
        "_deadline",
        "_declared",
        "_finished",
        "_reader",
        "_received",
        "_request",
        "_timeout",
        "_timer",
    )

    def __init__(self, request: js.Request, *, timeout: float, started: float) -> None:
        self._request = request
        self._timeout = timeout
        self._deadline = started + timeout
        self._declared = _declared_length(request)
        self._received = 0
        self._reader: Any = None
        self._timer: Any = None
        self._cancel: Any = None
        self._finished = not request.body or self._declared == 0

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as chunks, for the core to count against its limit as they arrive. No
        `finally` here: a core that stops reading (413) leaves the rest to drain()."""
        declared = self._declared
        if declared is not None and declared > DECLARED_MAX:
            self._finish()  # nothing to drain either: that length never ends
            raise malformed_body()
        if declared is not None and declared <= WHOLE_MAX_BYTES:
            # One read for the whole body: it returns once the declared length has arrived
            # (workerd ends a body at its Content-Length). Safe: the core refuses a declared
            # length over its limit before it iterates.
            if not self._finished:
                value = await self._read(declared, js.Uint8Array.new(declared))
                self._finish()
                if value:
                    yield value.to_bytes()
            return
        while not self._finished:
            value = await self._read(BODY_READ_BYTES, js.Uint8Array.new(BODY_READ_BYTES * 8))
            if value:
                yield value.to_bytes()

    async def drain(self) -> None:
        """Read and drop the rest of the body, at most DRAIN_MAX_BYTES and until the deadline;
        whatever ends it (either bound, the client leaving, a broken framing), the answer
        already decided stands."""
        declared = self._declared
        if self._finished:
            return  # read to its end (nearly every request): no buffer to make
        if declared is not None and declared - self._received > DRAIN_MAX_BYTES:
            # More than would be read: a client that sends all first is reset either way, and
            # one that reads as it sends learns at once.
            return
        buffer = js.Uint8Array.new(DRAIN_READ_BYTES)
        drained = 0
        try:
            while not self._finished and drained < DRAIN_MAX_BYTES:
                want = (
                    DRAIN_READ_BYTES
                    if declared is None
                    else min(DRAIN_READ_BYTES, declared - self._received)
                )
                if want <= 0:
                    self._finish()
                    break
                value = await self._read(want, buffer)
                if value is None:
                    break
                drained += int(value.byteLength)
                if declared is not None and self._received >= declared:
                    self._finish()  # workerd ends a body at its Content-Length: no read for the end
                buffer = js.Uint8Array.new(value.buffer)
        except ApiError:
            return

    async def _read(self, at_least: int, view: Any) -> Any:
        """A view of what arrived (None or empty at the end); raises ApiError for the deadline
        (408), a framing the runtime refused (400) or a client that left (499, quiet)."""
        reader = self._open()
        try:
            result = await reader.readAtLeast(at_least, view)
        except JsException as exc:
            self._finish()
            if self._timed_out():
                raise body_timeout(self._timeout) from exc
            raise self._failure(exc) from exc
        if self._timed_out():
            self._finish()
            raise body_timeout(self._timeout)
        if result.done:
            self._finish()
        value = result.value  # undefined (None) or a zero-length view at the end
        if value and value.byteLength:
            self._received += int(value.byteLength)
            return value
        return None

    def _open(self) -> Any:
        if self._reader is None:
            self._reader = self._request.body.getReader(js_object({"mode": "byob"}))
            left_ms = max(1, int((self._deadline - time.monotonic()) * 1000))
            self._timer = js.AbortSignal.timeout(left_ms)
            self._cancel = js_bind(js.Reflect.get(self._reader, "cancel"), self._reader)
            self._timer.addEventListener("abort", self._cancel)
        return self._reader

    def _timed_out(self) -> bool:
        return self._timer is not None and bool(self._timer.aborted)

    def _finish(self) -> None:
        self._finished = True
        if self._timer is not None and self._cancel is not None:
            self._timer.removeEventListener("abort", self._cancel)
            self._cancel = None

    def _failure(self, exc: JsException) -> ApiError:
        text = str(exc)
        if _DISCONNECTED in text or bool(self._request.signal.aborted):
            return ClientGone(_UPLOAD_GONE)
        log.warning("request body unreadable: %s", text[:200])
        return malformed_body()
