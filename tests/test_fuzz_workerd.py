"""The fuzz bodies over real HTTP on workerd: no undocumented status, no crash, the Worker
still answers a normal chat afterwards, and nothing is left live on its stats route.

    make test runs 600 bodies; a longer run (the issue asks for >= 10,000):
    FUZZ_HTTP_COUNT=10000 FUZZ_SEED=5 .venv/bin/python -m pytest -q -s tests/test_fuzz_workerd.py
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from conftest import Runtime, start_runtime
from fuzz import bodies, problem

pytestmark = pytest.mark.runtime

COUNT = int(os.environ.get("FUZZ_HTTP_COUNT", "600"))
SEED = int(os.environ.get("FUZZ_SEED", "1"))


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


@pytest.mark.timeout(max(120, COUNT // 20))
def test_fuzz_bodies_over_http_on_workerd(fast_runtime: Runtime) -> None:
    rt = fast_runtime
    statuses: Counter[int] = Counter()
    problems: list[str] = []
    started = time.monotonic()

    async def main() -> None:
        limits = httpx.Limits(max_connections=16)
        async with httpx.AsyncClient(base_url=rt.url, timeout=30, limits=limits) as client:
            work = list(bodies(SEED, COUNT))
            for start in range(0, len(work), 16):
                batch = work[start : start + 16]
                answers = await asyncio.gather(*(send(client, path, body) for path, body in batch))
                for i, ((path, body), (status, headers, data)) in enumerate(
                    zip(batch, answers, strict=False)
                ):
                    statuses[status] += 1
                    if status == 0:
                        problems.append(
                            f"body #{start + i} (seed {SEED}) to {path}: no answer ({data.decode()}); body {body[:120]!r}"
                        )
                    elif (why := problem(path, status, headers, data)) is not None:
                        problems.append(
                            f"body #{start + i} (seed {SEED}) to {path}: {why}; body {body[:120]!r}"
                        )

    asyncio.run(main())
    took = time.monotonic() - started
    print(
        f"\n{COUNT} fuzz bodies over HTTP on workerd (seed {SEED}) in {took:.1f} s: statuses {dict(sorted(statuses.items()))}"
    )
    assert problems == [], "\n".join(problems[:20])
    assert max(statuses) < 500, statuses
    # Still serving, and nothing left behind.
    with rt.client() as client:
        ok = client.post(
            "/api/v1/chat", json={"messages": [{"role": "user", "content": "still there?"}]}
        )
    assert ok.status_code == 200 and ok.content.endswith(b"event: done\ndata: {}\n\n"), ok.content[
        -200:
    ]
    deadline = time.monotonic() + 5
    while (stats := rt.stats())["live"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stats["live"] == 0 and stats["created"] == stats["destroyed"], stats


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
