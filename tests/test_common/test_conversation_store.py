"""The conversation store's statements on the standard library's SQLite (the Durable Object's
storage is SQLite too): numbering, replay after an id, history, size."""

from __future__ import annotations

import sqlite3

import pytest
from fakes import LiteSql as Lite

from common.conversation_store import Event, Store, parse_event_id, split_events


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


def test_a_message_past_a_value_limit_is_stored_in_parts_and_read_back_whole() -> None:
    """A 3 MiB image's base64 (4 MiB) and 2.8 MB of text: each more than SQLite takes in one
    value on workerd (2,200,000 bytes); LiteSql holds the same limit."""
    lite = Lite()
    store = Store(lite)
    store.create(1.0)
    image = "data:image/png;base64," + "A" * (4 * 1024 * 1024)
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": image}}]
    text = "🌍" * 700_000  # 2.8 MB in UTF-8
    first = store.add_message("user", parts)
    store.add_message("assistant", "seen", "r" * 300_000)
    store.add_message("user", text)
    assert store.messages() == [
        {"role": "user", "content": parts},
        {"role": "assistant", "content": "seen", "reasoning": "r" * 300_000},
        {"role": "user", "content": text},
    ]
    assert store.size == lite.stored_bytes() > 4 * 1024 * 1024 + 2_800_000
    with pytest.raises(Exception, match="too big"):  # the limit the parts stay under is real
        lite.run("INSERT INTO parts (n, i, data) VALUES (9, 0, ?)", text)
    store.remove_message(first)
    assert [m["content"] for m in store.messages()] == ["seen", text]
    assert store.size == lite.stored_bytes() and store.count() == 2


def test_a_large_batch_of_events_is_split_into_statements_under_the_limit() -> None:
    lite = Lite()
    store = Store(lite)
    store.create(1.0)
    turn = store.start_turn()
    big = b'event: content_block_delta\ndata: {"index":0,"text":"%s"}\n\n' % (b"\\n" * 70_000)
    batch = [Event(turn=turn, seq=seq, data=big) for seq in range(1, 13)]
    store.append_all(batch)
    assert [e.data for e in store.events_after(turn, 0)] == [big] * 12
    assert store.size == lite.stored_bytes() == 12 * len(big)
    # One event past the value limit (a model echoing a 2.8 MB message in one token): in parts.
    echo = (
        b'event: content_block_delta\ndata: {"index":1,"text":"%s"}\n\n' % ("🌍" * 700_000).encode()
    )
    store.append_all([Event(turn=turn, seq=13, data=echo), Event(turn=turn, seq=14, data=big)])
    assert [e.data for e in store.events_after(turn, 11)] == [big, echo, big]
    assert store.size == lite.stored_bytes() == 13 * len(big) + len(echo)


def test_writes_made_atomic_leave_nothing_when_one_fails() -> None:
    lite = Lite()
    store = Store(lite)
    store.create(1.0)
    store.add_message("user", "kept")
    size = store.size
    lite.fail_on = "UPDATE SET value"  # the byte count's write fails after the INSERT

    def both() -> None:
        store.add_message("user", "x" * 10)
        store.start_turn()

    with pytest.raises(sqlite3.OperationalError):
        store.atomic(both)
    lite.fail_on = None
    assert (store.messages(), store.turn, store.size) == (
        [{"role": "user", "content": "kept"}],
        0,
        size,
    )
    assert store.size == lite.stored_bytes()


def test_a_conversation_stored_before_the_parts_table_gets_it() -> None:
    lite = Lite()
    store = Store(lite)
    store.create(1.0)
    lite.run("DROP TABLE parts")
    again = Store(lite)
    assert again.exists()
    again.add_message("user", "p" * 300_000)
    assert again.messages() == [{"role": "user", "content": "p" * 300_000}]
