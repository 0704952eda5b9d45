"""`wrangler dev --local`, the command users know, on this project: it runs the same workerd
(through MINIFLARE_WORKERD_PATH=local/workerd, which adds the offline Pyodide bundle), serves
the assets and every route that needs no model; its AI binding is remote-only ("not
supported" locally), so a chat there answers 502. `make dev` is the local way to chat."""

from __future__ import annotations

import os
import re
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


def test_wrangler_dev_local_serves_assets_and_the_routes_without_a_model() -> None:
    workerd = ROOT / "node_modules" / "@cloudflare" / "workerd-linux-64" / "bin" / "workerd"
    if not workerd.exists():
        pytest.skip(f"no Linux x64 workerd in node_modules ({workerd})")
    port = free_port()
    env = {
        **os.environ,
        "MINIFLARE_WORKERD_PATH": str(ROOT / "local" / "workerd"),
        "REAL_WORKERD": str(workerd),
        "WRANGLER_SEND_METRICS": "false",
        "CI": "true",
    }
    process = subprocess.Popen(
        [
            str(ROOT / "node_modules" / ".bin" / "wrangler"),
            "dev",
            "--local",
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
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
        output = "".join(seen)
        assert "Ready on" in output, output[-3000:]
        assert re.search(r"env\.AI\s+AI\s+not supported", output), output[-3000:]
        base = f"http://127.0.0.1:{port}"
        page = httpx.get(base + "/", timeout=60)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html"), (
            page.text[:200]
        )
        health = httpx.get(base + "/api/v1/health", timeout=60).json()
        assert (
            health["bindings"] == ["AI", "CONVERSATIONS", "KEY_RATE_LIMITER", "RATE_LIMITER"]
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
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
