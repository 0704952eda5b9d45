"""The conversation store's statements on the standard library's SQLite (the Durable Object's
storage is SQLite too): numbering, replay after an id, history, size."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from conversation_store import Event, Store, parse_event_id, split_events


class Lite:
    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.row_factory = sqlite3.Row

    def rows(self, query: str, *params: object) -> list[dict[str, Any]]:
        return [dict(row) for row in self.db.execute(query, params).fetchall()]

    def run(self, query: str, *params: object) -> None:
        assert self.db.execute(query, params).fetchall() == [], query


def test_a_new_store_does_not_exist_until_created() -> None:
    store = Store(Lite())
    assert not store.exists()
    store.create(1.0)
    assert store.exists() and (store.turn, store.streaming, store.size) == (0, False, 0)


def test_events_replay_after_an_id_in_order_and_only_from_their_turn() -> None:
    store = Store(Lite())
    store.create(1.0)
    turn = store.start_turn()
    assert (turn, store.streaming) == (1, True)
    wire = b"event: content_block_delta\ndata: {}\n\nevent: done\ndata: {}\n\n"
    for seq, part in enumerate(split_events(wire), start=1):
        store.append(turn, seq, part)
    store.end_turn()
    store.start_turn()
    store.append(2, 1, b"event: done\ndata: {}\n\n")
    assert [e.wire() for e in store.events_after(1, 1)] == [b"id: 1:2\nevent: done\ndata: {}\n\n"]
    assert [e.seq for e in store.events_after(1, 0)] == [1, 2] and store.events_after(1, 2) == []
    assert store.size == len(wire) + len(b"event: done\ndata: {}\n\n")


def test_history_keeps_content_parts_and_reasoning() -> None:
    store = Store(Lite())
    store.create(1.0)
    parts = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
    ]
    store.add_message("user", parts)
    store.add_message("assistant", "A cat.", "It has whiskers.")
    store.add_message("assistant", "", None)
    assert store.messages() == [
        {"role": "user", "content": parts},
        {"role": "assistant", "content": "A cat.", "reasoning": "It has whiskers."},
        {"role": "assistant", "content": ""},
    ]
    assert store.count() == 3


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("3:14", (3, 14)),
        (" 1:0 ", (1, 0)),
        (None, None),
        ("", None),
        ("3", None),
        ("a:1", None),
        ("1:-2", None),
        ("1:²", None),
        ("9" * 13 + ":1", None),
    ],
)
def test_event_ids(value: str | None, parsed: tuple[int, int] | None) -> None:
    assert parse_event_id(value) == parsed


def test_a_batch_of_events_is_one_insert_and_replays_as_single_appends_do() -> None:
    lite = Lite()
    store = Store(lite)
    store.create(1.0)
    turn = store.start_turn()
    store.append(turn, 1, b"event: a\ndata: {}\n\n")
    batch = [
        Event(turn=turn, seq=seq, data=b'event: b\ndata: {"text":"\\u00e9 %d\\n"}\n\n' % seq)
        for seq in range(2, 60)
    ]
    statements: list[str] = []
    lite.db.set_trace_callback(statements.append)
    store.append_all(batch)
    lite.db.set_trace_callback(None)
    assert [s for s in statements if s.startswith("INSERT")] != [] and len(statements) == 1, (
        statements
    )
    replay = store.events_after(turn, 1)
    assert [(e.seq, e.data) for e in replay] == [(e.seq, e.data) for e in batch]
    assert store.size == len(b"event: a\ndata: {}\n\n") + sum(len(e.data) for e in batch)
