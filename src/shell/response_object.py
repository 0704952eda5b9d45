"""The Durable Object of one stored response (/v1/responses with store: true), named by the
response's id: the JS wiring of response_record.py (its SQLite storage, its alarm).

The Worker writes the record once, when the answer has ended (bindings.DurableResponses.save),
and reads it for GET, input_items, previous_response_id and item_reference, and as a link of
the chain a later response continues (`link`, which may push its expiry: response_record.py). The owner
(owners.request_owner: the API key's id, else the X-Owner-Token's HMAC, else "") comes in a
header and is checked here: another owner reads a 404, as for an id never stored. Expiry: an alarm at the expiry time deletes
everything, and a read after the expiry time finds nothing even before the alarm has run.
"""

from __future__ import annotations

import logging
import time
import traceback
from typing import Any
from urllib.parse import urlsplit

from workers import DurableObject, Response

from doors.responses.response_record import ResponseRecord
from shell.bindings import DELETED_TOO_HEADER, EXPIRES_HEADER, OWNER_HEADER
from shell.js_glue import DurableSql, js_headers
from surface.request_log import redacted
from surface.web import JSON_HEADERS

log = logging.getLogger("stored_response")


class StoredResponse(DurableObject):  # type: ignore[misc]  # the SDK has no stubs
    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self._record = ResponseRecord(DurableSql(ctx.storage))

    async def _forget(self) -> None:
        await self.ctx.storage.deleteAlarm()
        await self.ctx.storage.deleteAll()
        self._record.reset()

    async def on_fetch(self, request: Any) -> Response:
        raw = request.js_object
        op = urlsplit(str(raw.url)).path.strip("/")
        owner = str(raw.headers.get(OWNER_HEADER) or "")
        now = time.time()
        try:
            if self._record.expired(now):
                await self._forget()
            if op == "put":
                expires_at = float(str(raw.headers.get(EXPIRES_HEADER)))
                self._record.save(str(await raw.text()), owner=owner, expires_at=expires_at)
                await self.ctx.storage.setAlarm(int(expires_at * 1000))
                return Response(None, status=204)
            if op in ("get", "link"):
                deleted_too = op == "link" and bool(raw.headers.get(DELETED_TOO_HEADER))
                text = self._record.load(owner=owner, now=now, deleted_too=deleted_too)
                if text is None:
                    return Response(None, status=404)
                keep = raw.headers.get(EXPIRES_HEADER)
                moved = self._record.keep_until(float(str(keep))) if op == "link" and keep else None
                if moved is not None:
                    await self.ctx.storage.setAlarm(int(moved * 1000))
                return Response(text, status=200, headers=js_headers(JSON_HEADERS))
            if op == "delete":
                if not self._record.owned(owner=owner, now=now) or self._record.deleted():
                    return Response(None, status=404)
                if self._record.delete():
                    await self._forget()
                return Response(None, status=204)
            return Response(None, status=404)
        except Exception:
            # No id in the line: the object does not know its own (and it is a capability).
            log.error("stored response: %s failed: %s", op, redacted(traceback.format_exc()))
            return Response(None, status=500)

    async def on_alarm(self, *_: Any) -> None:
        if self._record.expired(time.time()):
            await self._forget()
