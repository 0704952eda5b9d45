"""What real clients send in ordinary use, over HTTP on workerd through its own Ai class: Cline's
45k-character system prompt, RAG-sized turns, the SDKs' own reply sent back with its reasoning,
six stop strings, an image (issue 21)."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import openai
import pytest
from conftest import Runtime, assert_stopped, expected_tokens, parse_sse

pytestmark = pytest.mark.runtime

GEMMA = "@cf/google/gemma-4-26b-a4b-it"
FAST = "@cf/meta/llama-3.1-8b-instruct-fast"
GPT_OSS = "@cf/openai/gpt-oss-20b"
# Continue's autocomplete sends six; one of them is in the built-in model's answer.
SIX = ["\n\n", "```", "<|im_end|>", "</s>", "built-in", "\nUser:"]
PNG = (
    "data:image/png;base64,"
    + base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8).decode()
)
WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def chat(runtime: Runtime, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(runtime.url + "/api/v1/chat", json=body, timeout=30)


def test_clines_45k_system_prompt_with_text_parts_tools_and_a_tool_turn(
    client: openai.OpenAI, runtime: Runtime
) -> None:
    system = (
        "You are Cline, a highly skilled software engineer. " * 900
    )  # 45,900 characters, as Cline's ~45k
    messages: list[Any] = [
        {"role": "system", "content": [{"type": "text", "text": system}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<task>weather in Paris?</task>"},
                {"type": "text", "text": "[[pace:0]] [[tool:get_weather]] Paris"},
            ],
        },
    ]
    first = client.chat.completions.create(model=GEMMA, messages=messages, tools=[WEATHER])
    call = first.choices[0].message.tool_calls
    assert first.choices[0].finish_reason == "tool_calls" and call is not None
    sent = runtime.last_call()["inputs"]
    assert len(sent["messages"][0]["content"]) == len(system) and sent["tools"] == [WEATHER]
    messages += [
        first.choices[0].message,
        {"role": "tool", "tool_call_id": call[0].id, "content": "sunny, 21 C"},
    ]
    second = client.chat.completions.create(model=GEMMA, messages=messages, tools=[WEATHER])
    assert second.choices[0].message.content == f"The tool {call[0].id} said: sunny, 21 C."
    assert len(runtime.last_call()["inputs"]["messages"]) == 4


def test_a_12k_character_turn_in_both_apis(client: openai.OpenAI, runtime: Runtime) -> None:
    context = "Retrieved passage about the edge network. " * 300  # 12,600 characters of RAG context
    question = "[[pace:0]] " + context + " What does it say?"
    # the built-in model quotes the turn back: ~2,000 tokens
    answer = client.chat.completions.create(
        model=GEMMA, messages=[{"role": "user", "content": question}], max_tokens=4000
    )
    assert answer.choices[0].message.content == "".join(
        expected_tokens([{"role": "user", "content": question}])
    )
    response = chat(
        runtime, {"messages": [{"role": "user", "content": question}], "max_tokens": 4000}
    )
    assert response.status_code == 200, response.text
    events = parse_sse(response.content)
    assert [e for e, _ in events][-2:] == ["message_stop", "done"]
    assert runtime.last_call()["inputs"]["messages"][0]["content"] == question


def test_six_stop_strings_cut_the_answer_and_cancel_the_model(runtime: Runtime) -> None:
    messages = [{"role": "user", "content": "[[pace:40]] where from?"}]
    tokens = expected_tokens(messages)
    text = "".join(tokens)
    cut = text[: text.index("built-in")]
    response = chat(runtime, {"messages": messages, "stop": SIX})
    assert response.status_code == 200, response.text
    events = parse_sse(response.content)
    assert "".join(d["text"] for e, d in events if e == "content_block_delta") == cut  # type: ignore[index]
    assert events[-2:] == [("message_stop", {"stop_reason": "stop"}), ("done", {})], events[-2:]
    call = runtime.wait_for(lambda c: c["closedAt"] is not None)
    assert_stopped(call)
    assert "stop" not in call["inputs"], "stop strings are the relay's: never sent to the model"


def test_six_stop_strings_through_the_openai_sdk_streamed_and_not(
    client: openai.OpenAI, runtime: Runtime
) -> None:
    messages: list[Any] = [{"role": "user", "content": "[[pace:20]] where from?"}]
    text = "".join(expected_tokens(messages))
    cut = text[: text.index("built-in")]
    whole = client.chat.completions.create(model=GPT_OSS, messages=messages, stop=SIX)
    assert (whole.choices[0].message.content, whole.choices[0].finish_reason) == (cut, "stop")
    chunks = list(
        client.chat.completions.create(model=FAST, messages=messages, stop=SIX, stream=True)
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == cut
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert_stopped(runtime.wait_for(lambda c: c["closedAt"] is not None))


def test_the_openai_sdks_own_message_goes_back_with_its_reasoning(
    client: openai.OpenAI, runtime: Runtime
) -> None:
    """The second turn after a reasoning answer, as openai-python users write it: the SDK's
    message object appended as it came, and the same as a dict with every field it has."""
    messages: list[Any] = [{"role": "user", "content": "[[pace:0]] [[think:3]] capital of France?"}]
    first = client.chat.completions.create(model=GPT_OSS, messages=messages)
    message = first.choices[0].message
    thinking = getattr(message, "reasoning_content", None)
    assert thinking == "Let me think", message
    echoes: list[Any] = [
        message,
        {
            **message.model_dump(),
            "parsed": None,
            "annotations": [],
            "audio": None,
            "function_call": None,
            "tool_calls": None,
        },
    ]
    for echo in echoes:
        second = client.chat.completions.create(
            model=GPT_OSS,
            messages=[*messages, echo, {"role": "user", "content": "[[pace:0]] and Spain?"}],
        )
        assert second.choices[0].message.content
        sent = runtime.last_call()["inputs"]["messages"][1]
        assert sent == {
            "role": "assistant",
            "content": message.content,
            "reasoning": "Let me think",
        }, sent


def test_the_chat_api_sends_the_pages_thinking_back_as_reasoning(runtime: Runtime) -> None:
    turn = {"role": "assistant", "content": "Paris.", "reasoning": "The capital is Paris."}
    body = {
        "model": GPT_OSS,
        "messages": [
            {"role": "user", "content": "q"},
            turn,
            {"role": "user", "content": "[[pace:0]] and Spain?"},
        ],
    }
    assert chat(runtime, body).status_code == 200
    assert runtime.last_call()["inputs"]["messages"][1] == turn
    assert (
        chat(runtime, {**body, "model": FAST}).status_code == 200
    )  # a model that does not reason: dropped
    assert runtime.last_call()["inputs"]["messages"][1] == {
        "role": "assistant",
        "content": "Paris.",
    }


def test_an_image_reaches_a_vision_model_and_a_text_model_says_no(
    client: openai.OpenAI, runtime: Runtime
) -> None:
    content: list[Any] = [
        {"type": "text", "text": "[[pace:0]] what is in this picture?"},
        {"type": "image_url", "image_url": {"url": PNG}},
    ]
    answer = client.chat.completions.create(
        model=GEMMA, messages=[{"role": "user", "content": content}]
    )
    assert answer.choices[0].message.content
    assert runtime.last_call()["inputs"]["messages"][0]["content"] == [
        {"type": "text", "text": "[[pace:0]] what is in this picture?"},
        {"type": "image_url", "image_url": {"url": PNG}},
    ]
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=FAST, messages=[{"role": "user", "content": content}])
    assert info.value.body == {
        "message": f"messages[0].content[1]: {FAST} reads text only; send images to a vision model (GET /api/v1/models says which)",
        "type": "invalid_request_error",
        "param": "messages[0].content[1]",
        "code": "images_not_supported",
    }
    response = chat(runtime, {"messages": [{"role": "user", "content": content}]})
    assert (
        response.status_code == 200
        and runtime.last_call()["inputs"]["messages"][0]["content"][1]["image_url"]["url"] == PNG
    )


def test_the_context_window_is_the_bound_not_characters_per_message(runtime: Runtime) -> None:
    """gpt-oss has 128k tokens: a conversation estimated past it fails before any call."""
    before = len(runtime.calls())
    big = "word " * 110_000  # ~137k tokens at 4 characters a token
    response = chat(runtime, {"model": GPT_OSS, "messages": [{"role": "user", "content": big}]})
    assert response.status_code == 400 and response.json()["error"] == "context_length_exceeded", (
        response.text
    )
    assert "context window of 128000 tokens" in response.json()["message"]
    assert len(runtime.calls()) == before, "the model was called"


def test_extras_clients_send_are_accepted(client: openai.OpenAI, runtime: Runtime) -> None:
    extra: dict[str, Any] = {
        "min_p": 0.05,
        "top_k": 40,
        "repetition_penalty": 1.1,
        "reasoning": {"effort": "low"},
        "user": "u-1",
        "metadata": {"app": "x"},
        "store": False,
        "parallel_tool_calls": True,
    }
    answer = client.chat.completions.create(
        model=GPT_OSS, messages=[{"role": "user", "content": "[[pace:0]] hi"}], extra_body=extra
    )
    assert answer.choices[0].message.content
    sent = runtime.last_call()["inputs"]
    assert {
        k: sent.get(k) for k in ("min_p", "top_k", "repetition_penalty", "reasoning_effort")
    } == {"min_p": 0.05, "top_k": 40, "repetition_penalty": 1.1, "reasoning_effort": "low"}
    assert not {"reasoning", "user", "metadata", "store", "parallel_tool_calls"} & set(sent)


def test_models_report_a_created_time_and_capabilities(client: openai.OpenAI) -> None:
    models = {m.id: m for m in client.models.list()}
    assert all(m.created > 1_700_000_000 for m in models.values()), models
    gemma = models[GEMMA].model_dump()
    assert gemma["capabilities"] == {
        "context_window": 256_000,
        "vision": True,
        "tools": True,
        "reasoning": False,
        "paid_plan": False,
        "reasoning_control": {
            "kind": "switch",
            "can_turn_off": True,
            "field": "chat_template_kwargs.enable_thinking",
            "default": "on",
        },
    }


def test_a_2_mib_conversation_with_an_image_fits_and_is_answered(runtime: Runtime) -> None:
    """200k tokens of text (the size the defaults are for) and a 1 MB image: read, parsed,
    checked and answered well inside the idle limit (its CPU cost is in bench/)."""
    image = (
        "data:image/png;base64,"
        + base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 3900).decode()
    )
    history: list[Any] = [
        {"role": "user", "content": "lorem ipsum " * 33_000},
        {"role": "assistant", "content": "noted " * 66_000},
    ]
    turn = {
        "role": "user",
        "content": [
            {"type": "text", "text": "[[pace:0]] and this?"},
            {"type": "image_url", "image_url": {"url": image}},
        ],
    }
    body = json.dumps({"model": GEMMA, "messages": [*history, turn]})
    assert len(body) > 2 * 1024 * 1024
    response = httpx.post(
        runtime.url + "/api/v1/chat",
        content=body,
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 200, response.text[:300]
    assert [e for e, _ in parse_sse(response.content)][-2:] == ["message_stop", "done"]
