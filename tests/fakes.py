"""Fake upstreams built from plain data, not mocks: they really wait, fail and record."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from app import Context, RunOptions
from relay import ByteSource, Relay, drain
from settings import Settings
from think_tags import Part
from web import WebRequest

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
        if isinstance(self.make, Exception):
            raise self.make
        source = FakeSource(list(self.make))  # type: ignore[call-overload]
        self.sources.append(source)
        return source

    async def drain(self, source: ByteSource, relay: Relay) -> None:
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
