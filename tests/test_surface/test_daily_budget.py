from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from fakes import FakeLimiter, FakeModel, LiteSql, frames
from host_app import request

from base.errors import ApiError
from base.settings import SettingsError
from routes import TABLE
from surface import daily_budget
from surface.daily_budget import DailyUsage
from surface.policy import handle
from surface.web import WebResponse


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_counts_per_utc_day_and_resets_at_midnight() -> None:
    usage = DailyUsage(LiteSql())
    assert usage.used(at("2026-11-29T10:00:00")) == 0
    assert usage.add(120, at("2026-11-29T10:00:00")) == 120
    assert usage.add(30, at("2026-11-29T23:59:59")) == 150
    assert usage.used(at("2026-11-29T23:59:59.999")) == 150
    # Midnight UTC: a new day, counted from 0; yesterday's count is still there.
    assert usage.used(at("2026-11-30T00:00:00")) == 0
    assert usage.add(5, at("2026-11-30T00:00:01")) == 5
    assert usage.used(at("2026-11-29T12:00:00")) == 150


def test_old_days_are_dropped() -> None:
    sql = LiteSql()
    usage = DailyUsage(sql)
    usage.add(1, at("2026-11-01T00:00:00"))
    usage.add(1, at("2026-11-29T00:00:00"))
    assert [r["day"] for r in sql.rows("SELECT day FROM usage")] == ["2026-11-29"]


def test_the_object_answers_used_and_add() -> None:
    usage = DailyUsage(LiteSql())
    now = at("2026-11-29T08:00:00")
    assert usage.handle("add", {"tokens": 7}, now) == {"used": 7, "day": "2026-11-29"}
    assert usage.handle("used", {}, now) == {"used": 7, "day": "2026-11-29"}
    with pytest.raises(ApiError):
        usage.handle("add", {"tokens": "7"}, now)
    with pytest.raises(ApiError):
        usage.handle("drop", {}, now)


def test_over_budget_is_429_until_next_midnight() -> None:
    error = daily_budget.exceeded(1000, 1000, at("2026-11-29T22:30:00"))
    assert (error.status, error.code) == (429, "budget_exceeded")
    assert dict(error.headers) == {"retry-after": str(90 * 60)}
    assert error.message == (
        "Today's budget of 1000 tokens is spent (1000 used); it resets at midnight UTC "
        "(00:00 UTC, in 90 minutes)."
    )
    assert daily_budget.next_midnight(at("2026-12-31T23:00:00")) == at("2027-01-01T00:00:00")


@pytest.mark.parametrize(
    ("raw", "expected"), [(None, None), ("", None), (" 50000 ", 50000), ("1_000_000", 1_000_000)]
)
def test_the_limit(raw: str | None, expected: int | None) -> None:
    env = {} if raw is None else {"OWNER_DAILY_TOKENS": raw}
    assert daily_budget.limit(env.get) == expected


@pytest.mark.parametrize("raw", ["0", "-5", "1e6", "lots", "²"])
def test_a_bad_limit_is_a_misconfiguration(raw: str) -> None:
    with pytest.raises(SettingsError) as caught:
        daily_budget.limit({"OWNER_DAILY_TOKENS": raw}.get)
    assert f"OWNER_DAILY_TOKENS={raw!r}" in str(caught.value)


def test_tokens_of_usage() -> None:
    assert daily_budget.tokens_of({"prompt_tokens": 10, "completion_tokens": 5}) == 15
    assert daily_budget.tokens_of(None) == 0
    assert daily_budget.tokens_of({"prompt_tokens": True, "completion_tokens": -1}) == 0


class FakeBudgets:
    """daily_budget.Budgets in memory, with every call it gets."""

    def __init__(self, used: int = 0) -> None:
        self.counts: dict[str, int] = {}
        self.start = used
        self.calls: list[tuple[str, str]] = []

    async def used(self, owner: str) -> int:
        self.calls.append(("used", owner))
        return self.counts.get(owner, self.start)

    def spend(self, owner: str, tokens: int) -> None:
        self.calls.append(("spend", owner))
        self.counts[owner] = self.counts.get(owner, self.start) + tokens


CHAT = b'{"messages":[{"role":"user","content":"hi"}]}'
TOKEN = "ab" * 16


def ask(env: dict[str, str], budgets: FakeBudgets | None, model: FakeModel) -> WebResponse:
    req = request(
        "POST", "/api/v1/chat", CHAT, content_type="application/json", x_owner_token=TOKEN
    )
    return asyncio.run(
        handle(
            req,
            env.get,
            model,
            TABLE,
            limiter=FakeLimiter(),
            budgets=budgets,
        )
    )


def test_no_budget_no_durable_object_call() -> None:
    budgets = FakeBudgets()
    assert ask({}, budgets, FakeModel(frames("hi"))).status == 200
    assert budgets.calls == []


def test_a_spent_budget_refuses_before_the_model() -> None:
    model = FakeModel(frames("hi"))
    response = ask({"OWNER_DAILY_TOKENS": "100"}, FakeBudgets(used=100), model)
    assert (response.status, response.code) == (429, "budget_exceeded")
    assert model.calls == []
    assert ask({"OWNER_DAILY_TOKENS": "100"}, FakeBudgets(used=99), model).status == 200
    assert len(model.calls) == 1


def test_a_budget_without_its_binding_is_misconfigured() -> None:
    response = ask({"OWNER_DAILY_TOKENS": "100"}, None, FakeModel(frames("hi")))
    assert (response.status, response.code) == (500, "server_misconfigured")
