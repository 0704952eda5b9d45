"""The same Worker on Cloudflare's own runtime (pywrangler dev), where that runtime can start.

workerd fetches its Pyodide bundle over the network when it starts, and pywrangler fetches
a CPython 3.13 and a Pyodide interpreter for `pywrangler sync`; on a machine that reaches
only the package registries neither is possible, and this test says so instead of passing.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time

import httpx
import pytest

from conftest import ROOT

pytestmark = pytest.mark.workerd

BUNDLE_HOST = "pyodide-capnp-bin.edgeworker.net"


def bundle_reachable() -> str | None:
    try:
        with socket.create_connection((BUNDLE_HOST, 443), timeout=3):
            return None
    except OSError as exc:
        return f"workerd cannot download its Pyodide bundle ({BUNDLE_HOST}: {exc})"


def test_models_route_on_pywrangler_dev() -> None:
    reason = bundle_reachable()
    if reason:
        pytest.skip(reason)
    process = subprocess.Popen(
        ["uv", "run", "pywrangler", "dev", "--ip", "127.0.0.1", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "WRANGLER_SEND_METRICS": "false"},
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 300
        url = None
        output: list[str] = []
        while time.monotonic() < deadline and url is None:
            line = process.stdout.readline()
            if not line:
                break
            output.append(line)
            match = re.search(r"Ready on (http://127\.0\.0\.1:\d+)", line)
            url = match.group(1) if match else None
        assert url is not None, "pywrangler dev did not become ready:\n" + "".join(output[-40:])
        response = httpx.get(url + "/api/v1/models", timeout=30)
        assert response.status_code == 200
        assert response.json()["default"] == "@cf/google/gemma-4-26b-a4b-it"
    finally:
        process.terminate()
        process.wait(timeout=30)
