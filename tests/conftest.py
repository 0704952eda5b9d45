from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACE_MS = 15
TEST_VARS = {"STREAM_PING_SECONDS": "0.25", "UPSTREAM_TIMEOUT_SECONDS": "1.2"}


class Runtime:
    def __init__(self, process: subprocess.Popen[str], url: str, boot_line: str) -> None:
        self.process = process
        self.url = url
        self.boot_line = boot_line
        self.log: list[str] = []
        self.reader: threading.Thread

    def client(self, **kwargs: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10, **kwargs)  # type: ignore[arg-type]

    def calls(self) -> list[dict[str, object]]:
        return httpx.get(self.url + "/__local/calls").json()  # type: ignore[no-any-return]

    def last_call(self) -> dict[str, object]:
        return self.calls()[-1]

    def set_vars(self, **values: str | None) -> None:
        httpx.put(self.url + "/__local/vars", json=values).raise_for_status()

    def stats(self) -> dict[str, object]:
        return httpx.get(self.url + "/__local/stats").json()  # type: ignore[no-any-return]

    def wait_for(self, predicate: object, timeout: float = 5.0) -> dict[str, object]:
        deadline = time.monotonic() + timeout
        while True:
            call = self.last_call()
            if predicate(call):  # type: ignore[operator]
                return call
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting; last call: {call}")
            time.sleep(0.01)


def start_runtime(*extra: str) -> Runtime:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed")
    if not (ROOT / "node_modules" / "pyodide").exists():
        pytest.fail("node_modules is missing: run `npm ci`")
    args = [node, "runtime/server.mjs", "--port", "0", "--pace", str(PACE_MS), "--exit-on-stdin-eof"]
    for key, value in TEST_VARS.items():
        args += ["--var", f"{key}={value}"]
    process = subprocess.Popen(
        [*args, *extra], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr, text=True
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    line = ""
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        match = re.search(r"on (http://127\.0\.0\.1:\d+)/", line)
        if match:
            runtime = Runtime(process, match.group(1), line.strip())
            runtime.reader = threading.Thread(target=lambda: runtime.log.extend(process.stdout or []), daemon=True)
            runtime.reader.start()
            return runtime
    process.kill()
    pytest.fail(f"local runtime did not start: {line!r}")


@pytest.fixture(scope="session")
def runtime() -> Iterator[Runtime]:
    started = time.monotonic()
    rt = start_runtime()
    print(f"\nlocal runtime: {rt.boot_line} (fixture {time.monotonic() - started:.2f}s)")
    yield rt
    assert rt.process.stdin is not None
    rt.process.stdin.close()
    try:
        rt.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        rt.process.kill()
        rt.process.wait()
    rt.reader.join(timeout=5)
    if rt.process.stdout is not None:
        rt.process.stdout.close()


def assert_stopped(call: dict[str, object]) -> None:
    """After the cancel the model saw no read, no pull, and produced nothing more."""
    assert call["cancelledAt"] is not None
    assert call["readsAfterCancel"] == 0 and call["pullsAfterCancel"] == 0
    assert call["chunksSent"] == call["chunksAtCancel"]
    pulls = call["pulls"]
    assert isinstance(pulls, int) and pulls >= 1  # the counters are live: the model was read before


def parse_sse(raw: bytes) -> list[tuple[str, object]]:
    """A strict reader of our protocol: (event, parsed data) pairs, (':', comment) for comments."""
    events: list[tuple[str, object]] = []
    assert raw == b"" or raw.endswith(b"\n\n"), raw[-80:]
    for block in raw.decode().split("\n\n")[:-1]:
        if block.startswith(":"):
            events.append((":", block[1:].strip()))
            continue
        lines = block.split("\n")
        assert lines[0].startswith("event: ") and lines[1].startswith("data: ") and len(lines) == 2, block
        events.append((lines[0][7:], json.loads(lines[1][6:])))
    return events


def expected_tokens(messages: list[dict[str, str]]) -> list[str]:
    """The built-in model's answer (runtime/model.mjs answerTokens), derived independently."""
    said = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    clean = re.sub(r"\[\[\w+:[\w.-]+\]\]", "", said).strip()
    text = (
        f"You said: {clean}. This answer comes from the built-in offline model, "
        f"one token at a time, in turn {len(messages)}."
    )
    return re.findall(r"\s*\S+", text)


def expected_usage(messages: list[dict[str, str]]) -> dict[str, int]:
    prompt = sum(len(m["content"].split()) + 3 for m in messages)
    completion = len(expected_tokens(messages))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def expected_wire(messages: list[dict[str, str]], stop_reason: str = "stop") -> bytes:
    out = b""
    for i, token in enumerate(expected_tokens(messages)):
        out += b'event: content_block_delta\ndata: {"index":%d,"text":%s}\n\n' % (i, json.dumps(token).encode())
    usage = json.dumps(expected_usage(messages), separators=(",", ":")).encode()
    out += b'event: message_stop\ndata: {"stop_reason":"%s","usage":%s}\n\n' % (stop_reason.encode(), usage)
    return out + b"event: done\ndata: {}\n\n"


def pytest_report_header() -> list[str]:
    return [f"node: {shutil.which('node')}", f"CI: {os.environ.get('CI', '')}"]
