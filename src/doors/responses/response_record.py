"""One stored response's storage, in its own Durable Object (shell/response_object.py): the
Response object, its input items, the items before them (what previous_response_id continues
from), its owner and when it expires. Plain Python over conversation_store's Sql protocol, so
the same statements run on the host's sqlite3 and in the object's SQLite.

The record is one JSON text, kept as parts of PART_CHARS characters (a value holds at most
2,200,000 bytes: bench/notes/2026-11-25-durable-state.md), written in one transaction.
An expired record reads as none, as does one of another owner: the Worker answers 404 to both,
so an owner cannot learn that another owner's response exists.

A response refers to what it continues (its `chain` of ids) instead of copying it, so what it
continues must last as long as it does: reading a link for a response about to be stored
(`link(keep_until=...)`) pushes the link's expiry to that response's and marks it continued.
Deleting a continued response keeps its items, unread by anything but the chains that continue
it, until its (pushed) expiry; deleting one nothing continues removes it at once.
"""

from __future__ import annotations

from base.sql import Sql
from common.conversation_store import PART_CHARS
from surface.owners import same_owner

# What a continued response's expiry is pushed past the expiry of what continues it.
KEEP_SLACK = 86400.0

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS record (i INTEGER PRIMARY KEY, data TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)


class ResponseRecord:
    def __init__(self, sql: Sql) -> None:
        self._sql = sql
        self.reset()

    def reset(self) -> None:
        """After the object's storage was deleted whole (deleteAll drops the tables too)."""
        for statement in SCHEMA:
            self._sql.run(statement)

    def save(self, text: str, *, owner: str, expires_at: float) -> None:
        """The record's JSON text, replacing what was stored, in one transaction."""
        parts = [text[i : i + PART_CHARS] for i in range(0, len(text), PART_CHARS)] or [""]

        def work() -> None:
            self._sql.run("DELETE FROM record")
            self._sql.run("DELETE FROM meta")
            for i, part in enumerate(parts):
                self._sql.run("INSERT INTO record (i, data) VALUES (?, ?)", i, part)
            self._sql.run("INSERT INTO meta (key, value) VALUES ('owner', ?)", owner)
            self._sql.run(
                "INSERT INTO meta (key, value) VALUES ('expires_at', ?)", repr(float(expires_at))
            )

        self._sql.atomic(work)

    def _meta(self) -> dict[str, str]:
        return {row["key"]: row["value"] for row in self._sql.rows("SELECT key, value FROM meta")}

    def expired(self, now: float) -> bool:
        """Something is stored and its time is up (the object then deletes all it holds)."""
        at = self._meta().get("expires_at")
        return at is not None and float(at) <= now

    def owned(self, *, owner: str, now: float) -> bool:
        """Stored, not expired, and `owner`'s; one stored by no owner ("") is anyone's who has
        its id, as a conversation made by no one is (owners.same_owner)."""
        meta = self._meta()
        stored = meta.get("owner")
        if stored is None or float(meta.get("expires_at", "0")) <= now:
            return False
        return same_owner(stored or None, owner or None)

    def _set(self, key: str, value: str) -> None:
        self._sql.run("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", key, value)

    def deleted(self) -> bool:
        return self._meta().get("deleted") == "1"

    def expires_at(self) -> float | None:
        at = self._meta().get("expires_at")
        return None if at is None else float(at)

    def load(self, *, owner: str, now: float, deleted_too: bool = False) -> str | None:
        """The record's JSON text, or None: none stored, expired, or another owner's, or
        deleted (unless `deleted_too`: a link of a chain that continues it)."""
        if not self.owned(owner=owner, now=now) or (self.deleted() and not deleted_too):
            return None
        return "".join(row["data"] for row in self._sql.rows("SELECT data FROM record ORDER BY i"))

    def keep_until(self, at: float) -> float | None:
        """A response that continues this one is stored until `at`: this one lasts as long,
        and a day more, so that a chain continued many times a day writes to each link once a
        day, not on every turn. The new expiry when it moved (the object then moves its alarm),
        else None."""
        meta = self._meta()
        current = meta.get("expires_at")
        if current is None:
            return None
        moved = at + KEEP_SLACK if at > float(current) else None
        if moved is None and meta.get("continued") == "1":
            return None

        def work() -> None:
            self._set("continued", "1")
            if moved is not None:
                self._set("expires_at", repr(float(moved)))

        self._sql.atomic(work)
        return moved

    def delete(self) -> bool:
        """Deleted for its owner; True when it can go at once (nothing continues it), False
        when it is kept, unread, for the responses that continue it."""
        if self._meta().get("continued") != "1":
            return True
        self._sql.atomic(lambda: self._set("deleted", "1"))
        return False
