"""A budget per person: OWNER_DAILY_TOKENS, the tokens (in + out, as the model reports them) each
owner may spend per UTC day.

Each owner's count is one Durable Object (its name is the owner: an Access identity, an API key's
id, a page owner token's keyed hash, else the client address's hash), a SQLite row per day whose
statements are here, tested on the host with sqlite3 and an injected clock. The count is checked
before the model is called (over it: 429 budget_exceeded until the next UTC midnight) and added to
when an answer ends, from the usage the model reported (request_log.RequestLog.write, the one place
every answer of the Worker ends; a durable turn's end in its own object). Answers that run at the
same time are each let through and each counted, so a budget may be passed by what they spend.
Unset, nothing is checked or counted, and no request pays for a Durable Object call.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from base.errors import ApiError
from base.settings import Lookup, SettingsError
from base.sql import Sql, Tables

VAR = "OWNER_DAILY_TOKENS"
BINDING = "BUDGETS"
KEEP_DAYS = 7  # days of counts kept, for an operator who looks


def limit(lookup: Lookup) -> int | None:
    """OWNER_DAILY_TOKENS as a whole number of tokens; None when unset or blank."""
    raw = lookup(VAR)
    if raw is None or not raw.strip():
        return None
    text = raw.strip().replace("_", "")
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text[:16]) <= 10**15:
        raise SettingsError(f"{VAR}={raw!r} must be a whole number of tokens from 1 to 10**15")
    return int(text)


def day_of(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")


def next_midnight(now: float) -> float:
    day = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return (day + timedelta(days=1)).timestamp()


def exceeded(used: int, cap: int, now: float) -> ApiError:
    reset = next_midnight(now)
    at = datetime.fromtimestamp(reset, UTC).strftime("%H:%M UTC")
    return ApiError(
        429,
        "budget_exceeded",
        f"Today's budget of {cap} tokens is spent ({used} used); it resets at midnight UTC "
        f"({at}, in {max(1, round((reset - now) / 60))} minutes).",
        headers=(("retry-after", str(max(1, int(reset - now + 0.999)))),),
    )


def tokens_of(usage: Mapping[str, object] | None) -> int:
    """Tokens in + out of a usage object (OpenAI's keys); 0 when it says none."""
    if not usage:
        return 0
    total = 0
    for key in ("prompt_tokens", "completion_tokens"):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            total += value
    return total


def address_owner(headers: Mapping[str, str]) -> str:
    """The owner of a request that names none (no identity, key or token): its address, hashed."""
    address = headers.get("cf-connecting-ip") or "unknown"
    return "address:" + hashlib.sha256(address.encode()).hexdigest()[:32]


SCHEMA = ("CREATE TABLE IF NOT EXISTS usage (day TEXT PRIMARY KEY, tokens INTEGER NOT NULL)",)


class DailyUsage:
    """One owner's tokens per UTC day."""

    def __init__(self, sql: Sql) -> None:
        self._sql = sql
        self._ready = Tables(sql, SCHEMA).ready

    def used(self, now: float) -> int:
        self._ready()
        rows = self._sql.rows("SELECT tokens FROM usage WHERE day = ?", day_of(now))
        return int(rows[0]["tokens"]) if rows else 0

    def add(self, tokens: int, now: float) -> int:
        """Adds to today's count (a new day starts at 0); returns today's count."""
        self._ready()
        day = day_of(now)
        self._sql.run(
            "INSERT INTO usage (day, tokens) VALUES (?, ?)"
            " ON CONFLICT (day) DO UPDATE SET tokens = usage.tokens + excluded.tokens",
            day,
            max(0, tokens),
        )
        self._sql.run("DELETE FROM usage WHERE day < ?", day_of(now - KEEP_DAYS * 86400))
        return self.used(now)

    def handle(self, op: str, payload: dict[str, Any], now: float | None = None) -> dict[str, Any]:
        """One request to the owner's object: `used`, or `add` {"tokens": n}."""
        at = time.time() if now is None else now
        if op == "used":
            return {"used": self.used(at), "day": day_of(at)}
        if op == "add":
            tokens = payload.get("tokens")
            if not isinstance(tokens, int) or isinstance(tokens, bool):
                raise ApiError(400, "invalid_field", "tokens: must be an integer", param="tokens")
            return {"used": self.add(tokens, at), "day": day_of(at)}
        raise ApiError(404, "not_found", "No such operation.")


class Budgets(Protocol):
    """The owners' counts (one Durable Object each)."""

    async def used(self, owner: str) -> int:
        """Today's count; raises when the object cannot be reached."""
        ...

    def spend(self, owner: str, tokens: int) -> None:
        """Adds to today's count, in the background (the request's context is kept alive)."""
        ...
