"""The Wasm stack pointer per request, by kind of request, on the project's Worker (issue 22).

    python bench/probes/stack_check.py PYODIDE_DIR [KIND:N:CONCURRENCY ...]

Starts `node local/launch.mjs --snapshot off` with the Pyodide bundle in PYODIDE_DIR, sends each
batch (kinds: models, health, badjson, stream, whole), and prints how far the stack pointer on
the Worker's /__local/stats moved per request, and the `Default` objects alive after a collection.
Default batches: models:200:1 badjson:200:1 stream:200:1 stream:400:16."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
CHAT = {"messages": [{"role": "user", "content": "[[tokens:5]] hi"}]}


async def batch(url: str, kind: str, n: int, concurrency: int) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        todo = list(range(n))

        async def worker() -> None:
            while todo:
                todo.pop()
                if kind == "models":
                    await client.get("/api/v1/models")
                elif kind == "health":
                    await client.get("/api/v1/health")
                elif kind == "badjson":
                    await client.post(
                        "/api/v1/chat",
                        content=b'{"messages": [',
                        headers={"content-type": "application/json"},
                    )
                elif kind == "whole":
                    await client.post("/v1/chat/completions", json=CHAT)
                elif kind == "stream":
                    await client.post("/api/v1/chat", json=CHAT)
                else:
                    raise SystemExit(f"unknown kind {kind!r}")

        await asyncio.gather(*(worker() for _ in range(concurrency)))


def main() -> None:
    pyodide_dir, plan = (
        sys.argv[1],
        sys.argv[2:] or ["models:200:1", "badjson:200:1", "stream:200:1", "stream:400:16"],
    )
    proc = subprocess.Popen(
        [
            "node",
            "local/launch.mjs",
            "--port",
            "0",
            "--snapshot",
            "off",
            "--pace",
            "1",
            "--ratelimit",
            "1000000000/10",
            "--exit-on-stdin-eof",
        ],
        cwd=ROOT,
        env=dict(os.environ, WORKERD_PYODIDE_DIR=pyodide_dir),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    url = ""
    for line in proc.stdout:
        if '"message":"ready"' in line:
            url = str(json.loads(line)["url"]).rstrip("/")
            break
    threading.Thread(
        target=lambda: [None for _ in proc.stdout or []], daemon=True
    ).start()  # keep draining

    def stats() -> dict[str, Any]:
        return httpx.get(url + "/__local/stats", timeout=60).json()  # type: ignore[no-any-return]

    try:
        print(
            f"Pyodide bundle {pyodide_dir}; stack pointer at start {stats()['wasm_stack_pointer']}"
        )
        for item in plan:
            kind, n, concurrency = item.split(":")
            before = stats()
            asyncio.run(batch(url, kind, int(n), int(concurrency)))
            after = stats()
            moved = (before["wasm_stack_pointer"] - after["wasm_stack_pointer"]) / int(n)
            print(
                f"{kind} x{n}, {concurrency} at once: stack pointer {before['wasm_stack_pointer']} -> {after['wasm_stack_pointer']}"
                f" ({moved:.1f} bytes per request); Default objects {before['py_types'].get('Default', 0)} -> {after['py_types'].get('Default', 0)}"
            )
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


main()
