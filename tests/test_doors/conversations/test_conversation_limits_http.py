"""A durable conversation's bounds on workerd (issue 33): MAX_CONVERSATION_BYTES counts the
message being added and is never passed, not by one byte, whatever the answer does;
MAX_IMAGES counts what a request sent, MAX_CONVERSATION_IMAGES what the conversation holds."""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import Runtime, assert_stopped, start_runtime

pytestmark = pytest.mark.runtime

LIMIT = 200_000
IMAGES = 10
BASE = "/api/v1/conversations"
PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 64).decode()


@pytest.fixture(scope="module")
def bounded() -> Iterator[Runtime]:
    rt = start_runtime(
        vars={"MAX_CONVERSATION_BYTES": str(LIMIT), "MAX_CONVERSATION_IMAGES": str(IMAGES)}
    )
    yield rt
    rt.stop()


def create(rt: Runtime, history: list[dict[str, Any]] | None = None) -> str:
    body = {"messages": history} if history else None
    response = httpx.post(rt.url + BASE, json=body, timeout=10)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def read(rt: Runtime, id: str) -> dict[str, Any]:
    response = httpx.get(f"{rt.url}{BASE}/{id}", timeout=10)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def post(rt: Runtime, id: str, content: object) -> httpx.Response:
    return httpx.post(f"{rt.url}{BASE}/{id}/messages", json={"content": content}, timeout=60)


def events(raw: bytes) -> list[tuple[str, str]]:
    """(event, data) of each event, comments left out."""
    out = []
    for block in raw.decode().split("\n\n")[:-1]:
        if not block.startswith(":"):
            lines = dict(line.split(": ", 1) for line in block.split("\n"))
            out.append((lines["event"], lines["data"]))
    return out


def stored_bytes(messages: list[dict[str, Any]], turns: list[bytes]) -> int:
    """The count, from outside: each message's content as JSON and its reasoning, each
    event as stored (its block without the id line), in UTF-8 bytes."""
    size = sum(
        len(json.dumps(m["content"], ensure_ascii=False).encode())
        + len(m.get("reasoning", "").encode())
        for m in messages
    )
    for raw in turns:
        size += sum(len(f"event: {e}\ndata: {d}\n\n".encode()) for e, d in events(raw))
    return size


def test_the_limit_counts_the_message_being_added(bounded: Runtime) -> None:
    """The issue's case: at 198,000 of 200,000 bytes, a 700,000-character message was taken
    before its 413. Now it is refused before any model call, and nothing is kept."""
    id = create(bounded, [{"role": "user", "content": "a" * 197_998}])
    assert read(bounded, id)["bytes"] == 198_000
    calls = len(bounded.calls())
    refused = post(bounded, id, "b" * 700_000)
    assert refused.status_code == 413, refused.text
    assert refused.json() == {
        "error": "conversation_too_large",
        "message": "content: this message (700002 bytes) would take this conversation past its limit of 200000 bytes (MAX_CONVERSATION_BYTES); start a new one.",
    }
    assert len(bounded.calls()) == calls
    assert read(bounded, id)["bytes"] == 198_000


def test_an_answer_that_would_pass_the_limit_is_cut_before_it_does(bounded: Runtime) -> None:
    id = create(bounded, [{"role": "user", "content": "a" * 190_000}])
    response = post(bounded, id, "[[tokens:3000]] [[pace:3]] fill it up")
    assert response.status_code == 200, response.text
    got = events(response.content)
    assert got[-2:] == [
        (
            "error",
            '{"error":"conversation_too_large","message":"The conversation has reached its size limit (MAX_CONVERSATION_BYTES); start a new one."}',
        ),
        ("done", "{}"),
    ]
    text = "".join(json.loads(d)["text"] for e, d in got if e == "content_block_delta")
    after = read(bounded, id)
    last = dict(after["messages"][-1])
    details = last.pop("details")
    assert last == {"role": "assistant", "content": text} and text
    # How it ended is kept with it: a reload shows the same error under it.
    assert details["error"]["code"] == "conversation_too_large", details
    assert after["bytes"] == stored_bytes(after["messages"], [response.content]) <= LIMIT
    assert_stopped(bounded.wait_for(lambda c: c["closedAt"] is not None, timeout=10))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_limit_is_never_passed_by_a_single_byte(bounded: Runtime, seed: int) -> None:
    """Turns of random sizes until the conversation is full: after each, the bytes the object
    reports equal the count made from outside, and never pass the limit."""
    rng = random.Random(f"limit:{seed}")
    id = create(bounded)
    turns: list[bytes] = []
    refused = 0
    for _ in range(30):
        size = rng.choice((50, 500, 5_000, 20_000, 40_000))
        tokens = rng.choice((5, 200, 1500, 3000))
        content = f"[[tokens:{tokens}]] [[pace:0]] " + rng.choice("xé🌍") * size
        response = post(bounded, id, content)
        if response.status_code == 413:
            assert response.json()["error"] == "conversation_too_large"
            refused += 1
            continue
        assert response.status_code == 200, response.text
        turns.append(response.content)
        state = read(bounded, id)
        assert state["bytes"] == stored_bytes(state["messages"], turns) <= LIMIT, (
            seed,
            state["bytes"],
        )
    assert refused and state["bytes"] > LIMIT - 5_000, ("never got near the limit", refused)
    cut = [raw for raw in turns if b'"error":"conversation_too_large"' in raw]
    assert cut, "no answer was cut at the limit: the case this test is for never came"


def test_images_count_per_request_and_per_conversation(bounded: Runtime) -> None:
    """MAX_IMAGES (8) counts what a request sent: the 9th turn with an image is fine (it was
    400 too_many_images naming messages[16]). MAX_CONVERSATION_IMAGES (10 here) bounds all."""
    id = create(bounded)
    for turn in range(IMAGES):
        content = [
            {"type": "text", "text": f"[[pace:0]] image {turn}"},
            {"type": "image_url", "image_url": {"url": PNG}},
        ]
        response = post(bounded, id, content)
        assert response.status_code == 200, (turn, response.text)
    calls = len(bounded.calls())
    full = post(bounded, id, [{"type": "image_url", "image_url": {"url": PNG}}])
    assert (full.status_code, full.json()["error"]) == (413, "conversation_too_large")
    assert "limit of 10 images (MAX_CONVERSATION_IMAGES)" in full.json()["message"]
    assert len(bounded.calls()) == calls
    assert post(bounded, id, "[[pace:0]] text still goes").status_code == 200
    nine = [{"type": "image_url", "image_url": {"url": PNG}}] * 9
    per_request = post(bounded, create(bounded), nine)
    assert (per_request.status_code, per_request.json()["error"]) == (400, "too_many_images")
