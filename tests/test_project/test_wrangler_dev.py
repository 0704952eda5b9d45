"""The commands Cloudflare documents, as the README gives them (docs/OPERATING.md#wrangler-dev):
`make wrangler-dev` is `wrangler dev --local` on the same workerd (through
MINIFLARE_WORKERD_PATH=local/workerd, which adds the offline Pyodide bundle): it serves the assets
and every route that needs no model; its AI binding is remote-only ("not supported" locally), so
a chat there answers 502. `make pywrangler-dev` runs workers-py's `pywrangler dev` with the pinned
uv on PATH. `make dev` is the local way to chat."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import time

import httpx
import pytest
from conftest import ROOT

pytestmark = pytest.mark.runtime


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make(target: str, port: int) -> subprocess.Popen[str]:
    """`make TARGET PORT=N` in a process group of its own, so that stopping it stops wrangler
    and workerd under it."""
    return subprocess.Popen(
        ["make", "--no-print-directory", target, f"PORT={port}"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "WRANGLER_SEND_METRICS": "false", "CI": "true"},
        start_new_session=True,
    )


def stop(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    if process.stdout is not None:
        process.stdout.close()


def until_ready(process: subprocess.Popen[str]) -> str:
    """What the dev server printed up to its "Ready on" line, its end, or 180 s."""
    assert process.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if re.search(r"Ready on http://127\.0\.0\.1:\d+", line):
            break
    return "".join(seen)


def test_wrangler_dev_local_serves_assets_and_the_routes_without_a_model() -> None:
    port = free_port()
    process = make("wrangler-dev", port)
    try:
        output = until_ready(process)
        assert "Ready on" in output, output[-3000:]
        assert re.search(r"env\.AI\s+AI\s+not supported", output), output[-3000:]
        base = f"http://127.0.0.1:{port}"
        page = httpx.get(base + "/", timeout=60)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html"), (
            page.text[:200]
        )
        health = httpx.get(base + "/api/v1/health", timeout=60).json()
        assert (
            health["bindings"]
            == [
                "AI",
                "BUDGETS",
                "CONVERSATIONS",
                "KEY_RATE_LIMITER",
                "OWNERS",
                "RATE_LIMITER",
                "READ_RATE_LIMITER",
                "RESPONSES",
            ]
            and health["environment"] == "development"
        ), health
        models = httpx.get(base + "/api/v1/models", timeout=60).json()
        assert models["default"] == "@cf/google/gemma-4-26b-a4b-it", models
        # env.AI.models() fails here too (remote-only): the static table answers, and says so.
        assert (
            models["capabilities"]["@cf/google/gemma-4-26b-a4b-it"]["context_window"] == 256_000
        ), models
        assert httpx.get(base + "/api/v1/health", timeout=60).json()["catalog"] == "static"
        chat = httpx.post(
            base + "/api/v1/chat",
            json={"messages": [{"role": "user", "content": "hi"}]},
            headers={"sec-fetch-site": "same-origin"},
            timeout=60,
        )
        assert (chat.status_code, chat.json()["error"]) == (502, "upstream_error"), chat.text
    finally:
        stop(process)


def test_pywrangler_dev_finds_the_pinned_uv_and_runs_its_sync() -> None:
    """Online it syncs and serves as wrangler dev does; offline (these machines) its sync stops at
    uv's download of CPython, which proves the pinned uv was found: before, it failed with
    "Command not found: uv"."""
    port = free_port()
    process = make("pywrangler-dev", port)
    try:
        output = until_ready(process)
        assert "Command not found" not in output, output[-3000:]
        if "Ready on" in output:  # online: the Worker answers
            health = httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=60)
            assert health.json()["runtime"]["pyodide"] == "314.0.4", health.text
        else:
            assert (
                re.search(r"uv venv \S*\.venv-workers", output) and "Failed to download" in output
            ), output[-3000:]
    finally:
        stop(process)
