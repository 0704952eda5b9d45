"""Every Workers AI shape and error the built-in model can send, over real HTTP on workerd,
through workerd's own Ai class: what the host tests check at every split point, end to end."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from conftest import Runtime, expected_tokens, parse_sse

pytestmark = pytest.mark.runtime

NATIVE = "@cf/google/gemma-4-26b-a4b-it"
REASONING = "@cf/openai/gpt-oss-20b"
THOUGHT = ["Let", " me", " think", " about", " this", " carefully", " first", " then", " answer"]


def chat(rt: Runtime, text: str, model: str = NATIVE, **extra: object) -> httpx.Response:
    body = {"messages": [{"role": "user", "content": text}], "model": model, **extra}
    with rt.client() as client:
        return client.post("/api/v1/chat", json=body)


def events_of(response: httpx.Response) -> tuple[list[str], list[str], list[tuple[str, object]]]:
    assert response.status_code == 200, response.text
    events = parse_sse(response.content)
    thinking = [d["text"] for n, d in events if n == "thinking_delta"]  # type: ignore[index]
    texts = [d["text"] for n, d in events if n == "content_block_delta"]  # type: ignore[index]
    return thinking, texts, events


@pytest.mark.parametrize(
    ("directives", "model"),
    [
        (
            "[[think:4]]",
            REASONING,
        ),  # reasoning_content, content null, zero-usage finish chunk, native usage frame
        ("[[think:4]] [[reasoning:reasoning]]", REASONING),
        (
            "[[think:4]] [[reasoning:both]]",
            REASONING,
        ),  # Kimi: both fields, the same text: relayed once
        ("[[think:4]] [[usage:first]]", REASONING),  # the real usage first, a zero usage last
        ("[[think:4]] [[usage:cumulative]]", REASONING),  # qwen over REST: usage on every chunk
        ("[[think:4]] [[fault:split]]", REASONING),
        # No HTTP chunked framing: the whole answer reaches the Worker in one read.
        ("[[think:4]] [[wire:eof]]", REASONING),
    ],
)
def test_reasoning_shapes_are_relayed_once_in_order_with_real_usage(
    runtime: Runtime, directives: str, model: str
) -> None:
    text = f"{directives} [[pace:0]] why"
    thinking, texts, events = events_of(chat(runtime, text, model=model))
    messages = [{"role": "user", "content": text}]
    assert thinking == THOUGHT[:4], (directives, thinking)
    assert texts == expected_tokens(messages), (directives, texts)
    names = [n for n, _ in events if n in ("thinking_delta", "content_block_delta")]
    assert names == ["thinking_delta"] * 4 + ["content_block_delta"] * len(texts), names
    stop = events[-2][1]
    prompt = len(text.split()) + 3
    assert stop == {
        "stop_reason": "stop",
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": 4 + len(texts),
            "total_tokens": prompt + 4 + len(texts),
        },
    }, stop


def test_the_model_sends_wire_eof_without_chunked_framing(runtime: Runtime) -> None:
    """What the bench's /eof rows rely on: the same frames, no chunked framing, the body ended
    by the connection's close (so workerd reads it as it arrives, not chunk by chunk)."""
    text = "[[tokens:3]] [[pace:0]] hi"
    body = {"inputs": {"messages": [{"role": "user", "content": text}], "stream": True}}
    seen: dict[str, tuple[str | None, str | None, bytes]] = {}
    for wire in (" [[wire:chunked]]", " [[wire:eof]]"):  # the same word count: the same usage
        body["inputs"]["messages"][0]["content"] = text + wire  # type: ignore[index]
        response = httpx.post(
            runtime.model_url + "/run", json=body, headers={"cf-consn-model-id": NATIVE}
        )
        # The padding is seeded by the conversation, which the directive changes: left out.
        frames = re.sub(rb',"p":"[^"]*"', b"", response.content)
        seen[wire] = (
            response.headers.get("transfer-encoding"),
            response.headers.get("connection"),
            frames,
        )
    chunked, eof = seen[" [[wire:chunked]]"], seen[" [[wire:eof]]"]
    assert chunked[:2] == ("chunked", "keep-alive"), chunked[:2]
    assert eof[:2] == (None, "close"), eof[:2]
    assert chunked[2] == eof[2] and eof[2].endswith(b"data: [DONE]\n\n"), (chunked[2], eof[2])


@pytest.mark.parametrize("tag", ["", "[[thinktag:open]]"])
def test_think_tags_in_native_text_are_reasoning(runtime: Runtime, tag: str) -> None:
    text = f"[[think:3]] {tag} [[pace:0]] hmm"
    thinking, texts, _ = events_of(chat(runtime, text))
    if tag:
        # Without its opening tag, only a model known to begin inside <think> can be read so:
        # gemma is not one, so the thought is relayed as text, and nothing is lost.
        assert "".join(texts).startswith("Let me think</think>"), texts
    else:
        assert thinking == THOUGHT[:3], thinking
        assert texts == expected_tokens([{"role": "user", "content": text}]), texts


def test_budget_spent_thinking_ends_as_length_while_thinking(runtime: Runtime) -> None:
    thinking, texts, events = events_of(
        chat(runtime, "[[think:8]] [[pace:0]] deep", model=REASONING, max_tokens=5)
    )
    assert (thinking, texts) == (THOUGHT[:5], [])
    assert events[-2][0] == "message_stop" and events[-2][1]["stop_reason"] == "length", events[-2]  # type: ignore[index]
    assert events[-2][1]["while_thinking"] is True, events[-2]  # type: ignore[index]


def test_a_leading_byte_order_mark_loses_no_frame(runtime: Runtime) -> None:
    text = "[[fault:bom]] [[pace:0]] bom"
    _, texts, _ = events_of(chat(runtime, text))
    assert texts == expected_tokens([{"role": "user", "content": text}])


def test_reasoning_effort_goes_inside_the_inputs(runtime: Runtime) -> None:
    events_of(chat(runtime, "[[pace:0]] effort", model=REASONING, reasoning_effort="low"))
    assert runtime.last_call()["inputs"]["reasoning_effort"] == "low"


def test_openai_api_streams_reasoning_content_and_returns_it_whole(runtime: Runtime) -> None:
    body = {
        "model": REASONING,
        "messages": [{"role": "user", "content": "[[think:3]] [[pace:0]] r"}],
    }
    with runtime.client() as client:
        whole = client.post("/v1/chat/completions", json=body).json()
        streamed = client.post("/v1/chat/completions", json={**body, "stream": True}).content
    assert whole["choices"][0]["message"]["reasoning_content"] == "".join(THOUGHT[:3]), whole
    deltas = [
        json.loads(line[6:]) for line in streamed.decode().split("\n") if line.startswith("data: {")
    ]
    reasoning = "".join(
        d["choices"][0]["delta"].get("reasoning_content") or "" for d in deltas if d.get("choices")
    )
    assert reasoning == "".join(THOUGHT[:3]), streamed[:600]


ERRORS = [
    (3040, 429, "upstream_busy", "rate_limit_error", True),
    (3036, 429, "upstream_quota_exceeded", "rate_limit_error", True),
    (4006, 429, "upstream_quota_exceeded", "rate_limit_error", True),
    (5006, 400, "upstream_rejected_input", "invalid_request_error", False),
    (5007, 502, "model_unavailable", "server_error", False),
    (5021, 400, "context_length_exceeded", "invalid_request_error", False),
    (5028, 502, "model_unavailable", "server_error", False),
    (5000, 502, "upstream_error", "server_error", False),
]


@pytest.mark.parametrize(("code", "status", "ours", "openai_type", "retry"), ERRORS)
def test_run_errors_map_by_their_code_in_both_apis(
    runtime: Runtime, code: int, status: int, ours: str, openai_type: str, retry: bool
) -> None:
    text = f"[[error:{code}]] x"
    app = chat(runtime, text)
    with runtime.client() as client:
        v1 = client.post(
            "/v1/chat/completions", json={"messages": [{"role": "user", "content": text}]}
        )
    assert (app.status_code, app.json()["error"]) == (status, ours), app.text
    assert (v1.status_code, v1.json()["error"]["code"], v1.json()["error"]["type"]) == (
        status,
        ours,
        openai_type,
    ), v1.text
    for response in (app, v1):
        assert ("retry-after" in response.headers) is retry, response.headers
        assert str(code) not in response.text, f"internal detail leaked: {response.text}"
    if code == 5021:
        assert "8192" in app.json()["message"], app.text
