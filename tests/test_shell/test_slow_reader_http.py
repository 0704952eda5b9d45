"""A client that stops reading (issues 35 and 42), on workerd through the real Ai class: its
answer still arrives whole after the pause, everything the relay made is released, and a paused
client that leaves still closes the model's connection. Once the client's backlog is full
(jsstream.BACKLOG) the relay stops reading the model, so the model is left with most of a long
answer unsent; that is shown with the windows off (one read per network chunk), where the bound
is reached as soon as the kernel's socket buffers are full (with windows the tee's drain reads
ahead: bench/notes/2026-11-29-paused-readers.md). How much memory such a client holds is
measured by bench/probes/slow_reader.py and `make bench-check`'s paused_kb."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from conftest import Runtime, assert_stopped, start_runtime

pytestmark = pytest.mark.runtime

MODEL = "@cf/google/gemma-4-26b-a4b-it"
FILLER = ["stream", "edge", "token", "relay", "python", "worker", "event", "byte"]
# /v1 chunks are ~218 bytes a token: ~6.5 MB, more than Linux lets one socket queue by default
# (tcp_wmem's maximum, 4 MiB, plus the client's 8 KiB): part of it waits inside workerd.
BIG = 30_000


def filler(n: int) -> str:
    """The built-in model's [[tokens:N]] answer (local/model.mjs answerTokens)."""
    return "".join(("" if i == 0 else " ") + FILLER[i % len(FILLER)] for i in range(n))


@pytest.fixture(scope="module")
def big_runtime() -> Iterator[Runtime]:
    """Answers of tens of thousands of tokens, at once unless a prompt sets a rate."""
    rt = start_runtime(vars={"AI_MAX_TOKENS_LIMIT": "100000"}, pace_ms=0)
    yield rt
    rt.stop()


def paused_request(rt: Runtime, path: str, text: str, max_tokens: int) -> socket.socket:
    """POST on a socket with a 4 KiB receive buffer, and read nothing yet."""
    body: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
    body["max_tokens"] = max_tokens
    if path.startswith("/v1/"):
        body.update(model=MODEL, stream=True)
    data = json.dumps(body).encode()
    port = int(rt.url.rsplit(":", 1)[1])
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: the window
    s.connect(("127.0.0.1", port))
    s.sendall(
        b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (path.encode(), len(data), data)
    )
    return s


def read_body(s: socket.socket) -> bytes:
    """Everything until the server closes, de-chunked; the status must be 200."""
    s.settimeout(60)
    parts = []
    while chunk := s.recv(1 << 16):
        parts.append(chunk)
    s.close()
    head, _, rest = b"".join(parts).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    assert b"transfer-encoding: chunked" in head.lower(), head
    out = bytearray()
    at = 0
    while True:
        eol = rest.index(b"\r\n", at)
        size = int(rest[at:eol], 16)
        if size == 0:
            return bytes(out)
        out += rest[eol + 2 : eol + 2 + size]
        at = eol + 2 + size + 2


def masked(body: bytes) -> bytes:
    body = re.sub(rb'"id":"chatcmpl-[0-9a-f]+"', b'"id":"chatcmpl-X"', body)
    return re.sub(rb'"created":\d+', b'"created":0', body)


def our_call(
    rt: Runtime, text: str, done: Callable[[dict[str, Any]], bool], timeout: float = 30
) -> dict[str, Any]:
    """The model's record of the call whose prompt is `text`, once `done` holds for it."""
    deadline = time.monotonic() + timeout
    while True:
        call = next((c for c in rt.calls() if text in json.dumps(c["inputs"])), None)
        if call is not None and done(call):
            return call
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting; the call: {call}")
        time.sleep(0.05)


def wait_until_released(rt: Runtime, before: dict[str, Any]) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while (after := rt.stats())["live"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert after["live"] == 0, f"relays still alive: {after['live']}"
    made = after["created"] - before["created"]
    assert made > 0 and made == after["destroyed"] - before["destroyed"], (before, after)
    return after


def test_a_client_that_reads_nothing_until_the_answer_ended_still_gets_all_of_it(
    big_runtime: Runtime,
) -> None:
    rt = big_runtime
    text = f"[[tokens:{BIG}]] paused"
    before = rt.stats()
    s = paused_request(rt, "/v1/chat/completions", text, BIG + 10)
    # Read nothing until the model has sent its last chunk, or has been held (no chunk for 2 s:
    # then the paused client's backpressure reached it, which bounds the backlog too).
    # The 2 s tells "held" from "still sending": a busy machine only makes a hold look longer.
    seen = {"chunks": -1, "at": time.monotonic()}

    def ended_or_held(call: dict[str, Any]) -> bool:
        if call["chunksSent"] != seen["chunks"]:
            seen.update(chunks=call["chunksSent"], at=time.monotonic())
        return call["finishedAt"] is not None or time.monotonic() - seen["at"] > 2

    try:
        our_call(rt, text, ended_or_held, timeout=90)
    except BaseException:
        s.close()
        raise
    slow = read_body(s)
    assert slow.endswith(b"data: [DONE]\n\n"), slow[-200:]
    contents = [
        json.loads(m) for m in re.findall(rb'"delta":\{"content":("(?:[^"\\]|\\.)*")', slow)
    ]
    assert len(contents) == BIG, len(contents)  # (the role chunk is {"role", "content"})
    assert "".join(contents) == filler(BIG)
    assert b'"finish_reason":"stop"' in slow[-2000:]
    wait_until_released(rt, before)
    # The same answer read as it comes: the same bytes but for the id and `created`.
    with (
        httpx.Client(base_url=rt.url, timeout=60) as http,
        http.stream(
            "POST",
            "/v1/chat/completions",
            json={
                "model": MODEL,
                "stream": True,
                "messages": [{"role": "user", "content": text}],
                "max_tokens": BIG + 10,
            },
        ) as r,
    ):
        fast = b"".join(r.iter_raw())
    assert masked(slow) == masked(fast), (len(slow), len(fast))


@pytest.mark.parametrize("path", ["/api/v1/chat", "/v1/chat/completions"])
def test_a_paused_client_that_leaves_closes_the_model_connection(
    runtime: Runtime, path: str
) -> None:
    before = runtime.stats()
    text = f"[[tokens:4000]][[rate:100]] paused then gone {path}"
    s = paused_request(runtime, path, text, 4000)
    # 40 s of answer; leave unread once the model has sent 200 tokens (2 s of it).
    try:
        our_call(runtime, text, lambda c: c["chunksSent"] >= 200)
    finally:
        s.close()
    call = our_call(
        runtime, text, lambda c: c["clientClosedAt"] is not None or c["finishedAt"] is not None
    )
    assert_stopped(call)
    after = wait_until_released(runtime, before)
    assert after["clients_gone"] - before["clients_gone"] == 1, (before, after)


# More than the socket buffers between the model, workerd and the client can take (~4 MB of
# the model's frames and ~4 MB of ours, measured on this kind of machine): ~8 MB from the model.
LONG = 100_000


def long_answers(**extra: str) -> Iterator[Runtime]:
    """A runtime for LONG-token answers; by default the idle limit far off (a client held back
    that long has its answer stopped: the last test)."""
    rt = start_runtime(
        vars={"AI_MAX_TOKENS_LIMIT": "200000", "UPSTREAM_TIMEOUT_SECONDS": "60", **extra},
        pace_ms=0,
    )
    yield rt
    rt.stop()


@pytest.fixture(scope="module")
def held() -> Iterator[Runtime]:
    yield from long_answers(STREAM_WINDOW_MS="0")


def wire(text: str, n: int) -> bytes:
    """/api/v1/chat's answer to `text` asking [[tokens:n]] (pings left out)."""
    out = [
        b'event: content_block_delta\ndata: {"index":%d,"text":"%s"}\n\n'
        % (i, (("" if i == 0 else " ") + FILLER[i % len(FILLER)]).encode())
        for i in range(n)
    ]
    prompt = len(text.split()) + 3
    usage = {"prompt_tokens": prompt, "completion_tokens": n, "total_tokens": prompt + n}
    out.append(
        b'event: message_stop\ndata: {"stop_reason":"stop","usage":%s}\n\n'
        % json.dumps(usage, separators=(",", ":")).encode()
    )
    return b"".join(out) + b"event: done\ndata: {}\n\n"


def held_back(rt: Runtime, text: str) -> dict[str, Any]:
    """The model's call once it has sent nothing for 2 s (or finished): what a client that
    reads nothing let it send."""
    seen = {"chunks": -1, "at": time.monotonic()}

    def still(call: dict[str, Any]) -> bool:
        if call["chunksSent"] != seen["chunks"]:
            seen.update(chunks=call["chunksSent"], at=time.monotonic())
        return call["finishedAt"] is not None or time.monotonic() - seen["at"] > 2

    return our_call(rt, text, still, timeout=120)


def assert_held_back_then_whole(rt: Runtime, text: str) -> None:
    """A client asks for `text`'s LONG-token answer and reads nothing: the model is left with
    part of it unsent and the relay held back; then the client reads, and gets every byte."""
    before = rt.stats()
    s = paused_request(rt, "/api/v1/chat", text, LONG + 10)
    try:
        call = held_back(rt, text)
        holds = rt.stats()["holds"] - before["holds"]
    except BaseException:
        s.close()
        raise
    assert call["finishedAt"] is None and call["chunksSent"] < call["chunksTotal"], (
        f"the model sent all {call['chunksTotal']} chunks of the answer while the client read "
        f"nothing: the relay did not hold it back ({holds} holds): {call}"
    )
    assert holds >= 1, f"the model stopped but the relay never held back: {call}"
    body = read_body(s)
    got = re.sub(rb"(?m)^:[^\n]*\n\n", b"", body)
    expected = wire(text, LONG)
    assert got == expected, (
        f"{len(got)} bytes, {len(expected)} expected; first difference at "
        f"{next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), None)}"
    )
    after = wait_until_released(rt, before)
    assert after["clients_gone"] == before["clients_gone"], (before, after)


def test_a_client_that_reads_nothing_holds_the_model_back_then_gets_every_byte(
    held: Runtime,
) -> None:
    assert_held_back_then_whole(held, f"[[tokens:{LONG}]] held back")


def test_a_held_back_client_that_leaves_closes_the_model_connection(held: Runtime) -> None:
    rt = held
    text = f"[[tokens:{LONG}]] held back then gone"
    before = rt.stats()
    s = paused_request(rt, "/api/v1/chat", text, LONG + 10)
    try:
        call = held_back(rt, text)
        assert call["finishedAt"] is None, f"the model was not held back: {call}"
        assert rt.stats()["holds"] > before["holds"], "the relay never held back"
    finally:
        s.close()  # with unread data: a reset
    call = our_call(
        rt, text, lambda c: c["clientClosedAt"] is not None or c["finishedAt"] is not None
    )
    assert_stopped(call)
    after = wait_until_released(rt, before)
    assert after["clients_gone"] - before["clients_gone"] == 1, (before, after)


@pytest.fixture(scope="module")
def held_windowed() -> Iterator[Runtime]:
    yield from long_answers()


def test_with_windows_a_client_that_reads_nothing_holds_a_paced_model_back(
    held_windowed: Runtime,
) -> None:
    """The default windowed reader. Its tee's drain reads the model ahead of the relay, so a
    model that sends all at once finishes whatever the client does (the relay holds back only
    once it has caught up: measured, bench/notes/2026-11-29-paused-readers.md). A model that
    sends at a pace the relay keeps up with (10,000 tokens a second here; the relay reads an
    answer sent at once at ~60,000 tokens a CPU-second, bench-check's `whole` cell; Workers AI
    sends well under 1,000) is held back once the socket buffers and the body's backlog are
    full."""
    assert_held_back_then_whole(
        held_windowed, f"[[tokens:{LONG}]] [[rate:10000]] held back by windows"
    )


STALL_SECONDS = 3  # UPSTREAM_TIMEOUT_SECONDS of the runtime below


@pytest.fixture(scope="module")
def stalling() -> Iterator[Runtime]:
    yield from long_answers(STREAM_WINDOW_MS="0", UPSTREAM_TIMEOUT_SECONDS=str(STALL_SECONDS))


def test_a_client_that_reads_nothing_for_the_idle_limit_has_its_answer_stopped(
    stalling: Runtime,
) -> None:
    """Held back for UPSTREAM_TIMEOUT_SECONDS with nothing read, the answer stops: the model's
    connection is closed, and a client that reads after all gets what was held, then the error
    event client_stalled (never a silent end)."""
    rt = stalling
    text = f"[[tokens:{LONG}]] stalled"
    before = rt.stats()
    s = paused_request(rt, "/api/v1/chat", text, LONG + 10)
    try:
        call = our_call(
            rt,
            text,
            lambda c: c["clientClosedAt"] is not None or c["finishedAt"] is not None,
            timeout=120,
        )
        assert rt.stats()["holds"] > before["holds"], f"the relay never held back: {call}"
        assert_stopped(call)
        body = read_body(s)
    finally:
        s.close()
    got = re.sub(rb"(?m)^:[^\n]*\n\n", b"", body)
    ending = (
        b'event: error\ndata: {"error":"client_stalled","message":"The client read nothing for '
        b'%d seconds; the answer was stopped."}\n\nevent: done\ndata: {}\n\n' % STALL_SECONDS
    )
    assert got.endswith(ending), f"the body ends {got[-300:]!r}, not with {ending!r}"
    expected = wire(text, LONG)
    sent = got[: -len(ending)]
    assert expected.startswith(sent) and len(sent) > 1_000_000, (
        f"{len(sent)} bytes before the error, not a prefix of the answer: {sent[-200:]!r}"
    )
    wait_until_released(rt, before)


# The bound on what one paused reader holds in the isolate (issue 42).
PAUSED_BOUND = 256 * 1024
# The Worker's isolate as workerd's inspector lists it under the launcher.
INSPECTED = "core:user:ai-chat"


@pytest.fixture(scope="module")
def inspected() -> Iterator[Runtime]:
    """Windows on (the default), the V8 inspector of the Worker's isolate open."""
    rt = start_runtime(
        "--inspect",
        "0",
        vars={"AI_MAX_TOKENS_LIMIT": "200000", "UPSTREAM_TIMEOUT_SECONDS": "60"},
        pace_ms=0,
    )
    yield rt
    rt.stop()


def isolate_buffers(rt: Runtime) -> int:
    """The isolate's ArrayBuffer backing stores after a full collection, in bytes: where a tee
    keeps what one branch has not read yet (measured: bench/notes/2026-11-29-paused-memory.md).
    workerd runs the collection once the isolate next runs code: a request follows the ask."""
    from websockets.sync.client import connect

    with connect(f"{rt.ready['inspector'].rstrip('/')}/{INSPECTED}", max_size=None) as ws:
        ws.send(json.dumps({"id": 1, "method": "HeapProfiler.collectGarbage"}))
        rt.stats()
        while json.loads(ws.recv(timeout=60)).get("id") != 1:
            pass
        ws.send(json.dumps({"id": 2, "method": "Runtime.getHeapUsage"}))
        while (message := json.loads(ws.recv(timeout=60))).get("id") != 2:
            pass
    return int(message["result"]["backingStorageSize"])


def test_a_paused_reader_holds_a_bounded_amount_in_the_isolate(inspected: Runtime) -> None:
    """While the relay is held back for a client that reads nothing, what it keeps for that
    client in the isolate is bounded: the body's backlog (the relay's census: queued in workerd,
    outside the JS heap) at most BACKLOG and one write, and with the buffers the isolate's JS
    holds (the tee's unread chunks) under 256 KB in all. The model sends at 10,000 tokens a second
    (Workers AI sends well under 1,000), so the tee holds about one window. Then every byte."""
    rt = inspected
    text = f"[[tokens:{LONG}]] [[rate:10000]] bounded in the isolate"
    before = rt.stats()
    buffers_before = isolate_buffers(rt)
    s = paused_request(rt, "/api/v1/chat", text, LONG + 10)
    try:
        call = held_back(rt, text)
        stats = rt.stats()
        buffers = isolate_buffers(rt) - buffers_before
    except BaseException:
        s.close()
        raise
    backlog = stats["backlog_bytes"]
    assert backlog <= 65536 + 16384, f"the paused body holds {backlog} bytes: {call}"
    assert backlog + buffers <= PAUSED_BOUND, (
        f"a paused reader holds {backlog} bytes in its body and {buffers} in the isolate's "
        f"buffers, more than {PAUSED_BOUND}: {call}"
    )
    assert stats["holds"] > before["holds"], f"the relay never held back: {call}"
    got = re.sub(rb"(?m)^:[^\n]*\n\n", b"", read_body(s))
    assert got == wire(text, LONG), f"{len(got)} bytes, {len(wire(text, LONG))} expected"
    wait_until_released(rt, before)
