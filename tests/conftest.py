from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from _pytest.mark.expression import Expression

if TYPE_CHECKING:
    import openai
    import tiktoken

ROOT = Path(__file__).resolve().parent.parent
# The offline Pyodide bundle beside the checkout, as the Makefile and the launcher find it, for
# every runtime a test starts (wrangler dev included) when the variable is not set.
_SHARED_PYODIDE = ROOT.parent / "shared" / "workerd-pyodide"
if not os.environ.get("WORKERD_PYODIDE_DIR") and _SHARED_PYODIDE.is_dir():
    os.environ["WORKERD_PYODIDE_DIR"] = str(_SHARED_PYODIDE)
# The Node 22 the Makefile fetched where the machine's node is older (wrangler 4.131 needs 22):
# first on PATH for every node a test starts, also when pytest runs outside make.
for _node in sorted(
    (ROOT / ".cache" / "bootstrap" / "node" / "node_modules").glob("node-*/bin/node")
):
    os.environ["PATH"] = f"{_node.parent}{os.pathsep}{os.environ['PATH']}"
PACE_MS = 15
# The idle limit is short so that timeouts are quick to test, and not shorter: on a loaded
# 2-core machine a model's first byte can take over a second to come (issue 22's CI failure).
IDLE_LIMIT = 3.0
TEST_VARS = {"STREAM_PING_SECONDS": "0.25", "UPSTREAM_TIMEOUT_SECONDS": f"{IDLE_LIMIT:g}"}
# The suites send thousands of chats from 127.0.0.1 (what miniflare puts in CF-Connecting-IP):
# wrangler.toml's rate limit would refuse most of them. tests/test_surface/test_abuse_http.py sets its own.
TEST_RATELIMIT = "1000000/60"


class Runtime:
    """The Worker on workerd (local/launch.mjs), its built-in model and the launcher's control."""

    def __init__(self, process: subprocess.Popen[str], ready: dict[str, Any]) -> None:
        self.process = process
        self.url = str(ready["url"]).rstrip("/")
        self.model_url = str(ready["model"]).rstrip("/")
        self.control_url = str(ready["control"]).rstrip("/")
        self.ready = ready
        self.log: list[str] = []
        self.reader: threading.Thread

    def client(self, **kwargs: object) -> httpx.Client:
        kwargs.setdefault("timeout", 10)
        return httpx.Client(base_url=self.url, **kwargs)  # type: ignore[arg-type]

    def calls(self) -> list[dict[str, Any]]:
        return httpx.get(self.model_url + "/__local/calls").json()  # type: ignore[no-any-return]

    def last_call(self) -> dict[str, Any]:
        return self.calls()[-1]

    def set_vars(self, **values: str | None) -> None:
        """Like a dashboard change: a new version of the Worker (workerd restarts)."""
        httpx.put(self.control_url + "/__local/vars", json=values, timeout=120).raise_for_status()

    def stats(self) -> dict[str, Any]:
        return httpx.get(self.url + "/__local/stats").json()  # type: ignore[no-any-return]

    def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 5.0
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            call = self.last_call()
            if predicate(call):
                return call
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting; last call: {call}")
            time.sleep(0.01)

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.reader.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_runtime(
    *extra: str,
    vars: dict[str, str] | None = None,
    pace_ms: int = PACE_MS,
    ratelimit: str | tuple[str, ...] = TEST_RATELIMIT,
    capture_stderr: bool = False,
    root: Path = ROOT,
) -> Runtime:
    """capture_stderr: workerd's and the launcher's stderr go to runtime.log as well. root: the
    project to run (a copy, for the tests that change the Worker)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed")
    if not (ROOT / "node_modules" / "miniflare").exists():
        pytest.fail("node_modules is missing: run `npm ci`")
    args = [node, "local/launch.mjs", "--port", "0", "--pace", str(pace_ms), "--exit-on-stdin-eof"]
    for limit in (ratelimit,) if isinstance(ratelimit, str) else ratelimit:
        args += ["--ratelimit", limit]
    for key, value in {**TEST_VARS, **(vars or {})}.items():
        args += ["--var", f"{key}={value}"]
    process = subprocess.Popen(
        [*args, *extra],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if capture_stderr else sys.stderr,
        text=True,
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 180
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith("{") and '"message":"ready"' in line:
            runtime = Runtime(process, json.loads(line))
            runtime.reader = threading.Thread(
                target=runtime.log.extend, args=(process.stdout or [],), daemon=True
            )
            runtime.reader.start()
            return runtime
    process.kill()
    pytest.fail("the launcher did not start workerd:\n" + "".join(seen[-30:]))


_START_FAILED: list[str] = []


@pytest.fixture
def client(runtime: Runtime) -> Iterator[openai.OpenAI]:
    """The openai SDK on the shared runtime's /v1, as the OpenAI-door tests use it (a file may
    define its own `client` with other settings)."""
    import openai  # here, not at the top: host tests need not load it

    with openai.OpenAI(
        base_url=runtime.url + "/v1", api_key="unused", max_retries=0, timeout=30
    ) as c:
        yield c


@pytest.fixture(scope="session")
def runtime() -> Iterator[Runtime]:
    if _START_FAILED:  # fail every later test at once, not by starting workerd again
        pytest.fail(_START_FAILED[0])
    started = time.monotonic()
    try:
        rt = start_runtime()
    except pytest.fail.Exception as exc:
        _START_FAILED.append(str(exc))
        raise
    print(f"\nworkerd: ready in {rt.ready['ms']} ms (fixture {time.monotonic() - started:.2f}s)")
    yield rt
    rt.stop()


@pytest.fixture(scope="session")
def stateless_runtime() -> Iterator[Runtime]:
    """The Worker without its CONVERSATIONS binding: the page as it is without durable
    conversations (its chats kept in the browser, answers on /api/v1/chat)."""
    rt = start_runtime("--no-conversations")
    yield rt
    rt.stop()


def assert_stopped(call: dict[str, Any]) -> None:
    """The model saw its connection closed before the answer's end and wrote nothing after:
    counted in the model's chunks, not timed. How soon after the client left the close comes
    is the bench's to measure (make bench-check: "client gone -> model closed")."""
    assert call["clientClosedAt"] is not None and call["finishedAt"] is None, (
        f"the model finished or never saw a close: {call}"
    )
    assert call["chunksSent"] == call["chunksAtClose"], f"the model wrote after the close: {call}"
    assert call["chunksTotal"] == 0 or call["chunksAtClose"] < call["chunksTotal"], (
        f"the whole answer went out: {call}"
    )


def leave_mid_answer(rt: Runtime, path: str, body: dict[str, Any], marker: bytes) -> None:
    """POST a streamed answer, read until `marker` came 3 times, then leave."""
    with (
        httpx.Client(base_url=rt.url, timeout=30) as http,
        http.stream("POST", path, json=body) as r,
    ):
        assert r.status_code == 200, r.read()
        seen = 0
        for chunk in r.iter_raw():
            seen += chunk.count(marker)
            if seen >= 3:
                break


def parse_sse(raw: bytes) -> list[tuple[str, object]]:
    """A strict reader of our protocol: (event, parsed data) pairs, (':', comment) for comments."""
    events: list[tuple[str, object]] = []
    assert raw == b"" or raw.endswith(b"\n\n"), raw[-80:]
    for block in raw.decode().split("\n\n")[:-1]:
        if block.startswith(":"):
            events.append((":", block[1:].strip()))
            continue
        lines = block.split("\n")
        assert (
            lines[0].startswith("event: ") and lines[1].startswith("data: ") and len(lines) == 2
        ), block
        events.append((lines[0][7:], json.loads(lines[1][6:])))
    return events


def expected_tokens(messages: list[dict[str, str]]) -> list[str]:
    """The built-in model's answer (local/model.mjs answerTokens), derived independently."""
    said = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    clean = re.sub(r"\[\[\w+:[\w.-]+\]\]", "", said).strip()
    if not clean:
        said_part = "You said nothing."
    elif clean[-1] in ".!?…":  # a sentence that ends itself takes no second full stop
        said_part = f"You said: {clean}"
    else:
        said_part = f"You said: {clean}."
    text = (
        f"{said_part} This answer comes from the built-in offline model, "
        f"one token at a time, in turn {len(messages)}."
    )
    return re.findall(r"\s*\S+", text)


# What a request that asks no reasoning effort sends each model under AI_THINKING's default
# (off): gemma-4 and glm-4.7-flash switch thinking off in their template; gpt-oss cannot be
# turned off and gets its lowest level; a model that does not reason gets nothing.
THINKING_OFF: dict[str, dict[str, object]] = {
    "@cf/google/gemma-4-26b-a4b-it": {"chat_template_kwargs": {"enable_thinking": False}},
    "@cf/zai-org/glm-4.7-flash": {"chat_template_kwargs": {"enable_thinking": False}},
    "@cf/openai/gpt-oss-20b": {"reasoning_effort": "low"},
    "@cf/openai/gpt-oss-120b": {"reasoning_effort": "low"},
    "@cf/meta/llama-3.1-8b-instruct-fast": {},
    "@cf/meta/llama-3.1-8b-instruct": {},
}


def expected_usage(messages: list[dict[str, str]]) -> dict[str, int]:
    prompt = sum(len(m["content"].split()) + 3 for m in messages)
    completion = len(expected_tokens(messages))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def expected_wire(messages: list[dict[str, str]], stop_reason: str = "stop") -> bytes:
    out = b""
    for i, token in enumerate(expected_tokens(messages)):
        out += b'event: content_block_delta\ndata: {"index":%d,"text":%s}\n\n' % (
            i,
            json.dumps(token).encode(),
        )
    usage = json.dumps(expected_usage(messages), separators=(",", ":")).encode()
    out += b'event: message_stop\ndata: {"stop_reason":"%s","usage":%s}\n\n' % (
        stop_reason.encode(),
        usage,
    )
    return out + b"event: done\ndata: {}\n\n"


_RUNTIME_MODULE = re.compile(r"^pytestmark = pytest\.mark\.runtime$", re.MULTILINE)
_MARK_NAME = re.compile(r"pytest\.mark\.(\w+)")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A module of runtime tests only (its `pytestmark = pytest.mark.runtime` line) is not
    imported when `-m` selects none of its tests: importing it loads the client SDKs it drives
    the Worker with (openai, LangChain, the Agents SDK, tiktoken), seconds of every host run.
    Its tests are then neither collected nor counted as deselected."""
    markexpr: str = config.option.markexpr
    if not markexpr or collection_path.suffix != ".py" or not collection_path.is_file():
        return None
    source = collection_path.read_text(encoding="utf-8")
    if not _RUNTIME_MODULE.search(source):
        return None
    # A test there carries `runtime` and any of the marks the module names: the module is
    # skipped only when the expression rejects every such combination.
    others = sorted(set(_MARK_NAME.findall(source)) - {"runtime"})
    expression = Expression.compile(markexpr)
    for bits in range(2 ** len(others)):
        marks = {"runtime"} | {name for i, name in enumerate(others) if bits >> i & 1}
        if expression.evaluate(lambda name, /, marks=marks, **kwargs: not kwargs and name in marks):
            return None
    return True


def pytest_report_header() -> list[str]:
    return [
        f"node: {shutil.which('node')}",
        f"CI: {os.environ.get('CI', '')}",
        f"WORKERD_PYODIDE_DIR: {os.environ.get('WORKERD_PYODIDE_DIR', '(unset: the launcher uses ../shared/workerd-pyodide if there, else workerd downloads its bundle)')}",
    ]


def builtin_vectors(texts: list[str], width: int) -> list[list[float]]:
    """The built-in model's vectors, from its own function (local/model.mjs embeddingVector)."""
    script = (
        "const m = await import('./local/model.mjs');"
        "const [texts, width] = JSON.parse(process.argv[1]);"
        "console.log(JSON.stringify(texts.map((t) => m.embeddingVector(t, width))));"
    )
    node = shutil.which("node") or "node"
    out = subprocess.run(
        [node, "--input-type=module", "-e", script, json.dumps([texts, width])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    vectors: list[list[float]] = json.loads(out.stdout)
    return vectors


# tiktoken's cl100k_base offline: tiktoken reads TIKTOKEN_CACHE_DIR/<sha1 of the blob's URL>
# (base64 token, a space, its rank, a line each) and checks its sha256, so the file is rebuilt
# here from the pinned js-tiktoken, the same source as the Worker's table (scripts/token-table.mjs)
# but read by other code, and must come out byte for byte as OpenAI's.
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
JS_TIKTOKEN_CL100K = ROOT / "node_modules" / "js-tiktoken" / "dist" / "ranks" / "cl100k_base.js"


def tiktoken_file() -> bytes:
    """OpenAI's cl100k_base.tiktoken, from js-tiktoken's `export default {...json...};`."""
    source = JS_TIKTOKEN_CL100K.read_text(encoding="utf-8").strip()
    prefix = "export default "
    assert source.startswith(prefix) and source.endswith(";"), "js-tiktoken changed its format"
    ranks: dict[int, str] = {}
    for line in json.loads(source[len(prefix) : -1])["bpe_ranks"].split("\n"):
        if line:
            _, first, *tokens = line.split(" ")
            ranks.update((int(first) + i, token) for i, token in enumerate(tokens))
    return "".join(f"{ranks[rank]} {rank}\n" for rank in sorted(ranks)).encode("ascii")


@pytest.fixture(scope="session")
def cl100k(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tiktoken.Encoding]:
    """tiktoken's own cl100k_base Encoding, loaded offline (and so LangChain's default path)."""
    import hashlib

    import tiktoken

    data = tiktoken_file()
    assert hashlib.sha256(data).hexdigest() == CL100K_SHA256, "not OpenAI's cl100k_base file"
    cache = tmp_path_factory.mktemp("tiktoken")
    (cache / hashlib.sha1(CL100K_URL.encode()).hexdigest()).write_bytes(data)
    before = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        yield tiktoken.get_encoding("cl100k_base")
    finally:
        if before is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = before
