"""Issue 12 over HTTP on workerd: tool calls both ways, neutral parameters, JSON mode,
/v1/models/{id}, with the official openai package and an Open WebUI-shaped request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from conftest import Runtime

pytestmark = pytest.mark.runtime

NATIVE = "@cf/google/gemma-4-26b-a4b-it"
OPENAI_SHAPED = "@cf/openai/gpt-oss-20b"
WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city now",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture
def client(runtime: Runtime) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=runtime.url + "/v1", api_key="unused", max_retries=0, timeout=10
    ) as c:
        yield c


def ask(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


@pytest.mark.parametrize("model", [NATIVE, OPENAI_SHAPED])
def test_tool_round_trip_not_streamed(client: openai.OpenAI, runtime: Runtime, model: str) -> None:
    messages = ask("[[pace:0]] [[tool:get_weather]] Paris")
    first = client.chat.completions.create(
        model=model,
        messages=messages,
        tools=[WEATHER],
        tool_choice="auto",
        parallel_tool_calls=False,
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = choice.message.tool_calls
    assert calls is not None and len(calls) == 1
    call = calls[0]
    assert call.type == "function" and call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert call.id == (
        "call_local_0"
        if model == OPENAI_SHAPED
        else "call_" + first.id.removeprefix("chatcmpl-") + "_0"
    )
    # What the model received: the tools inside the inputs object (auto is the default: not sent).
    assert runtime.last_call()["inputs"]["tools"] == [WEATHER]
    assert "tool_choice" not in runtime.last_call()["inputs"]

    follow = [
        *messages,
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"},
    ]
    second = client.chat.completions.create(model=model, messages=follow, tools=[WEATHER])
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == f"The tool {call.id} said: sunny, 21 C."
    sent = runtime.last_call()["inputs"]["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": "get_weather", "arguments": call.function.arguments},
            }
        ],
    }
    assert sent[2] == {"role": "tool", "content": "sunny, 21 C", "tool_call_id": call.id}


@pytest.mark.parametrize("model", [NATIVE, OPENAI_SHAPED])
def test_tool_round_trip_streamed(client: openai.OpenAI, runtime: Runtime, model: str) -> None:
    messages = ask("[[pace:1]] [[tool:get_weather]] [[tool:get_weather]] Paris")
    chunks = list(
        client.chat.completions.create(model=model, messages=messages, tools=[WEATHER], stream=True)
    )
    pieces = [
        tc
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
        for tc in c.choices[0].delta.tool_calls
    ]
    # Each call starts with its index, id, type and name; the arguments follow in pieces.
    starts = [p for p in pieces if p.id is not None]
    assert [
        (p.index, p.type, p.function and p.function.name, p.function and p.function.arguments)
        for p in starts
    ] == [(0, "function", "get_weather", ""), (1, "function", "get_weather", "")]
    arguments = {
        i: "".join(p.function.arguments or "" for p in pieces if p.index == i and p.function)
        for i in (0, 1)
    }
    assert [json.loads(a) for a in arguments.values()] == [{"city": "Paris"}, {"city": "Paris"}]
    if model == OPENAI_SHAPED:
        assert (
            len([p for p in pieces if p.index == 0 and p.id is None]) > 1
        )  # arguments really in pieces
    assert [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ] == ["tool_calls"]

    # The SDK's own accumulation of the stream gives the same message as the non-streamed call.
    with client.chat.completions.stream(model=model, messages=messages, tools=[WEATHER]) as stream:
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls
    assert (
        calls is not None
        and [json.loads(c.function.arguments) for c in calls] == [{"city": "Paris"}] * 2
    )
    follow = [
        *messages,
        final.choices[0].message.model_dump(exclude_none=True, exclude={"parsed"}),
        *({"role": "tool", "tool_call_id": c.id, "content": "sunny"} for c in calls),
    ]
    text = "".join(
        c.choices[0].delta.content or ""
        for c in client.chat.completions.create(
            model=model, messages=follow, tools=[WEATHER], stream=True
        )
        if c.choices
    )
    assert text == f"The tool {calls[1].id} said: sunny."


def test_open_webui_default_body_streams_an_answer(runtime: Runtime) -> None:
    # Open WebUI's request with native function calling (its default): tools, stream,
    # stream_options.include_usage, and the neutral values it fills in.
    body = {
        "stream": True,
        "model": NATIVE,
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "[[pace:0]] Hello there"},
        ],
        "stream_options": {"include_usage": True},
        "tools": [WEATHER],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "frequency_penalty": 0,
        "presence_penalty": 0,
        "stop": None,
        "seed": 42,
        "logprobs": False,
        "n": 1,
        "user": "open-webui-user",
        "metadata": {"chat_id": "c1"},
    }
    response = httpx.post(
        runtime.url + "/v1/chat/completions", json=body, headers={"authorization": "Bearer sk-x"}
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    frames = [json.loads(f[6:]) for f in response.text.split("\n\n") if f.startswith("data: {")]
    text = "".join(f["choices"][0]["delta"].get("content") or "" for f in frames if f["choices"])
    assert text.startswith("You said: Hello there.")
    assert frames[-1]["choices"] == [] and frames[-1]["usage"]["completion_tokens"] > 0
    assert response.text.endswith("data: [DONE]\n\n")
    sent = runtime.last_call()["inputs"]
    assert {k: sent[k] for k in ("seed", "frequency_penalty", "presence_penalty", "tools")} == {
        "seed": 42,
        "frequency_penalty": 0,
        "presence_penalty": 0,
        "tools": [WEATHER],
    }
    assert not {
        "stop",
        "logprobs",
        "n",
        "user",
        "metadata",
        "parallel_tool_calls",
        "tool_choice",
    } & set(sent)


@pytest.mark.parametrize("model", [NATIVE, OPENAI_SHAPED])
def test_json_mode_whole_and_streamed(client: openai.OpenAI, runtime: Runtime, model: str) -> None:
    schema: Any = {
        "type": "json_schema",
        "json_schema": {
            "name": "answer",
            "schema": {"type": "object", "properties": {"answer": {"type": "string"}}},
        },
    }
    whole = client.chat.completions.create(
        model=model, messages=ask("[[pace:0]] json please"), response_format=schema
    )
    content = whole.choices[0].message.content
    assert content is not None and json.loads(content)["answer"].startswith(
        "You said: json please."
    )
    assert runtime.last_call()["inputs"]["stream"] is False
    chunks = list(
        client.chat.completions.create(
            model=model, messages=ask("[[pace:0]] json please"), response_format=schema, stream=True
        )
    )
    assert runtime.last_call()["inputs"]["stream"] is False  # JSON mode does not stream upstream
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == content
    expected_format = (
        schema
        if model == OPENAI_SHAPED
        else {"type": "json_schema", "json_schema": schema["json_schema"]["schema"]}
    )
    assert runtime.last_call()["inputs"]["response_format"] == expected_format


def test_models_retrieve(client: openai.OpenAI) -> None:
    for model in (NATIVE, OPENAI_SHAPED):
        got = client.models.retrieve(model)
        assert (got.id, got.object, got.owned_by) == (model, "model", "cloudflare")
    with pytest.raises(openai.NotFoundError) as info:
        client.models.retrieve("@cf/meta/llama-2-7b-chat-int8")
    assert info.value.body == {
        "message": "The model '@cf/meta/llama-2-7b-chat-int8' does not exist; GET /v1/models lists the models.",
        "type": "invalid_request_error",
        "param": "model",
        "code": "model_not_found",
    }


def test_unsupported_parameter_is_named_in_the_sdk_error(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=NATIVE, messages=ask("hi"), logprobs=True)
    assert info.value.body == {
        "message": "logprobs: this service accepts false only, got true",
        "type": "invalid_request_error",
        "param": "logprobs",
        "code": "unsupported_parameter",
    }


@pytest.mark.parametrize("number", [2**53 - 1, -(2**53 - 1), 2**53 - 2, 2**53])
def test_an_integer_at_the_edge_of_a_double_reaches_the_model_as_that_number(
    runtime: Runtime, number: int
) -> None:
    """Pyodide hands 2**53 - 1 and more to JS as a BigInt, which JSON.stringify refuses:
    the call failed (502) before it reached the model. The model receives the number."""
    tool = {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {"n": {"type": "integer", "maximum": number}},
            },
        },
    }
    body = {
        "model": OPENAI_SHAPED,
        "messages": ask("[[pace:0]] hi"),
        "tools": [tool],
        "max_tokens": 3,
    }
    response = httpx.post(runtime.url + "/v1/chat/completions", json=body, timeout=10)
    assert response.status_code == 200, response.text
    received = runtime.last_call()["inputs"]["tools"][0]["function"]["parameters"]["properties"][
        "n"
    ]["maximum"]
    assert received == number and isinstance(received, int)
