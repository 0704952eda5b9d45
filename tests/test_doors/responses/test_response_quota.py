"""One owner's stored-response bytes (response_quota.py) on the host's sqlite3: the same
statements as the owner's Durable Object."""

from __future__ import annotations

from fakes import LiteSql as Lite

from doors.responses.response_quota import ResponseQuota


def test_an_owner_s_responses_are_counted_until_the_limit() -> None:
    quota = ResponseQuota(Lite())
    assert quota.reserve("a", 600, expires=100, limit=1000, now=0) == {"ok": True, "used": 600}
    assert quota.reserve("b", 500, expires=100, limit=1000, now=0) == {"ok": False, "used": 600}
    assert quota.reserve("b", 400, expires=100, limit=1000, now=0) == {"ok": True, "used": 1000}


def test_a_deleted_or_expired_response_stops_counting() -> None:
    quota = ResponseQuota(Lite())
    quota.reserve("a", 600, expires=100, limit=1000, now=0)
    quota.reserve("b", 300, expires=50, limit=1000, now=0)
    quota.release("a")
    assert quota.used(now=0) == 300
    assert quota.used(now=50) == 0  # b expired at 50
    assert quota.handle(
        "responses_reserve", {"id": "c", "bytes": 1000, "expires": 99, "limit": 1000, "now": 60}
    ) == {"ok": True, "used": 1000}
