"""Who owns a durable conversation or a stored response, and the owner's index of
conversations (issue 34).

An owner is the Cloudflare Access identity a request carries (its `sub`: surface/access.py),
else the API key a keyed client presents (its id), or else the owner token a client
without a key keeps and sends (`X-Owner-Token`: the page makes one of 128 random bits and keeps
it in localStorage). Only a keyed hash of a token is ever kept or handed on: the token itself
stays in this request. A request with neither has no owner, and what it creates is listed
nowhere: its id alone is the capability, as before.

The index is one Durable Object per owner (its name is the owner), a SQLite table of the
owner's conversations; this module holds its statements, tested on the host with sqlite3. The
conversation's own object stays the truth: it holds its owner and answers 404 to anyone else,
so an index that lags (a failed write) can only list too little or too much, never show a
conversation to another owner.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from base.errors import ApiError
from base.sql import Sql, Tables
from surface.access import Identity
from surface.routing import Context
from surface.web import WebResponse

TOKEN_HEADER = "x-owner-token"
# Said by a conversation's object, on an answer to its owner (never to the client: the door
# takes it off): only then does the turn put the conversation on the asker's list. An
# unowned conversation answers anyone with its id, and is listed nowhere (issue 47).
OWNED_HEADER = "x-conversation-owned"
# The secret var that keys the hash of an owner token. Unset, the key is this public constant:
# a token's 128 random bits still cannot be found from its hash (docs/OPERATING.md).
HASH_KEY_VAR = "OWNER_HASH_KEY"
DEFAULT_HASH_KEY = "ai-chat owner tokens"
# 32 to 64 hex digits (128 to 256 bits): a run of hex that the log's redaction replaces
# wherever it could appear (request_log.redacted).
_TOKEN = re.compile(r"[0-9a-f]{32,64}")
TITLE_CHARS = 80
LIMIT_DEFAULT = 20
LIMIT_MAX = 100


def owner_of(
    headers: Mapping[str, str],
    key_id: str | None,
    hash_key: str | None,
    identity: Identity | None = None,
) -> str | None:
    """The owner a request speaks for: `access:<sub>` for an Access identity (the same person
    on every device), `key:<id>` for a valid API key, `token:<hash>` for an owner token, None
    for none of them. A malformed token is refused, not ignored (it would silently create a
    conversation nobody lists)."""
    if identity is not None:
        return identity.owner
    if key_id is not None:
        return "key:" + key_id
    token = headers.get(TOKEN_HEADER)
    if token is None:
        return None
    token = token.strip().lower()
    if not _TOKEN.fullmatch(token):
        raise ApiError(
            400,
            "invalid_owner_token",
            "X-Owner-Token: must be 32 to 64 hex digits (128 random bits or more)",
            param="X-Owner-Token",
        )
    secret = (hash_key or DEFAULT_HASH_KEY).encode()
    return "token:" + hmac.new(secret, token.encode(), hashlib.sha256).hexdigest()


def request_owner(ctx: Context) -> str | None:
    """The owner a request speaks for (owner_of), with the deployment's hash key: the one
    derivation both the conversations and the stored Responses use."""
    key = ctx.env(HASH_KEY_VAR) if ctx.env is not None else None
    return owner_of(ctx.request.headers, ctx.key_id, key, ctx.identity)


def same_owner(stored: str | None, presented: str | None) -> bool:
    """Whether `presented` may use a conversation whose owner is `stored` (None: no owner, the
    id is the capability)."""
    if stored is None:
        return True
    return presented is not None and hmac.compare_digest(stored.encode(), presented.encode())


def owned_answer(response: WebResponse) -> tuple[bool, WebResponse]:
    """Whether a conversation's object said the conversation is the asker's own, and its
    answer without the header that says so."""
    kept = tuple(h for h in response.headers if h[0] != OWNED_HEADER)
    return len(kept) != len(response.headers), replace(response, headers=kept)


_FILES = re.compile(r'(?:<file name="[^"\n<>]*">\n.*?\n</file>(?:\n\n|$))+', re.DOTALL)
_FILE_NAME = re.compile(r'<file name="([^"\n<>]*)">')


def title_of(content: object) -> str | None:
    """A title from a user message's content: its text, blanks collapsed, cut to TITLE_CHARS."""
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = " ".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    else:
        return None
    # Files the page sent before the message's text (chat-core.js withFiles): the text, else
    # the first file's name.
    files = _FILES.match(text)
    if files:
        name = _FILE_NAME.match(text)
        text = text[files.end() :] or (name.group(1) if name else "")
    text = " ".join(text.split())
    if not text:
        return None
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1].rstrip() + "…"


def first_title(messages: list[dict[str, Any]]) -> str | None:
    for message in messages:
        if message.get("role") == "user":
            return title_of(message.get("content"))
    return None


def list_query(values: Mapping[str, list[str]]) -> dict[str, Any]:
    """`limit` (1 to LIMIT_MAX) and `after` (the cursor of the page before) from a query."""
    query: dict[str, Any] = {"limit": LIMIT_DEFAULT, "after": None}
    raw = values.get("limit")
    if raw:
        if not (raw[0].isascii() and raw[0].isdigit() and 1 <= int(raw[0][:4]) <= LIMIT_MAX):
            raise ApiError(
                400,
                "invalid_field",
                f"limit: must be a whole number from 1 to {LIMIT_MAX}",
                param="limit",
            )
        query["limit"] = int(raw[0])
    raw = values.get("after")
    if raw:
        if not (raw[0].isascii() and raw[0].isdigit() and len(raw[0]) <= 15):
            raise ApiError(
                400, "invalid_field", "after: must be a next_cursor of this list", param="after"
            )
        query["after"] = int(raw[0])
    return query


SCHEMA = (
    # seq: one more than the highest at each write, so the newest first is seq descending
    # whatever the clocks say; it is also the list's cursor.
    "CREATE TABLE IF NOT EXISTS conversations (id TEXT PRIMARY KEY, title TEXT, created REAL NOT NULL, updated REAL NOT NULL, seq INTEGER NOT NULL UNIQUE)",
)


class OwnerIndex:
    """One owner's conversations: written on create, on each turn and on delete."""

    def __init__(self, sql: Sql) -> None:
        self._sql = sql
        self._ready = Tables(sql, SCHEMA).ready

    def _next(self) -> int:
        rows = self._sql.rows("SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM conversations")
        return int(rows[0]["next"])

    def touch(self, id: str, now: float, title: str | None) -> None:
        """A new conversation, or a turn of one: it moves to the top; a title is kept once set
        (the first user message's), and a conversation the index missed is added back."""
        self._ready()
        self._sql.run(
            "INSERT INTO conversations (id, title, created, updated, seq) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET updated = excluded.updated, seq = excluded.seq,"
            " title = COALESCE(conversations.title, excluded.title)",
            id,
            title,
            now,
            now,
            self._next(),
        )

    def remove(self, id: str) -> None:
        self._ready()
        self._sql.run("DELETE FROM conversations WHERE id = ?", id)

    def page(self, limit: int, after: int | None) -> dict[str, Any]:
        """{"data": [...], "next_cursor": the `after` of the next page or None}, newest first."""
        self._ready()
        where, params = ("WHERE seq < ? ", [after]) if after is not None else ("", [])
        rows = self._sql.rows(
            "SELECT id, title, created, updated, seq FROM conversations "
            + where
            + "ORDER BY seq DESC LIMIT ?",
            *params,
            limit + 1,
        )
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "object": "list",
            "data": [
                {
                    "id": row["id"],
                    "title": row["title"],
                    "created_at": int(row["created"]),
                    "updated_at": int(row["updated"]),
                }
                for row in rows
            ],
            "has_more": more,
            "next_cursor": str(rows[-1]["seq"]) if more else None,
        }

    def handle(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        """One request to the index's object: touch, remove or list."""
        if op == "touch":
            self.touch(str(payload["id"]), float(payload["now"]), payload.get("title"))
            return {"ok": True}
        if op == "remove":
            self.remove(str(payload["id"]))
            return {"ok": True}
        if op == "list":
            return self.page(int(payload["limit"]), payload.get("after"))
        raise ApiError(404, "not_found", "No such operation.")
