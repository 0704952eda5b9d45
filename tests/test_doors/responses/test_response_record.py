"""One stored response's record (response_record.py) on the host's sqlite3: the same
statements as the Durable Object's SQLite."""

from __future__ import annotations

from fakes import LiteSql as Lite

from common.conversation_store import PART_CHARS
from doors.responses.response_record import KEEP_SLACK, ResponseRecord


def test_a_record_reads_back_exactly_for_its_owner_until_it_expires() -> None:
    record = ResponseRecord(Lite())
    assert record.load(owner="", now=0) is None and not record.expired(0)
    record.save('{"response":{"id":"resp_1"}}', owner="k1", expires_at=100.5)
    assert record.load(owner="k1", now=100) == '{"response":{"id":"resp_1"}}'
    assert record.load(owner="k2", now=100) is None  # another key: as if none
    assert record.load(owner="", now=100) is None
    assert record.owned(owner="k1", now=100) and not record.owned(owner="k2", now=100)
    assert record.load(owner="k1", now=100.5) is None and record.expired(100.5)


def test_one_stored_by_no_owner_is_anyone_s_who_has_its_id() -> None:
    record = ResponseRecord(Lite())
    record.save("{}", owner="", expires_at=10)
    assert record.load(owner="", now=0) == "{}"
    assert record.load(owner="token:" + "ab" * 32, now=0) == "{}"  # as a conversation's id
    assert record.owned(owner="key:k1", now=0) and not record.owned(owner="key:k1", now=10)


def test_a_record_larger_than_a_part_is_kept_in_parts_and_replaced_whole() -> None:
    sql = Lite()
    record = ResponseRecord(sql)
    text = "é" * (2 * PART_CHARS + 7)
    record.save(text, owner="", expires_at=10)
    assert [r["n"] for r in sql.rows("SELECT count(*) AS n FROM record")] == [3]
    assert record.load(owner="", now=0) == text
    record.save("{}", owner="", expires_at=10)
    assert record.load(owner="", now=0) == "{}"
    assert [r["n"] for r in sql.rows("SELECT count(*) AS n FROM record")] == [1]


def test_reset_makes_the_tables_again_after_they_were_dropped() -> None:
    sql = Lite()
    record = ResponseRecord(sql)
    record.save("{}", owner="", expires_at=10)
    sql.run("DROP TABLE record")
    sql.run("DROP TABLE meta")  # what deleteAll() does to a Durable Object's SQLite
    record.reset()
    assert record.load(owner="", now=0) is None


def test_a_continued_response_lasts_as_long_as_what_continues_it() -> None:
    record = ResponseRecord(Lite())
    record.save("{}", owner="k1", expires_at=100)
    assert record.keep_until(50) is None and record.expires_at() == 100  # never shortened
    assert record.keep_until(300) == 300 + KEEP_SLACK == record.expires_at()
    assert record.keep_until(310) is None  # within the slack: no write
    assert record.load(owner="k1", now=200) == "{}" and not record.expired(200)


def test_deleting_one_nothing_continues_removes_it_at_once() -> None:
    record = ResponseRecord(Lite())
    record.save("{}", owner="k1", expires_at=100)
    assert record.delete() is True  # the object then deletes all it holds


def test_deleting_a_continued_one_keeps_its_items_for_its_chains_only() -> None:
    record = ResponseRecord(Lite())
    record.save('{"a":1}', owner="k1", expires_at=100)
    record.keep_until(300)
    assert record.delete() is False and record.deleted()
    assert record.load(owner="k1", now=0) is None  # GET, input_items, previous_response_id
    assert record.load(owner="k1", now=0, deleted_too=True) == '{"a":1}'  # a chain's link
    assert record.load(owner="k2", now=0, deleted_too=True) is None  # still its owner's only
    assert record.expired(300 + KEEP_SLACK)  # gone after the last that continues it may go
