"""A request body from JS, read against a deadline.

Two things the runtime does not do for us, each measured on workerd:
- a body has no deadline of its own: a client sending a byte now and then holds its request
  (and the isolate's memory for it) as long as it likes. The reads here stop at the deadline,
  and the core answers 408.
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

from errors import ApiError, ClientGone, body_timeout, malformed_body
from jsstream import js_bind, js_object

log = logging.getLogger("jsbody")

# A body is read at least this much at a time: the byte limit is still checked every few KiB
# as the body arrives, and a sender's chunking (65,000 one-byte chunks cost ~6 s of CPU with
# one read per chunk, measured on workerd) no longer decides how often Python is called.
BODY_READ_BYTES = 8192
# A declared length up to this is read in one readAtLeast(); any other body piece by piece.
WHOLE_MAX_BYTES = 16 * 1024 * 1024
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
    """One request's body: chunks() is what the core reads (WebRequest.body). Every read
    stops at the deadline: an
    AbortSignal.timeout cancels the reader, so the wait is in JS (an asyncio timer outlived
    cancelled requests and kept their objects, measured on workerd)."""

    __slots__ = ("_request", "_timeout", "_deadline", "_declared", "_received", "_reader", "_timer", "_cancel", "_finished")

    def __init__(self, request: "js.Request", *, timeout: float, started: float) -> None:
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
        """The body as chunks, for the core to count against its limit as they arrive."""
        declared = self._declared
        if declared is not None and declared > DECLARED_MAX:
            self._finish()
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
