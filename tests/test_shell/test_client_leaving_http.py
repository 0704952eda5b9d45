"""A client that leaves a whole (non-streamed) answer stops every model call of its request, on
workerd through the real Ai class: one that closes its socket after reading the early head (a
FIN: curl -m 1) and one that resets it (RST). A client that only half-closes and reads on gets
its whole answer. Every wait polls the model's call log and the request log."""

from __future__ import annotations

import json
import socket
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import Runtime, assert_stopped, start_runtime

pytestmark = pytest.mark.runtime

LLAMA = "@cf/meta/llama-3.1-8b-instruct-fast"
SLOW = "[[tokens:200]] [[pace:50]]"  # 10 s of answer: far longer than any wait here
BATCHES = 20  # 2,000 texts, 100 a call
HEAD_AFTER = "0.5"


def doors(tag: str) -> dict[str, tuple[str, dict[str, Any]]]:
    return {
        "chat": (
            "/v1/chat/completions",
            {"model": LLAMA, "messages": [{"role": "user", "content": f"{tag} {SLOW}"}]},
        ),
        "completions": (
            "/v1/completions",
            {"model": LLAMA, "prompt": [f"{tag} {i} {SLOW}" for i in range(4)]},
        ),
        "responses": ("/v1/responses", {"model": LLAMA, "input": f"{tag} {SLOW}", "store": False}),
        "embeddings": (
            "/v1/embeddings",
            {
                "model": "@cf/baai/bge-m3",
                "input": [f"{tag} {i} [[pace:2000]]" for i in range(2000)],
            },
        ),
    }


@pytest.fixture(scope="module")
def leaving() -> Iterator[Runtime]:
    rt = start_runtime(vars={"WHOLE_HEAD_SECONDS": HEAD_AFTER})
    yield rt
    rt.stop()


def poll(what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last: {found!r}")
        time.sleep(0.02)


def send(rt: Runtime, path: str, body: dict[str, Any], rid: str) -> socket.socket:
    host, port = rt.url.split("//")[1].split(":")
    sock = socket.create_connection((host, int(port)))
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"cf-ray: {rid}\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    sock.sendall(head.encode() + data)
    return sock


def read_until(sock: socket.socket, done: Callable[[bytes], bool]) -> bytes:
    sock.settimeout(60)
    got = b""
    while not done(got):
        chunk = sock.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def chunked_body_ended(seen: bytes) -> bool:
    """Whether a chunked response has come whole: its last chunk after the head (a head whose
    last line ends in "0", an x-request-id, say, is not the end of it)."""
    head_ended = b"\r\n\r\n" in seen
    rest = seen.partition(b"\r\n\r\n")[2]
    return head_ended and (rest == b"0\r\n\r\n" or rest.endswith(b"\r\n0\r\n\r\n"))


def calls_of(rt: Runtime, tag: str) -> list[dict[str, Any]]:
    def mine(call: dict[str, Any]) -> bool:
        return tag in json.dumps(call["inputs"])[:2000]

    return [c for c in rt.calls() if mine(c)]


def request_line(rt: Runtime, rid: str) -> dict[str, Any] | None:
    for line in list(rt.log):
        if line.startswith("{") and f'"request_id":"{rid}"' in line:
            parsed = json.loads(line)
            if parsed.get("message") == "request":
                return parsed  # type: ignore[no-any-return]
    return None


@pytest.mark.parametrize("door", ["chat", "completions", "responses", "embeddings"])
@pytest.mark.parametrize("how", ["fin", "rst"])
def test_a_client_that_leaves_stops_every_model_call(leaving: Runtime, door: str, how: str) -> None:
    tag = uuid.uuid4().hex
    rid = f"leave-{how}-{door}-{tag[:8]}"
    path, body = doors(tag)[door]
    sock = send(leaving, path, body, rid)
    if how == "fin":
        # As curl -m 1 does: it reads what comes (the early head, a space), then closes.
        got = read_until(sock, lambda seen: b"\r\n\r\n" in seen)
        assert got.startswith(b"HTTP/1.1 200 "), got
        sock.close()
    else:
        poll("a model call", lambda: calls_of(leaving, tag))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    line = poll("the request line", lambda: request_line(leaving, rid))
    assert (line["status"], line["outcome"], line["code"]) == (499, "client_gone", "client_gone")
    ended = poll(
        "every call to end",
        lambda: (
            (calls := calls_of(leaving, tag))
            and all(c["closedAt"] or c["finishedAt"] for c in calls)
            and calls
        ),
    )
    if door == "embeddings":
        # The batches not yet sent are never sent; those on their way are cut. (The head goes
        # out once a batch has answered, so that a first failure keeps its status: with FIN,
        # the first batches end before the client can be seen to leave.)
        assert len(ended) < BATCHES, f"{len(ended)} of {BATCHES} batches were sent"
        for call in ended:
            assert call["finishedAt"] is not None or call["clientClosedAt"] is not None, call
        if how == "rst":
            assert all(c["finishedAt"] is None for c in ended), ended
    else:
        assert len(ended) == (4 if door == "completions" else 1), ended
        for call in ended:
            assert_stopped(call)


def test_a_client_that_half_closes_and_reads_gets_its_whole_answer(leaving: Runtime) -> None:
    tag = uuid.uuid4().hex
    prompt = f"{tag} [[tokens:40]] [[pace:50]]"
    sock = send(leaving, "/v1/completions", {"model": LLAMA, "prompt": prompt}, f"half-{tag[:8]}")
    sock.shutdown(socket.SHUT_WR)  # the request is sent; the client still reads
    got = read_until(sock, chunked_body_ended)
    sock.close()
    head, _, chunked = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head
    assert b"content-type: application/json" in head.lower(), head
    body = b""
    while chunked:
        size, _, rest = chunked.partition(b"\r\n")
        n = int(size, 16)
        body, chunked = body + rest[:n], rest[n + 2 :]
    assert body.startswith(b" "), body[:20]  # the early head's spaces, then the answer
    answer = json.loads(body)
    assert answer["choices"][0]["finish_reason"] == "stop", answer
    [call] = calls_of(leaving, tag)
    assert call["finishedAt"] is not None and call["chunksSent"] == call["chunksTotal"], call


def test_a_failure_after_the_early_head_is_the_body(leaving: Runtime) -> None:
    """The status went out with the head: a model that falls silent is the error object."""
    tag = uuid.uuid4().hex
    messages = [{"role": "user", "content": f"{tag} [[pace:0]] [[fault:stall]]"}]
    with leaving.client(timeout=60) as http:
        response = http.post("/v1/chat/completions", json={"model": LLAMA, "messages": messages})
    assert response.status_code == 200, response.text
    assert response.text.startswith(" "), response.text[:20]
    assert response.json()["error"]["code"] == "upstream_timeout", response.text


def test_a_client_that_resets_before_a_streamed_answer_starts_is_logged(leaving: Runtime) -> None:
    """A streamed answer whose model call is still queued (a busy model, [[busy:]]) when the
    client resets: the request's context is kept until the answer is made, so the request line
    (and what counts against a budget with it) is still written, and the call ends."""
    tag = uuid.uuid4().hex
    rid = f"leave-queued-{tag[:8]}"
    content = f"{tag} [[busy:llama]] {SLOW}"
    sock = send(
        leaving,
        "/api/v1/chat",
        {"model": LLAMA, "messages": [{"role": "user", "content": content}]},
        rid,
    )
    poll("a model call", lambda: calls_of(leaving, tag))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    line = poll("the request line", lambda: request_line(leaving, rid))
    assert (line["status"], line["outcome"]) == (499, "client_gone"), line
    [call] = poll(
        "the call to end",
        lambda: [c for c in calls_of(leaving, tag) if c["closedAt"] or c["finishedAt"]],
    )
    assert call["finishedAt"] is None and call["chunksSent"] == 0, call
