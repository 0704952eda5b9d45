"""The fuzz bodies over real HTTP on workerd, every door: no undocumented status, no 5xx, no
crash, the Worker still answers a normal chat afterwards, and nothing is left live on its stats
route (no relay, and no model call still running).

    make test runs 250 bodies per door (seed 1); the issue's figure (10,000 per door), one door
    per runtime (so one workerd serves each 10,000):
    for door in chat completions responses ui_chat message history; do
      FUZZ_HTTP_COUNT=10000 FUZZ_SEED=5 .venv/bin/python -m pytest -q -s \
        "tests/test_doors/test_fuzz_workerd.py::test_fuzz_bodies_over_http_on_workerd[$door]"
    done
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from conftest import Runtime, start_runtime
from fuzz import CHAT, COMPLETIONS, HISTORY, MESSAGE, RESPONSES, UI_CHAT, body_for, problem

pytestmark = pytest.mark.runtime

COUNT = int(os.environ.get("FUZZ_HTTP_COUNT", "250"))
SEED = int(os.environ.get("FUZZ_SEED", "1"))
AT_ONCE = 16
# A conversation takes this many fuzz messages, then the next one is used: a long history of
# fuzz bodies only tells the context budget's 400 again and again.
TURNS_PER_CONVERSATION = 20
DOORS = {
    "chat": CHAT,
    "completions": COMPLETIONS,
    "responses": RESPONSES,
    "ui_chat": UI_CHAT,
    "message": MESSAGE,
    "history": HISTORY,
}


@pytest.fixture(scope="module")
def fast_runtime() -> Iterator[Runtime]:
    rt = start_runtime(pace_ms=0)
    yield rt
    rt.stop()


async def send(
    client: httpx.AsyncClient, path: str, body: bytes
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body); status 0 when the connection broke without an answer."""
    try:
        response = await client.post(
            path, content=body, headers={"content-type": "application/json"}
        )
    except httpx.TransportError as exc:
        return 0, {}, repr(exc).encode()
    return (
        response.status_code,
        {k.lower(): v for k, v in response.headers.items()},
        response.content,
    )


@pytest.mark.parametrize("name", DOORS)
@pytest.mark.timeout(max(180, COUNT // 10))
def test_fuzz_bodies_over_http_on_workerd(fast_runtime: Runtime, name: str) -> None:
    rt, door = fast_runtime, DOORS[name]
    statuses: Counter[tuple[int, str]] = Counter()
    problems: list[str] = []
    started = time.monotonic()  # printed, never asserted: not a bound
    first_call = max((c["id"] for c in rt.calls()), default=0)

    async def main() -> None:
        limits = httpx.Limits(max_connections=AT_ONCE)
        async with httpx.AsyncClient(base_url=rt.url, timeout=60, limits=limits) as client:
            ids: list[str] = []
            for start in range(0, COUNT, AT_ONCE):
                if door == MESSAGE and start % (AT_ONCE * TURNS_PER_CONVERSATION) == 0:
                    made = [await client.post(HISTORY) for _ in range(AT_ONCE)]
                    ids = [r.json()["id"] for r in made]
                batch = range(start, min(start + AT_ONCE, COUNT))
                paths = [
                    MESSAGE.format(id=ids[i % AT_ONCE]) if door == MESSAGE else door for i in batch
                ]
                bodies = [body_for(door, SEED, i) for i in batch]
                answers = await asyncio.gather(
                    *(send(client, p, b) for p, b in zip(paths, bodies, strict=True))
                )
                for i, path, body, (status, headers, data) in zip(
                    batch, paths, bodies, answers, strict=True
                ):
                    code = ""
                    if status >= 400 and headers.get("content-type", "").startswith("application"):
                        try:
                            error = json.loads(data)["error"]
                            code = error["code"] if isinstance(error, dict) else error
                        except (ValueError, KeyError, TypeError):
                            code = "?"
                    statuses[(status, code)] += 1
                    where = f"body_for({name}, {SEED}, {i}) to {path}"
                    if status == 0:
                        problems.append(f"{where}: no answer ({data.decode()}); {body[:120]!r}")
                    elif (why := problem(path, status, headers, data)) is not None:
                        problems.append(f"{where}: {why}; body {body[:160]!r}")

    asyncio.run(main())
    took = time.monotonic() - started
    shown = ", ".join(f"{s} {c}: {n}" for (s, c), n in sorted(statuses.items()))
    print(f"\n{COUNT} fuzz bodies to {door} (seed {SEED}) in {took:.1f} s: {shown}")
    # A connection that broke with no answer: say whether the runtime died under it (Pyodide's
    # fatal error on this runtime: ../shared/repro/pyodide-fatal/README.md).
    fatal = [line for line in rt.log if "Pyodide fatal error" in line]
    assert problems == [], "\n".join([*problems[:20], *fatal[:3]])
    assert max(s for s, _ in statuses) < 500, statuses
    # Still serving, and nothing left behind: no relay, no model call running for nobody.
    with rt.client() as client:
        ok = client.post(
            "/api/v1/chat", json={"messages": [{"role": "user", "content": "still there?"}]}
        )
    assert ok.status_code == 200 and ok.content.endswith(b"event: done\ndata: {}\n\n"), ok.content[
        -200:
    ]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        stats = rt.stats()
        running = [
            c
            for c in rt.calls()
            if c["id"] > first_call and c["closedAt"] is None and c["status"] == 200
        ]
        if not stats["live"] and not running:
            break
        time.sleep(0.05)
    assert stats["live"] == 0 and stats["created"] == stats["destroyed"], stats
    assert running == [], running[:3]


@pytest.mark.parametrize("opener", [b"[", b'{"a":'])
def test_the_14kb_nesting_bomb_is_a_400_and_the_isolate_lives_on(
    fast_runtime: Runtime, opener: bytes
) -> None:
    """The request that bricked the isolate: 7,000 levels, far under the body limit."""
    closer = b"]" if opener == b"[" else b"}"
    bomb = b'{"messages":' + opener * 7000 + b"1" + closer * 7000 + b"}"
    with fast_runtime.client() as client:
        refused = client.post(
            "/api/v1/chat", content=bomb, headers={"content-type": "application/json"}
        )
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_json", (
            refused.text[:300]
        )
        assert "32" in refused.json()["message"]
        for _ in range(3):  # the isolate still answers, again and again
            ok = client.post(
                "/api/v1/chat", json={"messages": [{"role": "user", "content": "after the bomb"}]}
            )
            assert ok.status_code == 200 and ok.content.endswith(b"event: done\ndata: {}\n\n"), (
                ok.content[-200:]
            )
