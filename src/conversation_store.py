"""One durable conversation's storage: its messages, and each assistant turn's events as they
were sent, numbered, so a reader that comes back gets exactly what it missed.

Plain Python over an Sql protocol: in the Worker it is the Durable Object's SQLite
(`ctx.storage.sql`, synchronous), on the host the standard library's sqlite3, so the same
statements are tested on both.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class Sql(Protocol):
    def rows(self, query: str, *params: object) -> list[dict[str, Any]]:
        """Run one statement; the rows it returns, as dicts."""
        ...

    def run(self, query: str, *params: object) -> None:
        """Run one statement that returns nothing (no rows are converted)."""
        ...


SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS messages (n INTEGER PRIMARY KEY, role TEXT NOT NULL, content TEXT NOT NULL, reasoning TEXT)",
    "CREATE TABLE IF NOT EXISTS events (turn INTEGER NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (turn, seq))",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    turn: int
    seq: int
    data: bytes  # one whole SSE event, without its id line

    def wire(self) -> bytes:
        return b"id: %d:%d\n%s" % (self.turn, self.seq, self.data)


def parse_event_id(value: str | None) -> tuple[int, int] | None:
    """`<turn>:<seq>` as our events carry it (Last-Event-ID, ?after=); None when absent or not one."""
    if not value:
        return None
    turn, _, seq = value.strip().partition(":")
    if (
        not (turn.isascii() and seq.isascii() and turn.isdigit() and seq.isdigit())
        or len(turn) > 12
        or len(seq) > 12
    ):
        return None
    return int(turn), int(seq)


class Store:
    """Events are written in batches, one INSERT each, and nothing else: the byte count is
    kept here and written with the turn's end (bench/notes/2026-11-24-durable-conversations.md)."""

    def __init__(self, sql: Sql) -> None:
        self._sql = sql
        self._size: int | None = None

    def _get(self, key: str) -> str | None:
        rows = self._sql.rows("SELECT value FROM meta WHERE key = ?", key)
        return str(rows[0]["value"]) if rows else None

    def _set(self, key: str, value: str) -> None:
        self._sql.run(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            key,
            value,
        )

    def exists(self) -> bool:
        tables = self._sql.rows(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        )
        return bool(tables) and self._get("created") is not None

    def create(self, now: float) -> None:
        for statement in SCHEMA:
            self._sql.run(statement)
        self._set("created", repr(now))
        self._set("turn", "0")
        self._set("streaming", "0")
        self._set("bytes", "0")
        self._size = 0  # this object may have held a conversation that was deleted

    @property
    def turn(self) -> int:
        return int(self._get("turn") or 0)

    @property
    def streaming(self) -> bool:
        return self._get("streaming") == "1"

    @property
    def size(self) -> int:
        """Bytes stored: messages and events, as the bound per conversation counts them."""
        if self._size is None:
            self._size = int(self._get("bytes") or 0)
        return self._size

    def _grow(self, size: int, *, save: bool = True) -> None:
        self._size = self.size + size
        if save:
            self._set("bytes", str(self._size))

    def messages(self) -> list[dict[str, Any]]:
        out = []
        for row in self._sql.rows("SELECT role, content, reasoning FROM messages ORDER BY n"):
            message: dict[str, Any] = {"role": row["role"], "content": json.loads(row["content"])}
            if row["reasoning"]:
                message["reasoning"] = row["reasoning"]
            out.append(message)
        return out

    def count(self) -> int:
        return int(self._sql.rows("SELECT count(*) AS n FROM messages")[0]["n"])

    def add_message(self, role: str, content: object, reasoning: str | None = None) -> None:
        text = json.dumps(content, ensure_ascii=False)
        self._sql.run(
            "INSERT INTO messages (role, content, reasoning) VALUES (?, ?, ?)",
            role,
            text,
            reasoning or None,
        )
        self._grow(len(text.encode()) + len((reasoning or "").encode()))

    def start_turn(self) -> int:
        turn = self.turn + 1
        self._set("turn", str(turn))
        self._set("streaming", "1")
        return turn

    def end_turn(self) -> None:
        self._set("streaming", "0")
        self._set("bytes", str(self.size))

    def append(self, turn: int, seq: int, data: bytes) -> Event:
        event = Event(turn=turn, seq=seq, data=data)
        self.append_all([event])
        return event

    def append_all(self, events: Sequence[Event]) -> None:
        """Consecutive events of one turn in one INSERT: their data as one JSON array, so the
        statement has three parameters however many events (a Durable Object's SQL takes at
        most 100 per statement)."""
        if not events:
            return
        first = events[0]
        data = [e.data.decode() for e in events]
        self._sql.run(
            "INSERT INTO events (turn, seq, data) SELECT ?, ? + key, value FROM json_each(?)",
            first.turn,
            first.seq,
            json.dumps(data, ensure_ascii=False),
        )
        self._grow(sum(len(e.data) for e in events), save=False)

    def events_after(self, turn: int, seq: int) -> list[Event]:
        rows = self._sql.rows(
            "SELECT turn, seq, data FROM events WHERE turn = ? AND seq > ? ORDER BY seq", turn, seq
        )
        return [
            Event(turn=int(r["turn"]), seq=int(r["seq"]), data=str(r["data"]).encode())
            for r in rows
        ]


def split_events(out: bytes) -> Sequence[bytes]:
    """A relay's output as whole SSE events (each ends in a blank line); comments included."""
    return [part + b"\n\n" for part in out.split(b"\n\n")[:-1]]
