"""`make memcheck`: the isolate's memory, JS heap and Pyodide's Wasm memory together, under the
loads users make, against the 128 MB Cloudflare ends an isolate past (issue 46).

    python bench/memcheck.py [--limit-mb 128] [--only NAME ...]

Starts the Worker on workerd (`node local/launch.mjs --inspect 0`, the built-in model) and,
while each scenario runs, samples every 50 ms the isolate's JS heap through the V8 inspector
(`Runtime.getHeapUsage`, its usedSize) and the Wasm memory from the Worker's local stats route
(HEAPU8.byteLength: Wasm memory is outside the JS heap, so the two add up). Wasm memory never
shrinks, so each scenario's peak includes what the scenarios before it grew; they run from the
cheapest to the dearest. Prints each peak and workerd's RSS, and exits 1 when a peak passes
--limit-mb.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import websockets

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest import Runtime, start_runtime  # noqa: E402

MB = 1024 * 1024
WORKER = "core:user:ai-chat"  # the Worker's isolate, as the inspector lists it
JSON = {"content-type": "application/json"}
EMBEDDING_MODEL = "@cf/baai/bge-m3"
SMALLER = "@cf/meta/llama-3.1-8b-instruct-fast"


class Sampler:
    """JS heap (inspector) + Wasm (stats route), every 50 ms, while `running`."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.peak_heap = self.peak_wasm = self.peak_sum = 0
        self._id = 0

    def reset(self) -> None:
        self.peak_heap = self.peak_wasm = self.peak_sum = 0

    async def run(self, stop: asyncio.Event) -> None:
        target = self.rt.ready["inspector"].rstrip("/") + "/" + WORKER
        async with (
            websockets.connect(target, max_size=None) as ws,
            httpx.AsyncClient(base_url=self.rt.url, timeout=30) as http,
        ):
            while not stop.is_set():
                self._id += 1
                await ws.send(json.dumps({"id": self._id, "method": "Runtime.getHeapUsage"}))
                while True:
                    message = json.loads(await ws.recv())
                    if message.get("id") == self._id:
                        break
                heap = int(message["result"]["usedSize"])
                wasm = int((await http.get("/__local/stats")).json()["wasm_memory_bytes"])
                self.peak_heap = max(self.peak_heap, heap)
                self.peak_wasm = max(self.peak_wasm, wasm)
                self.peak_sum = max(self.peak_sum, heap + wasm)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.05)


def workerd_rss(root_pid: int) -> int:
    """RSS of the workerd processes under the launcher, in bytes."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,rss=,comm="], capture_output=True, text=True)
    rows = [line.split(None, 3) for line in out.stdout.splitlines() if line.strip()]
    mine, grew = {root_pid}, True
    while grew:
        grew = False
        for pid, ppid, _, _ in rows:
            if int(ppid) in mine and int(pid) not in mine:
                mine.add(int(pid))
                grew = True
    return sum(
        int(rss) * 1024 for pid, _, rss, comm in rows if int(pid) in mine and "workerd" in comm
    )


# --- scenarios ------------------------------------------------------------------------------


async def idle(http: httpx.AsyncClient) -> None:
    await asyncio.sleep(1)


async def streams(http: httpx.AsyncClient) -> None:
    """100 concurrent streams of 400 tokens each."""

    async def one(n: int) -> None:
        body = {
            "model": SMALLER,
            "stream": True,
            "max_tokens": 500,
            "messages": [{"role": "user", "content": f"[[pace:10]] [[tokens:400]] {n}"}],
        }
        async with http.stream("POST", "/v1/chat/completions", json=body) as response:
            async for _ in response.aiter_bytes():
                pass

    await asyncio.gather(*(one(n) for n in range(100)))


async def paused(http: httpx.AsyncClient) -> None:
    """50 readers that take the first bytes of a long answer, then stop reading for 5 s."""

    async def one(n: int) -> None:
        body = {"messages": [{"role": "user", "content": f"[[pace:1]] [[tokens:3000]] {n}"}]}
        async with http.stream("POST", "/api/v1/chat", json=body) as response:
            async for _ in response.aiter_raw():
                break
            await asyncio.sleep(5)

    await asyncio.gather(*(one(n) for n in range(50)))


def embedding_body(encoding: str = "float") -> dict[str, Any]:
    texts = [f"text number {i} " + "word " * 40 for i in range(2048)]
    return {"model": EMBEDDING_MODEL, "input": texts, "encoding_format": encoding}


async def embeddings(http: httpx.AsyncClient) -> None:
    """Five requests of 2,048 inputs each, at once."""
    body = embedding_body()
    answers = await asyncio.gather(*(http.post("/v1/embeddings", json=body) for _ in range(5)))
    print("    embeddings:", [a.status_code for a in answers])


def embedding(encoding: str) -> Callable[[httpx.AsyncClient], Awaitable[None]]:
    """One request of 2,048 inputs, answered as float or base64."""

    async def one(http: httpx.AsyncClient) -> None:
        answer = await http.post("/v1/embeddings", json=embedding_body(encoding))
        print(f"    {encoding}: {answer.status_code}, {len(answer.content)} B")

    return one


async def conversation(http: httpx.AsyncClient) -> None:
    """A conversation of 2 MB, read whole by 20 readers at once."""
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} " + "x" * 100_000}
        for i in range(20)
    ]
    made = await http.post("/api/v1/conversations", json={"messages": messages})
    id = made.json()["id"]
    answers = await asyncio.gather(*(http.get(f"/api/v1/conversations/{id}") for _ in range(20)))
    print(
        "    reads:", sorted({a.status_code for a in answers}), f"{len(answers[0].content)} B each"
    )


async def amplification(http: httpx.AsyncClient) -> None:
    """2,000 item references to a stored 200,000-character item (reasoning, then a user
    message), and a 30-deep previous_response_id chain continued on a smaller window."""
    items = {
        "rs": {
            "type": "reasoning",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "r" * 200_000}],
        },
        "msg": {"role": "user", "content": "[[pace:0]] " + "u" * 200_000},
    }
    for prefix, item in items.items():
        first = await http.post(
            "/v1/responses",
            json={
                "input": [item, {"role": "user", "content": "[[pace:0]] hi"}],
                "max_output_tokens": 8,
            },
        )
        ref = {"type": "item_reference", "id": f"{prefix}_{first.json()['id'][5:]}_i0"}
        for model in (SMALLER, "@cf/openai/gpt-oss-20b"):
            refused = await http.post("/v1/responses", json={"model": model, "input": [ref] * 2000})
            print(f"    2,000 references to {prefix} ({model}): {refused.status_code}")
    previous = None
    for n in range(30):
        body: dict[str, Any] = {
            "input": f"[[pace:0]] {n} " + "word " * 4_000,  # the model echoes: 4 tokens of it
            "max_output_tokens": 4,
        }
        if previous:
            body["previous_response_id"] = previous
        made = await http.post("/v1/responses", json=body)
        if made.status_code != 200:
            raise SystemExit(f"link {n} of the chain: {made.status_code} {made.text[:300]}")
        previous = made.json()["id"]
    refused = await http.post(
        "/v1/responses",
        json={"model": SMALLER, "input": "[[pace:0]] x", "previous_response_id": previous},
    )
    print(f"    30-deep chain on a smaller window: {refused.status_code}")


SCENARIOS: dict[str, Callable[[httpx.AsyncClient], Awaitable[None]]] = {
    "idle": idle,
    "100 concurrent streams": streams,
    "50 paused readers": paused,
    "2 MB conversation, 20 readers": conversation,
    "amplification (2,000 references; a chain)": amplification,
    "one 2,048-input embedding request, base64": embedding("base64"),
    "one 2,048-input embedding request, float": embedding("float"),
    "five 2,048-input embedding requests": embeddings,
}


async def main(args: argparse.Namespace) -> int:
    # A model call's idle limit of a minute, not the tests' 3 s: with every scenario's load on
    # two shared cores, a call answered late is a 504 that ends a scenario before its peak.
    worker_vars = {"MAX_BODY_BYTES": str(8 * MB), "UPSTREAM_TIMEOUT_SECONDS": "60"}
    rt = start_runtime("--inspect", "0", pace_ms=0, vars=worker_vars)
    failed = []
    try:
        sampler = Sampler(rt)
        limits = httpx.Limits(max_connections=200)
        print(f"{'scenario':44} {'heap+Wasm MB':>12} {'heap':>6} {'Wasm':>6} {'RSS':>6}  s")
        for name, scenario in SCENARIOS.items():
            if args.only and not any(o in name for o in args.only):
                continue
            sampler.reset()
            stop = asyncio.Event()
            sampling = asyncio.create_task(sampler.run(stop))
            started = time.monotonic()
            # A client per scenario: no connection kept from the one before.
            async with httpx.AsyncClient(base_url=rt.url, timeout=300, limits=limits) as http:
                await scenario(http)
            await asyncio.sleep(0.2)
            stop.set()
            await sampling
            peak = sampler.peak_sum / MB
            print(
                f"{name:44} {peak:12.1f} {sampler.peak_heap / MB:6.1f} "
                f"{sampler.peak_wasm / MB:6.1f} {workerd_rss(rt.process.pid) / MB:6.0f}  "
                f"{time.monotonic() - started:.1f}",
                flush=True,
            )
            if peak > args.limit_mb:
                failed.append(f"{name}: {peak:.1f} MB")
    finally:
        rt.stop()
    if failed:
        print(f"past {args.limit_mb} MB: " + "; ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit-mb", type=float, default=128.0)
    parser.add_argument("--only", nargs="*", default=[])
    sys.exit(asyncio.run(main(parser.parse_args())))
