"""The Responses input grammar fuzzed (tests/fuzz_responses.py) through app.handle on CPython,
with storage that keeps what it is given: never a 5xx, every refusal a 4xx in OpenAI's shape
whose message starts with the field it names. The same bodies run on workerd:
test_responses_fuzz_http.py.

    FUZZ_RESPONSES_COUNT=50000 .venv/bin/python -m pytest -q -s tests/test_doors/responses/test_responses_fuzz.py
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

from fakes import FakeLimiter, FakeModel, FakeSource, frames
from fuzz_responses import PATH, Known, body
from host_driver import drive

from routes import TABLE
from streaming.relay import OneShot, Relayed, relay_whole
from surface.policy import handle
from surface.web import WebRequest

COUNT = int(os.environ.get("FUZZ_RESPONSES_COUNT", "3000"))
SEED = int(os.environ.get("FUZZ_SEED", "1"))


class MemoryResponses:
    """Stored responses in a dict, as the Durable Objects keep them (owner checks aside)."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}

    async def load(self, id: str, owner: str) -> dict[str, Any] | None:
        return self.records.get(id)

    async def link(
        self, id: str, owner: str, keep_until: float | None, *, deleted_too: bool = False
    ) -> dict[str, Any] | None:
        return self.records.get(id)

    async def delete(self, id: str, owner: str) -> bool:
        return self.records.pop(id, None) is not None

    def save(self, id: str, owner: str, record: dict[str, Any], expires_at: float) -> None:
        self.records[id] = json.loads(json.dumps(record))

    async def put(self, id: str, owner: str, record: dict[str, Any], expires_at: float) -> None:
        self.save(id, owner, record, expires_at)


def problem(status: int, data: bytes) -> str | None:
    """What is wrong with one answer, or None."""
    if status == 200:
        return None
    if status >= 500:
        return f"{status}: {data[:300]!r}"
    error = json.loads(data)["error"]
    if set(error) != {"message", "type", "param", "code"}:
        return f"not the OpenAI error shape: {error!r:.300}"
    param = error["param"]
    if status in (400, 413) and error["code"] not in ("invalid_json", "body_too_large"):
        if not isinstance(param, str) or not param:
            return f"{status} {error['code']} names no field: {error['message']:.200}"
        if not error["message"].startswith(param):
            return f"message does not start with its field {param!r}: {error['message']:.200}"
    return None


async def one_piece(raw: bytes) -> AsyncIterator[bytes]:
    yield raw


async def post(raw: bytes, store: MemoryResponses, model: FakeModel) -> tuple[int, bytes]:
    request = WebRequest(
        method="POST",
        url="https://chat.example.dev" + PATH,
        path=PATH,
        headers={"content-type": "application/json"},
        body=one_piece(raw),
    )
    response = await handle(
        request,
        {"AI_MODELS": "@cf/google/gemma-4-26b-a4b-it,@cf/meta/llama-3.1-8b-instruct-fast"}.get,
        model,
        TABLE,
        limiter=FakeLimiter(),
        responses=store,
    )
    if isinstance(response.body, Relayed):
        source, relay = response.body.source, response.body.relay
        if isinstance(source, OneShot):
            return response.status, relay_whole(relay, source)
        assert isinstance(source, FakeSource), source
        return response.status, b"".join([part async for part in drive(source, relay)])
    assert isinstance(response.body, bytes)
    return response.status, response.body


def test_the_responses_grammar_fuzzed_on_the_host_is_never_a_5xx() -> None:
    store = MemoryResponses()
    model = FakeModel(frames("ok"))
    statuses: Counter[tuple[int, str]] = Counter()
    problems: list[str] = []

    async def main() -> None:
        seed = b'{"input": [{"role": "user", "content": "hi"}, {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}, {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "r"}]}], "store": true}'
        for _ in range(2):
            await post(seed, store, model)
        for i in range(COUNT):
            known = Known(
                responses=tuple(store.records)[:8],
                items=tuple(
                    item["id"]
                    for record in list(store.records.values())[:8]
                    for item in [*record["input"], *record["response"]["output"]]
                    if isinstance(item, dict) and isinstance(item.get("id"), str)
                ),
            )
            raw = body(SEED, i, known)
            try:
                status, data = await post(raw, store, model)
            except Exception as exc:  # handle() answers everything; anything else is the bug
                problems.append(f"body({SEED}, {i}): raised {exc!r}; {raw[:200]!r}")
                continue
            code = json.loads(data)["error"]["code"] if status >= 400 else ""
            statuses[(status, code)] += 1
            if (why := problem(status, data)) is not None:
                problems.append(f"body({SEED}, {i}): {why}; {raw[:200]!r}")

    asyncio.run(main())
    print(
        f"\n{len(store.records)} stored; "
        + ", ".join(f"{s} {c}: {n}" for (s, c), n in sorted(statuses.items()))
    )
    assert problems == [], "\n".join(problems[:15])
    assert statuses[(200, "")] > COUNT // 50, statuses  # the grammar still reaches the model
