"""What one owner's stored responses may hold, all together (MAX_OWNER_RESPONSE_BYTES): kept in
the owner's own Durable Object (the OWNERS index, surface/owners.py, which passes these
operations here), one row per stored response: its id, the bytes it may take (its own input
and room for its answer) and when it expires. Plain Python over conversation_store's Sql
protocol, tested on the host's sqlite3.

A response is counted when it is asked for, before the model is called, and stops counting
when it expires or its owner deletes it (a deleted response that later ones continue keeps its
items for them until they expire: response_record.py; those are counted in the responses that
continue it, not here).
"""

from __future__ import annotations

import time
from typing import Any

from base.errors import ApiError
from base.sql import Sql
from doors.responses import responses_stored as stored
from doors.responses.expansion import total
from surface.routing import Context

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS stored_responses (id TEXT PRIMARY KEY, bytes INTEGER NOT NULL, expires REAL NOT NULL)",
)
OPS = ("responses_reserve", "responses_release")


class ResponseQuota:
    def __init__(self, sql: Sql) -> None:
        self._sql = sql
        for statement in SCHEMA:
            self._sql.run(statement)

    def used(self, now: float) -> int:
        self._sql.run("DELETE FROM stored_responses WHERE expires <= ?", now)
        rows = self._sql.rows("SELECT COALESCE(SUM(bytes), 0) AS used FROM stored_responses")
        return int(rows[0]["used"])

    def reserve(self, id: str, size: int, expires: float, limit: int, now: float) -> dict[str, Any]:
        """Counts response `id` unless the owner's total would pass `limit`: {"ok", "used"}."""
        used = self.used(now)
        if used + size > limit:
            return {"ok": False, "used": used}
        self._sql.run(
            "INSERT OR REPLACE INTO stored_responses (id, bytes, expires) VALUES (?, ?, ?)",
            id,
            size,
            expires,
        )
        return {"ok": True, "used": used + size}

    def release(self, id: str) -> None:
        self._sql.run("DELETE FROM stored_responses WHERE id = ?", id)

    def handle(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        if op == "responses_reserve":
            return self.reserve(
                str(payload["id"]),
                int(payload["bytes"]),
                float(payload["expires"]),
                int(payload["limit"]),
                float(payload["now"]),
            )
        if op == "responses_release":
            self.release(str(payload["id"]))
            return {"ok": True}
        raise ApiError(404, "not_found", "No such operation.")


# Bytes an answer may take per token of max_output_tokens, counted before it is made: text and
# reasoning in JSON, with room for escapes and multi-byte characters.
ANSWER_BYTES_PER_TOKEN = 16


async def reserve(ctx: Context, id: str, history: stored.History, max_tokens: int) -> None:
    """Counts this response against its owner's MAX_OWNER_RESPONSE_BYTES before the model is
    called (response_quota.py): its own input and room for its answer, not what it continues.
    Nothing is counted for a response of no owner, or without the OWNERS binding."""
    who = stored.owner(ctx)
    if not who or ctx.owner_indexes is None:
        return
    size = total(history.input).bytes + max_tokens * ANSWER_BYTES_PER_TOKEN
    limit = ctx.settings.max_owner_response_bytes
    now = time.time()
    answer = await ctx.owner_indexes.call(
        who,
        "responses_reserve",
        {
            "id": id,
            "bytes": size,
            "expires": now + ctx.settings.responses_ttl_days * 86400,
            "limit": limit,
            "now": now,
        },
    )
    if not answer.get("ok"):
        raise ApiError(
            413,
            "owner_storage_full",
            f"store: this owner's stored responses hold {answer.get('used')} bytes; with this one "
            f"({size} bytes, room for the answer included) they would pass {limit} "
            "(MAX_OWNER_RESPONSE_BYTES): delete some (DELETE /v1/responses/{id}), wait for them "
            "to expire, or send store: false",
            param="store",
        )
