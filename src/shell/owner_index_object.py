"""The Durable Object of one owner's index of conversations: its SQLite storage under
owners.OwnerIndex, which holds every statement (tested on the host); and the bytes of the
owner's stored responses, under response_quota.ResponseQuota."""

from __future__ import annotations

import json
import logging
import traceback
from typing import Any
from urllib.parse import urlsplit

from workers import DurableObject, Response

from base.errors import ApiError
from doors.responses.response_quota import OPS as QUOTA_OPS
from doors.responses.response_quota import ResponseQuota
from shell.js_glue import DurableSql, js_headers
from surface.owners import OwnerIndex
from surface.request_log import redacted
from surface.web import JSON_HEADERS

log = logging.getLogger("owner_index")


class ConversationIndex(DurableObject):  # type: ignore[misc]  # the SDK has no stubs
    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self._index = OwnerIndex(DurableSql(ctx.storage))
        self._quota = ResponseQuota(DurableSql(ctx.storage))

    async def on_fetch(self, request: Any) -> Response:
        raw = request.js_object
        op = urlsplit(str(raw.url)).path.strip("/")
        try:
            payload = json.loads(str(await raw.text()))
            handler = self._quota if op in QUOTA_OPS else self._index
            answer, status = handler.handle(op, payload), 200
        except ApiError as error:
            answer, status = {"error": error.code, "message": error.message}, error.status
        except Exception:
            # No owner and no id in the line: a trace names neither, and runs of hex are cut.
            log.error("owner index: %s failed: %s", op, redacted(traceback.format_exc()))
            answer, status = {"error": "internal_error", "message": "The index failed."}, 500
        return Response(
            json.dumps(answer, ensure_ascii=False),
            status=status,
            headers=js_headers(JSON_HEADERS),
        )
