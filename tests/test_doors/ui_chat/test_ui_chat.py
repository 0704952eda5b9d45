"""/api/v1/ui-chat requests: the AI SDK's UIMessages onto the messages the other doors send (host)."""

from __future__ import annotations

from typing import Any

import pytest
from fakes import completion_context

from base.errors import ApiError
from base.settings import load
from doors.ui_chat.ui_chat import parse_ui_chat

SETTINGS = load({"AI_MODELS": "@cf/openai/gpt-oss-20b,@cf/google/gemma-4-26b-a4b-it"}.get)
CTX = completion_context(SETTINGS)
GPT_OSS, GEMMA = "@cf/openai/gpt-oss-20b", "@cf/google/gemma-4-26b-a4b-it"
WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object"}},
}


def user(text: str) -> dict[str, Any]:
    return {"id": "u", "role": "user", "parts": [{"type": "text", "text": text}]}


def inputs(body: dict[str, Any]) -> dict[str, Any]:
    return parse_ui_chat(
        {"id": "chat", "trigger": "submit-message", **body}, CTX
    ).completion.ai_inputs()


def test_the_default_transport_body_with_the_apps_own_fields() -> None:
    body = {
        "messages": [user("hi")],
        "messageId": "m1",
        "model": GPT_OSS,
        "max_tokens": 5,
        "temperature": 0.2,
        "reasoning_effort": "low",
        "stop": "x",
        "tools": [WEATHER],
    }
    parsed = parse_ui_chat({"id": "chat", "trigger": "regenerate-message", **body}, CTX)
    request = parsed.completion
    assert parsed.message_id is None, "a new assistant message"
    assert request.ai_inputs() == {
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "max_tokens": 5,
        "temperature": 0.2,
        "reasoning_effort": "low",
        "tools": [WEATHER],
    }
    assert request.stop == ("x",)


def test_assistant_steps_become_calls_results_and_the_next_text() -> None:
    assistant = {
        "id": "a",
        "role": "assistant",
        "metadata": {"model": GPT_OSS},
        "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "need weather", "state": "done"},
            {
                "type": "tool-get_weather",
                "toolCallId": "c1",
                "state": "output-available",
                "input": {"city": "Paris"},
                "output": {"sky": "sunny"},
            },
            {
                "type": "dynamic-tool",
                "toolName": "lookup",
                "toolCallId": "c2",
                "state": "output-error",
                "input": {},
                "errorText": "no",
            },
            {
                "type": "tool-get_weather",
                "toolCallId": "c3",
                "state": "input-available",
                "input": {},
            },
            {"type": "step-start"},
            {"type": "text", "text": "Sunny.", "state": "done"},
            {"type": "source-url", "sourceId": "s", "url": "https://x"},
        ],
    }
    assert inputs(
        {
            "model": GPT_OSS,
            "messages": [
                {"id": "s", "role": "system", "parts": [{"type": "text", "text": "brief"}]},
                user("weather?"),
                assistant,
                user("thanks"),
            ],
        }
    )["messages"] == [
        {"role": "system", "content": "brief"},
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "lookup", "arguments": "{}"}},
            ],
            "reasoning": "need weather",
        },
        {"role": "tool", "content": '{"sky":"sunny"}', "tool_call_id": "c1"},
        {"role": "tool", "content": "no", "tool_call_id": "c2"},
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "thanks"},
    ]


def test_an_answer_after_a_tool_result_continues_the_last_assistant_message() -> None:
    assistant = {
        "id": "a7",
        "role": "assistant",
        "parts": [
            {
                "type": "tool-get_weather",
                "toolCallId": "c1",
                "state": "output-available",
                "input": {},
                "output": "sunny",
            }
        ],
    }
    assert (
        parse_ui_chat(
            {"messages": [user("weather?"), assistant], "tools": [WEATHER]}, CTX
        ).message_id
        == "a7"
    )
    assert parse_ui_chat({"messages": [user("weather?")]}, CTX).message_id is None


def test_an_image_file_part_reaches_a_vision_model() -> None:
    url = "https://example.com/a.png"
    message = {
        "id": "u",
        "role": "user",
        "parts": [
            {"type": "text", "text": "what?"},
            {"type": "file", "mediaType": "image/png", "url": url},
        ],
    }
    assert inputs({"model": GEMMA, "messages": [message]})["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what?"},
                {"type": "image_url", "image_url": {"url": url}},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"messages": []},
            (
                400,
                "invalid_field",
                "messages: must be a non-empty array of UI messages {id, role, parts}",
            ),
        ),
        (
            {"messages": [{"role": "user", "content": "hi"}]},
            (
                400,
                "invalid_field",
                'messages[0].parts: must be an array of parts, e.g. {"type": "text", "text": "..."}',
            ),
        ),
        (
            {"messages": [{"role": "tool", "parts": []}]},
            (
                400,
                "invalid_field",
                "messages[0].role: must be 'system', 'user' or 'assistant', got 'tool'",
            ),
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "parts": [{"type": "file", "mediaType": "application/pdf", "url": "x"}],
                    }
                ]
            },
            (
                400,
                "invalid_field",
                "messages[0].parts[0].type: 'file' parts are not supported here; user messages take text and image file parts",
            ),
        ),
        (
            {"messages": [user("hi")], "trigger": "resume"},
            (
                400,
                "invalid_field",
                "trigger: must be 'submit-message' or 'regenerate-message', got 'resume'",
            ),
        ),
        (
            {"messages": [user("hi")], "n": 2},
            (
                400,
                "unknown_field",
                "n: unknown field; allowed fields are id, messages, trigger, messageId, model, max_tokens, temperature, reasoning_effort, stop, tools",
            ),
        ),
        (
            {"messages": [user("   ")]},
            (400, "invalid_field", "messages[0].content: must not be empty"),
        ),
    ],
)
def test_refusals_name_the_field(body: dict[str, Any], expected: tuple[int, str, str]) -> None:
    with pytest.raises(ApiError) as info:
        parse_ui_chat(body, CTX)
    assert (info.value.status, info.value.code, info.value.message) == expected
