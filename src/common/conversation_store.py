"""One durable conversation's storage: its messages, and each assistant turn's events as they
were sent, numbered, so a reader that comes back gets exactly what it missed.

Plain Python over an Sql protocol: in the Worker it is the Durable Object's SQLite
(`ctx.storage.sql`, synchronous), on the host the standard library's sqlite3, so the same
statements are tested on both.

A Durable Object's SQLite holds at most 2,200,000 bytes in one value, one row or one bound
parameter, and 100,000 in one statement (measured on workerd:
bench/notes/2026-11-25-durable-state.md). A message larger than PART_CHARS characters (a
photo's base64, a long paste) is kept as parts of its own, so everything the API admits is
stored; so is an event larger than BATCH_BYTES (a model that echoes a long message in one
token), and a batch of events is split into statements that stay far under the limit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from base.sql import Sql

# Characters of one stored part of a message: at most 4 bytes each in UTF-8, so a part is at
# most 1,000,000 bytes, under half the measured value limit.
PART_CHARS = 250_000
# Bytes of events' data per INSERT: JSON escapes at most six-fold (a control character as
# \u00XX), so the statement's one array parameter stays under 1,000,000 bytes.
BATCH_BYTES = 150_000


def utf8_len(text: str) -> int:
    """Bytes of `text` in UTF-8 (a lone surrogate counted as the 3 bytes it is stored as)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # content: the JSON of the message's content, or '' when the message is kept in parts.
    "CREATE TABLE IF NOT EXISTS messages (n INTEGER PRIMARY KEY, role TEXT NOT NULL, content TEXT NOT NULL, reasoning TEXT)",
    # The parts of a large message, in order: joined, the JSON {"content", "reasoning"}.
    "CREATE TABLE IF NOT EXISTS parts (n INTEGER NOT NULL, i INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (n, i))",
    # data: one whole SSE event, or '' when the event is kept in parts (event_parts).
    "CREATE TABLE IF NOT EXISTS events (turn INTEGER NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (turn, seq))",
    "CREATE TABLE IF NOT EXISTS event_parts (turn INTEGER NOT NULL, seq INTEGER NOT NULL, i INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (turn, seq, i))",
    # What a page shows of a finished answer (answer_details.py): the JSON of its details.
    "CREATE TABLE IF NOT EXISTS details (n INTEGER PRIMARY KEY, data TEXT NOT NULL)",
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
    kept here and written with the turn's end (bench/notes/2026-11-24-durable-conversations.md).

    The count is what MAX_CONVERSATION_BYTES bounds: each message's content (as JSON) and
    reasoning, and each event's data, in UTF-8 bytes, however they are laid out in rows."""

    def __init__(self, sql: Sql) -> None:
        self._sql = sql
        self._size: int | None = None
        self._schema = False

    def _get(self, key: str) -> str | None:
        rows = self._sql.rows("SELECT value FROM meta WHERE key = ?", key)
        return str(rows[0]["value"]) if rows else None

    def _set(self, key: str, value: str) -> None:
        self._sql.run(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            key,
            value,
        )

    def atomic(self, work: Callable[[], None]) -> None:
        """Several writes as one: all of them, or (when one raises) none."""
        size = self._size
        try:
            self._sql.atomic(work)
        except BaseException:
            self._size = size
            raise

    def exists(self) -> bool:
        tables = self._sql.rows(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        )
        if not (tables and self._get("created") is not None):
            return False
        if not self._schema:  # a conversation stored before a table was added gets it now
            for statement in SCHEMA:
                self._sql.run(statement)
            self._schema = True
        return True

    def create(self, now: float, owner: str | None = None) -> None:
        for statement in SCHEMA:
            self._sql.run(statement)
        self._schema = True
        self._set("created", repr(now))
        if owner is not None:  # an API key's id or a token's keyed hash (owners.py)
            self._set("owner", owner)
        self._set("turn", "0")
        self._set("streaming", "0")
        self._set("bytes", "0")
        self._size = 0  # this object may have held a conversation that was deleted

    @property
    def owner(self) -> str | None:
        """Who owns the conversation (owners.py), or None: its id is the capability."""
        return self._get("owner")

    def forget(self) -> None:
        """The storage is being deleted: nothing cached here outlives it."""
        self._size = None
        self._schema = False

    @property
    def branches(self) -> dict[str, Any] | None:
        """A client's versions of the conversation (POST .../branches), or None."""
        raw = self._get("branches")
        value = json.loads(raw) if raw else None
        return value if isinstance(value, dict) else None

    def keep_branches(self, branches: dict[str, Any] | None) -> None:
        """Bounded by the door (MAX_BRANCHES_BYTES), not counted in MAX_CONVERSATION_BYTES."""
        self._set("branches", json.dumps(branches, ensure_ascii=False) if branches else "")

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

    def grow(self, size: int, *, save: bool = True) -> None:
        self._size = self.size + size
        if save:
            self._set("bytes", str(self._size))

    def messages(self) -> list[dict[str, Any]]:
        out = []
        rows = self._sql.rows("SELECT n, role, content, reasoning FROM messages ORDER BY n")
        details = {
            int(r["n"]): str(r["data"]) for r in self._sql.rows("SELECT n, data FROM details")
        }
        for row in rows:
            if row["content"] == "":  # kept in parts
                whole = json.loads(self._parts(int(row["n"])))
                content, reasoning = whole["content"], whole["reasoning"]
            else:
                content, reasoning = json.loads(row["content"]), row["reasoning"]
            message: dict[str, Any] = {"role": row["role"], "content": content}
            if reasoning:
                message["reasoning"] = reasoning
            if int(row["n"]) in details:
                message["details"] = json.loads(details[int(row["n"])])
            out.append(message)
        return out

    def _parts(self, n: int) -> str:
        rows = self._sql.rows("SELECT data FROM parts WHERE n = ? ORDER BY i", n)
        return "".join(str(r["data"]) for r in rows)

    def count(self) -> int:
        return int(self._sql.rows("SELECT count(*) AS n FROM messages")[0]["n"])

    def add_message(
        self,
        role: str,
        content: object,
        reasoning: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> int:
        """Stores the message (in parts when it is large), with an answer's details; returns
        its number."""
        text = json.dumps(content, ensure_ascii=False)
        n = int(self._sql.rows("SELECT coalesce(max(n), 0) + 1 AS n FROM messages")[0]["n"])
        if len(text) + len(reasoning or "") <= PART_CHARS:
            self._sql.run(
                "INSERT INTO messages (n, role, content, reasoning) VALUES (?, ?, ?, ?)",
                n,
                role,
                text,
                reasoning or None,
            )
        else:
            self._sql.run(
                "INSERT INTO messages (n, role, content, reasoning) VALUES (?, ?, '', NULL)",
                n,
                role,
            )
            whole = json.dumps({"content": content, "reasoning": reasoning}, ensure_ascii=False)
            for i in range(0, len(whole), PART_CHARS):
                self._sql.run(
                    "INSERT INTO parts (n, i, data) VALUES (?, ?, ?)",
                    n,
                    i // PART_CHARS,
                    whole[i : i + PART_CHARS],
                )
        self.grow(utf8_len(text) + utf8_len(reasoning or ""))
        if details:  # a few hundred bytes an answer, bounded by MAX_MESSAGES, not counted
            data = json.dumps(details, ensure_ascii=False)
            self._sql.run("INSERT INTO details (n, data) VALUES (?, ?)", n, data)
        return n

    def remove_message(self, n: int) -> None:
        """Takes message n back out (a turn whose model call failed before it answered)."""
        rows = self._sql.rows("SELECT content, reasoning FROM messages WHERE n = ?", n)
        if not rows:
            return
        row = rows[0]
        whole = json.loads(self._parts(n)) if row["content"] == "" else None
        content = whole["content"] if whole else json.loads(row["content"])
        reasoning = whole["reasoning"] if whole else row["reasoning"]
        self._sql.run("DELETE FROM parts WHERE n = ?", n)
        self._sql.run("DELETE FROM messages WHERE n = ?", n)
        self._sql.run("DELETE FROM details WHERE n = ?", n)
        self.grow(-message_bytes(content, reasoning))

    def start_turn(self) -> int:
        turn = self.turn + 1
        self._set("turn", str(turn))
        self._set("streaming", "1")
        return turn

    def undo_turn(self, turn: int) -> None:
        """The turn just started is taken back: it stored no event."""
        self._set("turn", str(turn - 1))
        self._set("streaming", "0")

    def end_turn(self) -> None:
        self._set("streaming", "0")
        self._set("bytes", str(self.size))

    def append(self, turn: int, seq: int, data: bytes) -> Event:
        event = Event(turn=turn, seq=seq, data=data)
        self.append_all([event])
        return event

    def append_all(self, events: Sequence[Event]) -> None:
        """Consecutive events of one turn in as few INSERTs as their size allows: their data as
        one JSON array each, so a statement has three parameters however many events (a
        Durable Object's SQL takes at most 100 per statement). An event larger than a batch is
        kept in parts of its own."""
        start = 0
        while start < len(events):
            if len(events[start].data) > BATCH_BYTES:
                self._append_large(events[start])
                start += 1
                continue
            end, size = start, 0
            while (
                end < len(events)
                and len(events[end].data) <= BATCH_BYTES
                and size + len(events[end].data) <= BATCH_BYTES
            ):
                size += len(events[end].data)
                end += 1
            batch = events[start:end]
            self._sql.run(
                "INSERT INTO events (turn, seq, data) SELECT ?, ? + key, value FROM json_each(?)",
                batch[0].turn,
                batch[0].seq,
                json.dumps([e.data.decode() for e in batch], ensure_ascii=False),
            )
            self.grow(size, save=False)
            start = end

    def _append_large(self, event: Event) -> None:
        self._sql.run(
            "INSERT INTO events (turn, seq, data) VALUES (?, ?, '')", event.turn, event.seq
        )
        text = event.data.decode()
        for i in range(0, len(text), PART_CHARS):
            self._sql.run(
                "INSERT INTO event_parts (turn, seq, i, data) VALUES (?, ?, ?, ?)",
                event.turn,
                event.seq,
                i // PART_CHARS,
                text[i : i + PART_CHARS],
            )
        self.grow(len(event.data), save=False)

    def events_after(self, turn: int, seq: int) -> list[Event]:
        rows = self._sql.rows(
            "SELECT turn, seq, data FROM events WHERE turn = ? AND seq > ? ORDER BY seq", turn, seq
        )
        out = []
        for r in rows:
            data = str(r["data"])
            if data == "":  # kept in parts
                parts = self._sql.rows(
                    "SELECT data FROM event_parts WHERE turn = ? AND seq = ? ORDER BY i",
                    r["turn"],
                    r["seq"],
                )
                data = "".join(str(p["data"]) for p in parts)
            out.append(Event(turn=int(r["turn"]), seq=int(r["seq"]), data=data.encode()))
        return out


def message_bytes(content: object, reasoning: str | None) -> int:
    """What a message counts against MAX_CONVERSATION_BYTES: its content's JSON and its
    reasoning, in UTF-8 bytes."""
    return utf8_len(json.dumps(content, ensure_ascii=False)) + utf8_len(reasoning or "")


def split_events(out: bytes) -> Sequence[bytes]:
    """A relay's output as whole SSE events (each ends in a blank line); comments included."""
    return [part + b"\n\n" for part in out.split(b"\n\n")[:-1]]
