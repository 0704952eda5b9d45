"""AI_FALLBACK_MODELS through app.handle with fake upstreams: which model is called, in what
order, with which run options, and what the client is told."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fakes import FakeLimiter, FakeModel, frames
from host_app import request
from host_driver import drive

from routes import TABLE
from streaming.relay import Relayed
from surface.policy import handle
from surface.web import WebResponse
from workers_ai.service import RunOptions, UpstreamFailure

GEMMA = "@cf/google/gemma-4-26b-a4b-it"
FAST = "@cf/meta/llama-3.1-8b-instruct-fast"
OSS = "@cf/openai/gpt-oss-20b"
KIMI = "@cf/moonshotai/kimi-k2.6"
BUSY = UpstreamFailure("AiError: 3040: Capacity temporarily exceeded, please try again.")
PAID = UpstreamFailure("AiError: 5035: This model requires the Workers Paid plan.")
ENV = {"AI_MODELS": f"{GEMMA},{FAST},{OSS},{KIMI}", "AI_FALLBACK_MODELS": f"{OSS},{FAST}"}


def send(
    path: str,
    body: dict[str, Any],
    model: FakeModel,
    env: dict[str, str] | None = None,
    **headers: str,
) -> WebResponse:
    req = request(
        "POST", path, json.dumps(body).encode(), content_type="application/json", **headers
    )
    return asyncio.run(handle(req, (env or ENV).get, model, TABLE, limiter=FakeLimiter()))


def wire(response: WebResponse) -> bytes:
    assert isinstance(response.body, Relayed), response.body
    relayed = response.body

    async def run() -> bytes:
        return b"".join([chunk async for chunk in drive(relayed.source, relayed.relay)])  # type: ignore[arg-type]

    return asyncio.run(run())


def chat(text: str = "hi", model: str = GEMMA, **extra: object) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}], **extra}


def test_a_busy_model_moves_to_the_next_and_the_answer_names_it() -> None:
    fake = FakeModel(frames("ok"), fails={GEMMA: BUSY})
    response = send("/v1/chat/completions", chat(), fake)
    assert response.status == 200
    assert [m for m, _ in fake.calls] == [GEMMA, OSS]
    assert isinstance(response.body, bytes)
    assert json.loads(response.body)["model"] == OSS
    # Every call but the last may fail at once; the last one queues.
    assert [o.reject_if_busy if o else None for o in fake.options] == [True, True]


def test_the_last_model_is_called_without_reject_if_busy() -> None:
    fake = FakeModel(frames("ok"), fails={GEMMA: BUSY, OSS: PAID})
    response = send("/v1/chat/completions", chat(), fake)
    assert json.loads(response.body)["model"] == FAST  # type: ignore[arg-type]
    assert [
        (m, o.reject_if_busy if o else None)
        for (m, _), o in zip(fake.calls, fake.options, strict=False)
    ] == [(GEMMA, True), (OSS, True), (FAST, False)]


def test_message_stop_names_the_fallback_only() -> None:
    fake = FakeModel(
        frames("ok", usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
        fails={GEMMA: PAID},
    )
    out = wire(send("/api/v1/chat", chat(), fake))
    assert (
        b'event: message_stop\ndata: {"stop_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"model":"@cf/openai/gpt-oss-20b"}\n\n'
        in out
    ), out
    served = wire(send("/api/v1/chat", chat(), FakeModel(frames("ok"))))
    assert b'event: message_stop\ndata: {"stop_reason":"stop"}\n\n' in served, served


@pytest.mark.parametrize(
    "failure",
    [
        UpstreamFailure("InferenceUpstreamError: 5006: bad input"),
        UpstreamFailure("InferenceUpstreamError: 5000: x"),
    ],
)
def test_no_fallback_for_other_failures(failure: UpstreamFailure) -> None:
    fake = FakeModel(frames("ok"), fails={GEMMA: failure})
    response = send("/api/v1/chat", chat(), fake)
    assert response.status in (400, 502)
    assert [m for m, _ in fake.calls] == [GEMMA]


def test_every_model_busy_is_429_from_the_last() -> None:
    fake = FakeModel(frames("ok"), fails={GEMMA: BUSY, OSS: BUSY, FAST: BUSY})
    response = send("/api/v1/chat", chat(), fake)
    assert (response.status, json.loads(response.body)["error"]) == (429, "upstream_busy")  # type: ignore[arg-type]
    assert len(fake.calls) == 3


@pytest.mark.parametrize("path", ["/api/v1/chat", "/v1/chat/completions"])
def test_a_paid_plan_model_without_fallback_is_403_saying_what_to_do(path: str) -> None:
    env = {"AI_MODELS": f"{GEMMA},{KIMI}"}
    response = send(path, chat(model=KIMI), FakeModel(PAID), env)
    body = json.loads(response.body)  # type: ignore[arg-type]
    error = body["error"] if path.startswith("/api") else body["error"]["code"]
    assert (response.status, error) == (403, "model_requires_paid_plan"), body
    message = body["message"] if path.startswith("/api") else body["error"]["message"]
    assert message == (
        f"The model {KIMI} needs the Workers Paid plan, and this service's account is on the Free plan; "
        "choose another model (GET /api/v1/models marks the paid ones)."
    )
    if path.startswith("/v1"):
        assert body["error"]["type"] == "permission_error"


def test_a_fallback_that_cannot_take_the_request_is_skipped() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    body = {
        "model": GEMMA,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "see"}, image]}],
    }
    fake = FakeModel(frames("ok"), fails={GEMMA: BUSY})
    response = send("/api/v1/chat", body, fake)
    # Neither fallback reads images: the busy model's 429 is the answer, and no other call is made.
    assert (response.status, [m for m, _ in fake.calls]) == (429, [GEMMA])
    assert fake.options == [RunOptions(reject_if_busy=False, affinity=fake.options[0].affinity)]  # type: ignore[union-attr]


def test_reasoning_sent_back_reaches_only_a_model_that_reasons() -> None:
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b", "reasoning": "why"},
        {"role": "user", "content": "c"},
    ]
    env = {"AI_MODELS": OSS, "AI_FALLBACK_MODELS": FAST}
    fake = FakeModel(frames("ok"), fails={OSS: BUSY})
    send("/api/v1/chat", {"model": OSS, "messages": messages}, fake, env)
    sent = [inputs["messages"][1] for _, inputs in fake.calls]  # type: ignore[index]
    assert sent == [
        {"role": "assistant", "content": "b", "reasoning": "why"},
        {"role": "assistant", "content": "b"},
    ]


def test_a_fallback_whose_window_is_too_small_is_skipped() -> None:
    env = {
        "AI_MODELS": GEMMA,
        "AI_FALLBACK_MODELS": f"@cf/meta/llama-3.1-8b-instruct,{FAST}",
        "MAX_MESSAGE_CHARS": "100000",
    }
    fake = FakeModel(frames("ok"), fails={GEMMA: BUSY})
    response = send("/v1/chat/completions", chat("x" * 40_000), fake, env)
    assert response.status == 200
    assert [m for m, _ in fake.calls] == [
        GEMMA,
        FAST,
    ]  # llama-3.1-8b-instruct's 7,968 tokens cannot hold 10,000


def test_enable_thinking_for_a_model_that_switches_it() -> None:
    glm = "@cf/zai-org/glm-4.7-flash"
    fake = FakeModel(frames("ok"))
    send("/api/v1/chat", chat(model=glm, reasoning_effort="high"), fake, {"AI_MODELS": glm})
    inputs = fake.calls[0][1]
    assert ("reasoning_effort" in inputs, inputs.get("chat_template_kwargs")) == (
        False,
        {"enable_thinking": True},
    )
    fake = FakeModel(frames("ok"))
    send("/api/v1/chat", chat(model=OSS, reasoning_effort="high"), fake, {"AI_MODELS": OSS})
    assert (
        fake.calls[0][1].get("reasoning_effort"),
        "chat_template_kwargs" in fake.calls[0][1],
    ) == ("high", False)
