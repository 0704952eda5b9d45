"""Fake upstreams built from plain data, not mocks: they really wait, fail and record."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from host_driver import drain

from base.settings import Settings
from streaming.relay import Relay, Source
from streaming.think_tags import Part
from surface.routing import Context
from surface.web import WebRequest
from workers_ai.service import RunOptions

STALL = object()


@dataclass
class FakeSource:
    """Yields each step after its delay; an Exception step raises, STALL never returns."""

    steps: list[tuple[float, object]]
    reads: int = 0
    reads_after_cancel: int = 0
    cancelled: int = 0
    _next: int = 0

    async def read(self) -> bytes | None:
        self.reads += 1
        if self.cancelled:
            self.reads_after_cancel += 1
        if self._next >= len(self.steps):
            return None
        delay, step = self.steps[self._next]
        self._next += 1
        if step is STALL:
            await asyncio.Event().wait()
        await asyncio.sleep(delay)
        if isinstance(step, Exception):
            raise step
        assert isinstance(step, bytes)
        return step

    def cancel(self) -> None:
        self.cancelled += 1


def frames(
    *texts: str, done: bool = True, usage: dict[str, int] | None = None
) -> list[tuple[float, object]]:
    steps: list[tuple[float, object]] = [
        (0.0, b"data: " + json.dumps({"response": t}).encode() + b"\n\n") for t in texts
    ]
    if usage is not None:
        steps.append(
            (0.0, b"data: " + json.dumps({"response": "", "usage": usage}).encode() + b"\n\n")
        )
    if done:
        steps.append((0.0, b"data: [DONE]\n\n"))
    return steps


@dataclass
class FakeModel:
    """A ChatModel whose stream() hands out FakeSources, or raises what it is given."""

    make: object
    calls: list[tuple[str, dict[str, object]]] = field(default_factory=list)
    sources: list[FakeSource] = field(default_factory=list)
    options: list[RunOptions | None] = field(default_factory=list)
    # model id -> what stream() raises for that model (a busy or paid-plan model, say)
    fails: dict[str, Exception] = field(default_factory=dict)
    # inputs["prompt"] -> the steps of its own stream, or what stream() raises for it
    # (legacy completions' several prompts, each its own call)
    prompts: dict[str, list[tuple[float, object]] | Exception] = field(default_factory=dict)

    async def stream(
        self,
        model: str,
        inputs: dict[str, object],
        *,
        timeout: float = 60.0,
        options: RunOptions | None = None,
    ) -> FakeSource:
        self.calls.append((model, inputs))
        self.options.append(options)
        if model in self.fails:
            raise self.fails[model]
        make = self.prompts.get(str(inputs.get("prompt")), self.make)
        if isinstance(make, Exception):
            raise make
        source = FakeSource(list(make))  # type: ignore[call-overload]
        self.sources.append(source)
        return source

    async def drain(self, source: Source, relay: Relay) -> None:
        assert isinstance(source, FakeSource), source
        await drain(source, relay)


@dataclass
class FakeLimiter:
    """A Limiter that allows `limit` calls per key and records every key it was asked about."""

    limit: int = 1_000_000
    keys: list[str] = field(default_factory=list)

    async def allow(self, key: str) -> bool:
        self.keys.append(key)
        return self.keys.count(key) <= self.limit


async def no_body() -> AsyncIterator[bytes]:
    yield b""


def completion_context(settings: Settings) -> Context:
    """What the OpenAI parser reads of a request: its settings (no body, no model calls)."""
    request = WebRequest(
        method="POST",
        url="http://x/v1/chat/completions",
        path="/v1/chat/completions",
        headers={},
        body=no_body(),
    )
    return Context(request=request, settings=settings, model=None)  # type: ignore[arg-type]


def merged(parts: list[Part]) -> list[Part]:
    """Adjacent parts of one kind joined: how many pieces a text came in is not the point."""
    out: list[Part] = []
    for kind, text in parts:
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


class LiteSql:
    """conversation_store's Sql on the standard library's SQLite, with a Durable Object's
    limits (bench/notes/2026-11-25-durable-state.md): 2,200,000 bytes in a value or a row,
    100,000 in a statement. `fail_on` makes every statement that contains it raise, as a
    storage that refuses a write does."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:", isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 2_200_000)
        self.db.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, 100_000)
        self.fail_on: str | None = None
        self.statements = 0

    def _execute(self, query: str, params: tuple[object, ...]) -> list[dict[str, Any]]:
        self.statements += 1
        if self.fail_on is not None and self.fail_on in query:
            raise sqlite3.OperationalError(f"refused: {query[:40]}")
        return [dict(row) for row in self.db.execute(query, params).fetchall()]

    def rows(self, query: str, *params: object) -> list[dict[str, Any]]:
        return self._execute(query, params)

    def run(self, query: str, *params: object) -> None:
        assert self._execute(query, params) == [], query

    def atomic(self, work: Callable[[], None]) -> None:
        self.db.execute("SAVEPOINT atomic")
        try:
            work()
        except BaseException:
            self.db.execute("ROLLBACK TO atomic")
            self.db.execute("RELEASE atomic")
            raise
        self.db.execute("RELEASE atomic")

    def stored_bytes(self) -> int:
        """What the store's count should be, counted from the rows themselves."""
        total = 0
        for content, reasoning in self.db.execute(
            "SELECT content, reasoning FROM messages WHERE content != ''"
        ):
            total += len(content.encode()) + len((reasoning or "").encode())
        wholes: dict[int, str] = {}
        for n, data in self.db.execute("SELECT n, data FROM parts ORDER BY n, i"):
            wholes[n] = wholes.get(n, "") + data
        for whole in wholes.values():
            value = json.loads(whole)
            total += len(json.dumps(value["content"], ensure_ascii=False).encode())
            total += len((value["reasoning"] or "").encode())
        for (data,) in self.db.execute("SELECT data FROM events"):
            total += len(data.encode())
        for (data,) in self.db.execute("SELECT data FROM event_parts"):
            total += len(data.encode())
        return total
