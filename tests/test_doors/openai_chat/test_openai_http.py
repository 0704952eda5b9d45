"""/v1/chat/completions and /v1/models, driven by the official openai package."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from cases import CASES
from conftest import (
    IDLE_LIMIT,
    THINKING_OFF,
    Runtime,
    assert_stopped,
    expected_tokens,
    expected_usage,
)

from base import settings

pytestmark = pytest.mark.runtime

EMBEDDING_MODELS = settings.DEFAULT_EMBEDDING_MODELS  # listed after the chat models

NATIVE = "@cf/google/gemma-4-26b-a4b-it"
OPENAI_SHAPED = "@cf/openai/gpt-oss-20b"


@pytest.fixture
def client(runtime: Runtime) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=runtime.url + "/v1", api_key="unused", max_retries=0, timeout=10
    ) as c:
        yield c


def convo(text: str) -> list[Any]:
    return [{"role": "developer", "content": "be brief"}, {"role": "user", "content": text}]


@pytest.mark.parametrize("model", [NATIVE, OPENAI_SHAPED])
def test_non_streaming_answer_and_usage(
    client: openai.OpenAI, runtime: Runtime, model: str
) -> None:
    messages = convo("[[pace:0]] hello sdk")
    completion = client.chat.completions.create(model=model, messages=messages)
    assert completion.object == "chat.completion"
    assert completion.model == model
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content == "".join(expected_tokens(messages))
    assert completion.choices[0].finish_reason == "stop"
    usage = expected_usage(messages)
    assert completion.usage is not None
    assert (
        completion.usage.prompt_tokens,
        completion.usage.completion_tokens,
        completion.usage.total_tokens,
    ) == (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"])
    sent = runtime.last_call()["inputs"]
    assert sent == {
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "[[pace:0]] hello sdk"},
        ],
        "stream": True,
        "max_tokens": 1024,
        **THINKING_OFF[model],
    }


@pytest.mark.parametrize("model", [NATIVE, OPENAI_SHAPED])
def test_streaming_answer_with_usage_chunk(client: openai.OpenAI, model: str) -> None:
    messages = convo("[[pace:1]] stream it")
    stream = client.chat.completions.create(
        model=model,
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},
        max_completion_tokens=5,
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    content = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert content == expected_tokens(messages)[:5]
    finishing = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert finishing == ["length"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 5
    assert len({c.id for c in chunks}) == 1


def test_streaming_without_usage_option_has_no_usage_chunk(client: openai.OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(model=NATIVE, messages=convo("[[pace:0]] x"), stream=True)
    )
    assert all(c.choices for c in chunks)
    assert all(c.usage is None for c in chunks)


def test_raw_stream_ends_with_done(runtime: Runtime) -> None:
    body = {"model": NATIVE, "messages": convo("[[pace:0]] raw"), "stream": True}
    raw = httpx.post(runtime.url + "/v1/chat/completions", json=body).content
    assert raw.endswith(b"data: [DONE]\n\n")
    frames = [json.loads(f[6:]) for f in raw.split(b"\n\n") if f.startswith(b"data: {")]
    assert all(f["object"] == "chat.completion.chunk" for f in frames)


def test_models_list(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == [
        NATIVE,
        "@cf/meta/llama-3.1-8b-instruct-fast",
        OPENAI_SHAPED,
        "@cf/zai-org/glm-4.7-flash",
        *EMBEDDING_MODELS,
    ]


def test_consumer_closing_early_cancels_the_model(client: openai.OpenAI, runtime: Runtime) -> None:
    stream = client.chat.completions.create(
        model=NATIVE, messages=convo("[[pace:50]] long"), stream=True
    )
    for i, _chunk in enumerate(stream):
        if i == 2:
            break
    stream.close()
    call = runtime.wait_for(lambda c: c["clientClosedAt"] is not None)
    assert_stopped(call)


def test_a_whole_answer_may_outlast_the_idle_limit_but_silence_may_not(runtime: Runtime) -> None:
    """A whole answer is read from the model's stream (stream true upstream), so the idle limit
    (IDLE_LIMIT in the tests) bounds silence, not length: 22 tokens each 40% of the limit apart
    take 8.8 of them and arrive whole, and a model that goes silent fails 504 after the limit, saying so."""
    messages = convo(f"[[pace:{int(IDLE_LIMIT * 400)}]] slow and whole")
    body = {"model": NATIVE, "messages": messages}
    started = time.monotonic()
    whole = httpx.post(runtime.url + "/v1/chat/completions", json=body, timeout=60)
    took = time.monotonic() - started
    assert whole.status_code == 200, whole.text
    assert whole.json()["choices"][0]["message"]["content"] == "".join(expected_tokens(messages))
    # A lower bound, not a speed bound: the answer lasted longer than the idle limit.
    assert took > 2 * IDLE_LIMIT, f"the answer took {took:.2f} s: it did not outlast the idle limit"
    assert runtime.last_call()["inputs"]["stream"] is True
    silent = {"model": NATIVE, "messages": convo("[[pace:0]] [[fault:stall]] then nothing")}
    stalled = httpx.post(runtime.url + "/v1/chat/completions", json=silent, timeout=30)
    assert stalled.status_code == 504, stalled.text
    assert stalled.json()["error"] == {
        "message": f"The model sent nothing for {IDLE_LIMIT:g} seconds.",
        "type": "server_error",
        "param": None,
        "code": "upstream_timeout",
    }
    call = runtime.wait_for(lambda c: c["closedAt"] is not None)
    assert call["clientClosedAt"] is not None, f"the stalled model call was not closed: {call}"


@pytest.mark.parametrize(
    ("kwargs", "exception", "code"),
    [
        ({"model": "@cf/nope/x"}, openai.BadRequestError, "unknown_model"),
        ({"temperature": 9}, openai.BadRequestError, "invalid_field"),
        ({"top_p": 1.5}, openai.BadRequestError, "invalid_field"),
        ({"logprobs": True}, openai.BadRequestError, "unsupported_parameter"),
        ({"n": 2}, openai.BadRequestError, "unsupported_parameter"),
        ({"messages": [{"role": "tool", "content": "x"}]}, openai.BadRequestError, "invalid_field"),
        (
            {"messages": [{"role": "function", "content": "x"}]},
            openai.BadRequestError,
            "invalid_field",
        ),
        ({"messages": convo("[[fault:throw]]")}, openai.InternalServerError, "upstream_error"),
    ],
)
def test_errors_surface_as_sdk_exceptions(
    client: openai.OpenAI, kwargs: dict[str, object], exception: type[Exception], code: str
) -> None:
    args: dict[str, Any] = {"model": NATIVE, "messages": convo("[[pace:0]] hi"), **kwargs}
    with pytest.raises(exception) as info:
        client.chat.completions.create(**args)
    assert isinstance(info.value, openai.APIStatusError)
    assert info.value.body["code"] == code  # type: ignore[index]
    assert info.value.response.json()["error"]["type"] in ("invalid_request_error", "server_error")


def test_unknown_route_and_method_are_openai_shaped(
    client: openai.OpenAI, runtime: Runtime
) -> None:
    with pytest.raises(openai.NotFoundError):
        client.get("/nope", cast_to=object)
    response = httpx.get(runtime.url + "/v1/chat/completions")
    assert response.status_code == 405 and response.headers["allow"] == "POST, OPTIONS"
    assert response.json()["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize("fault", ["midstream", "stall", "nodone"])
def test_error_after_streaming_began_raises_in_the_sdk(client: openai.OpenAI, fault: str) -> None:
    stream = client.chat.completions.create(
        model=OPENAI_SHAPED, messages=convo(f"[[fault:{fault}]] [[pace:2]] go"), stream=True
    )
    received: list[str] = []
    with pytest.raises(openai.APIError) as info:
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                received.append(chunk.choices[0].delta.content)
    code = info.value.body["code"]  # type: ignore[index]
    assert (
        code
        == {
            "midstream": "upstream_error",
            "stall": "upstream_timeout",
            "nodone": "upstream_incomplete",
        }[fault]
    )
    assert (
        received
        == expected_tokens(convo(f"[[fault:{fault}]] [[pace:2]] go"))[
            : {"midstream": 3, "stall": 2}.get(fault, 99)
        ]
    )


def test_kill_switch_is_503_in_the_sdk(client: openai.OpenAI, runtime: Runtime) -> None:
    runtime.set_vars(AI_CHAT_DISABLED="1")
    try:
        with pytest.raises(openai.InternalServerError) as info:
            client.chat.completions.create(model=NATIVE, messages=convo("hi"))
        assert info.value.status_code == 503 and info.value.body["code"] == "ai_unavailable"  # type: ignore[index]
        calls = len(runtime.calls())
        # The doors of issue 34 are behind the same switch.
        with pytest.raises(openai.InternalServerError) as info:
            client.completions.create(model=NATIVE, prompt="hi")
        assert info.value.status_code == 503 and info.value.code == "ai_unavailable"
        with pytest.raises(openai.InternalServerError) as info:
            client.embeddings.create(model=EMBEDDING_MODELS[0], input="hi")
        assert info.value.status_code == 503 and info.value.code == "ai_unavailable"
        assert len(runtime.calls()) == calls
    finally:
        runtime.set_vars(AI_CHAT_DISABLED=None)


# OpenAI's API has `stream`, `developer` and `tool` roles and a message `name`; the rest is shared.
SHARED = [c for c in CASES if c[0] not in ("unknown field", "extra message field", "bad role")]


@pytest.mark.parametrize(
    ("name", "ctype", "raw", "status", "code", "needle"), SHARED, ids=[c[0] for c in SHARED]
)
def test_shared_bad_inputs_give_the_same_status_and_code(
    runtime: Runtime, name: str, ctype: str | None, raw: bytes, status: int, code: str, needle: str
) -> None:
    headers = {"content-type": ctype} if ctype else {}
    response = httpx.post(runtime.url + "/v1/chat/completions", content=raw, headers=headers)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code and needle in error["message"]
