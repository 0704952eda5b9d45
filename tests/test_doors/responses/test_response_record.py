"""One stored response's record (response_record.py) on the host's sqlite3: the same
statements as the Durable Object's SQLite."""

from __future__ import annotations

from fakes import LiteSql as Lite

from common.conversation_store import PART_CHARS
from doors.responses.response_record import ResponseRecord


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
