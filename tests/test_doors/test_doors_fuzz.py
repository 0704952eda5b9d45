"""Hostile bodies for every door through app.handle (host): valid requests of every item, part
and image kind, mutated by tests/fuzz.py; no answer may be a 500 or an undocumented error,
every error keeps its door's shape, and what reaches a conversation's Durable Object is what
its parser passed (a fake object that records it).

    FUZZ_COUNT=10000 FUZZ_SEED=5 .venv/bin/python -m pytest -q tests/test_doors/test_doors_fuzz.py
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fakes import FakeLimiter, FakeModel, frames
from fuzz import DOORS, HISTORY, MESSAGE, body_for, problem

from routes import TABLE
from surface.policy import handle
from surface.web import WebRequest, WebResponse, json_response

ENV = {"AI_MODELS": "@cf/google/gemma-4-26b-a4b-it,@cf/openai/gpt-oss-20b"}
COUNT = int(os.environ.get("FUZZ_COUNT", "400"))  # per door
SEED = int(os.environ.get("FUZZ_SEED", "1"))
ID = "0123456789abcdef0123456789abcdef"


class Recorded:
    """A CONVERSATIONS binding whose object only records what it was handed."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any] | None]] = []

    async def call(
        self,
        id: str,
        op: str,
        payload: dict[str, Any] | None = None,
        *,
        after: str | None = None,
        owner: str | None = None,
    ) -> WebResponse:
        self.calls.append((id, op, payload))
        return json_response(201 if op == "create" else 200, {"id": id})


async def one_piece(body: bytes) -> AsyncIterator[bytes]:
    yield body


def handed_problem(door: str, conversations: Recorded) -> str | None:
    """What a conversation's object was handed must be clean JSON of the checked shape."""
    for _, op, payload in conversations.calls:
        try:
            json.dumps(payload, ensure_ascii=False, allow_nan=False).encode()
        except (ValueError, UnicodeEncodeError) as exc:
            return f"{op} was handed what is not clean JSON ({exc})"
        if door == MESSAGE and (payload is None or not {"content", "model"} <= set(payload)):
            return f"a message without content or model reached the object: {payload!r:.200}"
    return None


@pytest.mark.parametrize("door", DOORS)
def test_hostile_bodies_get_documented_answers_in_their_doors_shape(door: str) -> None:
    path = MESSAGE.format(id=ID) if door == MESSAGE else door

    async def run() -> list[str]:
        found = []
        for index in range(COUNT):
            raw = body_for(door, SEED, index)
            request = WebRequest(
                method="POST",
                url="https://x" + path,
                path=path,
                headers={"content-type": "application/json"},
                body=one_piece(raw),
            )
            conversations = Recorded()
            try:
                response = await handle(
                    request,
                    ENV.get,
                    FakeModel(frames("a", "b")),
                    TABLE,
                    limiter=FakeLimiter(),
                    conversations=conversations,
                )
            except BaseException as exc:
                found.append(f"#{index} {raw[:200]!r}: raised {exc!r:.300}")
                continue
            body = response.body if isinstance(response.body, bytes) else b""
            headers = {name: value for name, value in response.headers}
            trouble = problem(path, response.status, headers, body) or handed_problem(
                door, conversations
            )
            if trouble is not None:
                found.append(f"#{index} {raw[:200]!r}: {trouble}")
            if door in (MESSAGE, HISTORY) and response.status < 300 and not conversations.calls:
                found.append(f"#{index}: {response.status} without reaching the object")
        return found

    found = asyncio.run(run())
    assert not found, f"{len(found)} of {COUNT} bodies got a wrong answer, first:\n" + "\n".join(
        found[:5]
    )
