"""The Responses input grammar fuzzed (tests/fuzz_responses.py) over real HTTP on workerd, with
its RESPONSES Durable Objects: 5,000 bodies (seed 1) over one server, 16 at a time, references
and chains to responses it stored along the way. Never a 5xx; every refusal a 4xx in OpenAI's
shape naming its field (issue 46); the Worker still answers afterwards.

    FUZZ_RESPONSES_HTTP_COUNT=20000 FUZZ_SEED=3 .venv/bin/python -m pytest -q -s \
        tests/test_doors/responses/test_responses_fuzz_http.py
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import Runtime, start_runtime
from fuzz_responses import PATH, Known, body

pytestmark = pytest.mark.runtime

COUNT = int(os.environ.get("FUZZ_RESPONSES_HTTP_COUNT", "5000"))
SEED = int(os.environ.get("FUZZ_SEED", "1"))
AT_ONCE = 16
KEPT = 12  # stored responses the bodies may name (the first made)
FIRST = {
    "input": [
        {"role": "user", "content": "[[pace:0]] hi"},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
        {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "r"}]},
    ],
    "max_output_tokens": 8,
}


@pytest.fixture(scope="module")
def fast_runtime() -> Iterator[Runtime]:
    rt = start_runtime(pace_ms=0)
    yield rt
    rt.stop()


def problem(status: int, headers: httpx.Headers, data: bytes) -> str | None:
    if status == 200:
        return None
    if status >= 500 or status == 0:
        return f"{status}: {data[:300]!r}"
    if not headers.get("content-type", "").startswith("application/json"):
        return f"{status} without a JSON content type"
    error = json.loads(data)["error"]
    if set(error) != {"message", "type", "param", "code"}:
        return f"not the OpenAI error shape: {error!r:.300}"
    param = error["param"]
    if status in (400, 404, 413) and error["code"] not in ("invalid_json", "body_too_large"):
        if not isinstance(param, str) or not param:
            return f"{status} {error['code']} names no field: {error['message']:.200}"
        if not error["message"].startswith(param):
            return f"message does not start with its field {param!r}: {error['message']:.200}"
    return None


def kept(answer: dict[str, Any], known: dict[str, list[str]]) -> None:
    """A stored response's id and its output items' ids, while there is room."""
    if answer.get("store") is not True or len(known["responses"]) >= KEPT:
        return
    known["responses"].append(answer["id"])
    known["items"] += [
        item["id"] for item in answer.get("output", []) if isinstance(item.get("id"), str)
    ]
    hexid = answer["id"].removeprefix("resp_")
    known["items"].append(f"msg_{hexid}_i0")  # an input item's id, if it had one at 0


@pytest.mark.timeout(max(600, COUNT // 5))
def test_the_responses_grammar_fuzzed_on_workerd_is_never_a_5xx(fast_runtime: Runtime) -> None:
    rt = fast_runtime
    statuses: Counter[tuple[int, str]] = Counter()
    problems: list[str] = []
    known: dict[str, list[str]] = {"responses": [], "items": []}
    started = time.monotonic()

    retried: list[int] = []

    async def send(client: httpx.AsyncClient, raw: bytes) -> tuple[int, httpx.Headers, bytes]:
        """Sent once more on a new connection when a kept-alive one closed under it (httpx
        reuses a connection the server may just have closed); a runtime that died does not
        answer the second time either, and says so in its log."""
        headers = {"content-type": "application/json"}
        try:
            response = await client.post(PATH, content=raw, headers=headers)
        except httpx.TransportError:
            retried.append(1)
            try:
                async with httpx.AsyncClient(base_url=rt.url, timeout=60) as fresh:
                    response = await fresh.post(PATH, content=raw, headers=headers)
            except httpx.TransportError as exc:
                return 0, httpx.Headers(), repr(exc).encode()
        return response.status_code, response.headers, response.content

    async def main() -> None:
        limits = httpx.Limits(max_connections=AT_ONCE)
        async with httpx.AsyncClient(base_url=rt.url, timeout=60, limits=limits) as client:
            for _ in range(2):
                first = await client.post(PATH, json=FIRST)
                assert first.status_code == 200, first.text[:300]
                kept(first.json(), known)
            for start in range(0, COUNT, AT_ONCE):
                names = Known(responses=tuple(known["responses"]), items=tuple(known["items"]))
                batch = range(start, min(start + AT_ONCE, COUNT))
                bodies = [body(SEED, i, names) for i in batch]
                answers = await asyncio.gather(*(send(client, raw) for raw in bodies))
                for i, raw, (status, headers, data) in zip(batch, bodies, answers, strict=True):
                    code = ""
                    if status >= 400 and headers.get("content-type", "").startswith("application"):
                        code = json.loads(data)["error"]["code"]
                    statuses[(status, code)] += 1
                    if (why := problem(status, headers, data)) is not None:
                        problems.append(f"body({SEED}, {i}): {why}; {raw[:200]!r}")
                    elif status == 200 and headers["content-type"].startswith("application/json"):
                        kept(json.loads(data), known)

    asyncio.run(main())
    shown = ", ".join(f"{s} {c}: {n}" for (s, c), n in sorted(statuses.items()))
    took = time.monotonic() - started
    print(f"\n{COUNT} Responses bodies (seed {SEED}) in {took:.1f} s: {shown}")
    print(f"sent again on a new connection: {len(retried)}")
    # A connection that broke with no answer: say whether the runtime died under it.
    fatal = [line for line in rt.log if "fatal" in line.lower() or "restarted" in line]
    assert problems == [], "\n".join([*problems[:20], *fatal[:5]])
    assert statuses[(200, "")] > COUNT // 50, statuses  # the grammar still reaches the model
    assert len(known["responses"]) == KEPT, known  # and the storage paths
    with rt.client() as http:
        ok = http.post(PATH, json={"input": "[[pace:0]] still there?", "store": False})
    assert ok.status_code == 200 and ok.json()["status"] == "completed", ok.text[:300]
