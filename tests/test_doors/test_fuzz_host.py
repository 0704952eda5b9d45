"""The fuzz bodies through app.handle on CPython: never an exception, never a 5xx, every error
documented and in its API's shape, every accepted request sent upstream as clean UTF-8.

    FUZZ_COUNT=20000 FUZZ_SEED=7 .venv/bin/python -m pytest -q -s tests/test_doors/test_fuzz_host.py
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from collections.abc import AsyncIterator

import pytest
from fakes import FakeLimiter, FakeModel, FakeSource, frames
from fuzz import CHAT, COMPLETIONS, bodies, problem
from host_driver import drive

from common import openai_params
from routes import TABLE
from streaming.relay import OneShot, Relayed, relay_whole
from surface.policy import handle
from surface.web import WebRequest, WebResponse

COUNT = int(os.environ.get("FUZZ_COUNT", "3000"))
SEED = int(os.environ.get("FUZZ_SEED", "1"))
# The fuzz generator's bodies stay under 100 KB (tests/fuzz.py), so the limits are set low enough
# for it to reach each of them; the shipped defaults are a few MiB, 1,000 messages, 1M chars.
NO_ENV: dict[str, str] = {
    "MAX_BODY_BYTES": "65536",
    "MAX_MESSAGES": "50",
    "MAX_MESSAGE_CHARS": "8000",
}
# What may reach env.AI.run: our own inputs and the OpenAI parameters the table passes through.
INPUT_KEYS = {
    "messages",
    "stream",
    "max_tokens",
    "temperature",
    "reasoning_effort",
    "chat_template_kwargs",
} | {p.name for p in openai_params.PARAMS if p.handling == openai_params.PASSED}


async def one_piece(body: bytes) -> AsyncIterator[bytes]:
    yield body


async def answer(path: str, body: bytes, model: FakeModel) -> tuple[WebResponse, bytes]:
    request = WebRequest(
        method="POST",
        url="https://chat.example.dev" + path,
        path=path,
        headers={"content-type": "application/json"},
        body=one_piece(body),
    )
    response = await handle(request, NO_ENV.get, model, TABLE, limiter=FakeLimiter())
    if isinstance(response.body, Relayed):
        source, relay = response.body.source, response.body.relay
        if isinstance(source, OneShot):
            return response, relay_whole(relay, source)
        assert isinstance(source, FakeSource), source
        return response, b"".join([part async for part in drive(source, relay)])
    assert isinstance(response.body, bytes), response
    return response, response.body


def upstream_problem(model: FakeModel) -> str | None:
    for _, inputs in model.calls:
        if set(inputs) - INPUT_KEYS:
            return f"unknown keys went upstream: {sorted(inputs)}"
        try:
            json.dumps(inputs, ensure_ascii=False, allow_nan=False).encode()
        except (ValueError, UnicodeEncodeError) as exc:
            return f"inputs are not clean JSON in UTF-8 ({exc}): {inputs!r:.300}"
    return None


def ending_problem(path: str, response: WebResponse, data: bytes) -> str | None:
    if not isinstance(response.body, Relayed):
        if path == COMPLETIONS and json.loads(data)["object"] != "chat.completion":
            return f"200 is not a chat.completion: {data[:300]!r}"
        return None
    if path == CHAT and not data.endswith(b"event: done\ndata: {}\n\n"):
        return f"the stream did not end with done: {data[-300:]!r}"
    if path == COMPLETIONS and not data.endswith(b"data: [DONE]\n\n"):
        return f"the stream did not end with [DONE]: {data[-300:]!r}"
    return None


@pytest.mark.timeout(max(120, COUNT // 50))
def test_fuzz_bodies_never_break_the_app() -> None:
    histogram: Counter[tuple[str, int, str]] = Counter()
    limits: Counter[str] = Counter()
    failures: list[str] = []

    async def run() -> None:
        for index, (path, body) in enumerate(bodies(SEED, COUNT)):
            model = FakeModel(frames("hi", " there"))
            where = f"body_at({SEED}, {index}) {path} {body[:120]!r}"
            try:
                response, data = await answer(path, body, model)
            except BaseException as exc:
                failures.append(f"{where}: raised {exc!r:.300}")
                continue
            headers = {name: value for name, value in response.headers}
            found = problem(path, response.status, headers, data)
            found = found or upstream_problem(model)
            if response.status == 200:
                found = found or ending_problem(path, response, data)
                histogram[(path, 200, "ok")] += 1
            else:
                error = json.loads(data)["error"]
                code = error["code"] if isinstance(error, dict) else error
                message = (
                    error["message"] if isinstance(error, dict) else json.loads(data)["message"]
                )
                histogram[(path, response.status, code)] += 1
                for needle in ("levels deep", "digits", "byte order mark", "UTF-8"):
                    limits[needle] += needle in message
            if found:
                failures.append(f"{where}: {found}")

    started = time.perf_counter()  # printed, never asserted: not a bound
    asyncio.run(run())
    took = time.perf_counter() - started
    print(f"\n{COUNT} fuzz bodies (seed {SEED}) in {took:.1f} s")
    for (path, status, code), n in sorted(histogram.items()):
        print(f"{n:6}  {status} {code:22} {path}")
    print("refused by:", dict(limits))
    assert not failures, f"{len(failures)} of {COUNT} bodies went wrong:\n" + "\n".join(
        failures[:20]
    )
    if COUNT >= 3000:  # the generator reaches every corner it is meant to
        codes = {code for _, _, code in histogram}
        assert codes >= {
            "ok",
            "invalid_json",
            "invalid_field",
            "unknown_field",
            "unsupported_parameter",
            "body_too_large",
            "unknown_model",
            "too_many_messages",
            "message_too_long",
        }, codes
        assert all(
            limits[needle] for needle in ("levels deep", "digits", "byte order mark", "UTF-8")
        ), limits
