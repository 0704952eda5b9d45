"""/v1/responses requests: input items onto the messages /v1/chat/completions sends, and the
parameters it takes, refuses or accepts as neutral (host)."""

from __future__ import annotations

from typing import Any

import pytest
from fakes import completion_context

from base.errors import ApiError
from base.settings import load
from doors.responses.responses_api import parse_responses

SETTINGS = load({"AI_MODELS": "@cf/openai/gpt-oss-20b,@cf/google/gemma-4-26b-a4b-it"}.get)
CTX = completion_context(SETTINGS)
GPT_OSS, GEMMA = "@cf/openai/gpt-oss-20b", "@cf/google/gemma-4-26b-a4b-it"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "w",
    "parameters": {"type": "object"},
    "strict": True,
}


def inputs(body: dict[str, Any]) -> dict[str, Any]:
    return parse_responses(body, CTX).completion.ai_inputs()


def refused(body: dict[str, Any]) -> tuple[int, str, str]:
    with pytest.raises(ApiError) as info:
        parse_responses(body, CTX)
    return info.value.status, info.value.code, info.value.message


def test_a_string_input_and_instructions_are_a_system_and_a_user_message() -> None:
    assert inputs({"input": "hi", "instructions": "be brief"}) == {
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        "stream": True,
        "max_tokens": 1024,
    }


def test_parameters_become_what_chat_completions_sends() -> None:
    body = {
        "model": GPT_OSS,
        "input": "hi",
        "max_output_tokens": 9,
        "temperature": 0.5,
        "top_p": 0.9,
        "reasoning": {"effort": "low", "summary": "auto"},
        "tools": [WEATHER],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "stop": ["x"],
        "store": False,
        "parallel_tool_calls": False,
        "metadata": {"a": "b"},
        "user": "u",
        "include": [],
        "truncation": "disabled",
        "stream": True,
    }
    request = parse_responses(body, CTX)
    assert request.completion.ai_inputs() == {
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "max_tokens": 9,
        "temperature": 0.5,
        "top_p": 0.9,
        "reasoning_effort": "low",
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "w",
                    "parameters": {"type": "object"},
                    "strict": True,
                },
            }
        ],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    }
    assert request.completion.stop == ("x",) and request.completion.stream
    assert request.echo["tools"] == [WEATHER] and request.echo["max_output_tokens"] == 9


def test_items_map_onto_messages_with_calls_results_and_reasoning() -> None:
    items = [
        {"role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "weather?"}],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "need a tool"}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": "{}",
            "status": "completed",
        },
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "get_weather",
            "arguments": '{"a":1}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": [{"type": "input_text", "text": "rain"}],
        },
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [
                {
                    "type": "output_text",
                    "text": "Sunny and rain.",
                    "annotations": [],
                    "logprobs": [],
                }
            ],
        },
        {"role": "user", "content": "thanks"},
    ]
    assert inputs({"model": GPT_OSS, "input": items, "tools": [WEATHER]})["messages"] == [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"a":1}'},
                },
            ],
            "reasoning": "need a tool",
        },
        {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
        {"role": "tool", "content": "rain", "tool_call_id": "call_2"},
        {"role": "assistant", "content": "Sunny and rain."},
        {"role": "user", "content": "thanks"},
    ]


def test_an_image_part_reaches_a_vision_model() -> None:
    url = "https://example.com/a.png"
    content = [
        {"type": "input_text", "text": "what?"},
        {"type": "input_image", "image_url": url, "detail": "auto"},
    ]
    assert inputs({"model": GEMMA, "input": [{"role": "user", "content": content}]})[
        "messages"
    ] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what?"},
                {"type": "image_url", "image_url": {"url": url}},
            ],
        }
    ]
    assert refused({"model": GPT_OSS, "input": [{"role": "user", "content": content}]}) == (
        400,
        "images_not_supported",
        f"input[0].content[1]: {GPT_OSS} reads text only; send images to a vision model (GET /api/v1/models says which)",
    )


def test_json_schema_format_is_workers_ai_json_mode() -> None:
    fmt = {"type": "json_schema", "name": "city", "schema": {"type": "object"}, "strict": True}
    request = parse_responses(
        {"model": GEMMA, "input": "x", "text": {"format": fmt}, "stream": True}, CTX
    ).completion
    assert request.json_mode and request.ai_inputs()["stream"] is False
    assert request.ai_inputs()["response_format"] == {
        "type": "json_schema",
        "json_schema": {"type": "object"},
    }
    openai_schema = parse_responses(
        {"model": GPT_OSS, "input": "x", "text": {"format": {"type": "json_object"}}}, CTX
    ).completion
    assert openai_schema.ai_inputs()["response_format"] == {"type": "json_object"}
    plain = parse_responses({"input": "x", "text": {"format": {"type": "text"}}}, CTX).completion
    assert not plain.json_mode and "response_format" not in plain.ai_inputs()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"input": "x", "conversation": "conv_1"},
            (
                400,
                "unsupported_parameter",
                "conversation: not supported: use previous_response_id",
            ),
        ),
        (
            {"input": [{"type": "item_reference", "id": "msg_1"}]},
            (
                400,
                "unsupported_parameter",
                'input[0].type: "item_reference" items need stored items; this deployment stores nothing (no RESPONSES binding): send the whole conversation in input',
            ),
        ),
        (
            {"input": "x", "tools": [{"type": "web_search"}]},
            (
                400,
                "unsupported_parameter",
                'tools[0].type: only function tools are supported, got "web_search"',
            ),
        ),
        (
            {"input": "x", "tools": [{"type": "function", "name": "bad name"}]},
            (400, "invalid_field", "tools[0].name: must be 1-64 letters, digits, _ or -"),
        ),
        (
            {"input": "x", "background": True},
            (400, "unsupported_parameter", "background: this service accepts false, got true"),
        ),
        (
            {"input": "x", "frobnicate": 1},
            (
                400,
                "unsupported_parameter",
                "frobnicate: not supported by this service's /v1/responses",
            ),
        ),
        (
            {"input": "x", "max_output_tokens": 0},
            (400, "invalid_field", "max_output_tokens: must be between 1 and 4096, got 0"),
        ),
        (
            {"input": [{"role": "user", "content": "a", "extra": 1}]},
            (
                400,
                "unknown_field",
                "input[0].extra: unknown field; allowed fields are type, role, content, id, status, phase",
            ),
        ),
        (
            {"input": [{"role": "robot", "content": "a"}]},
            (
                400,
                "invalid_field",
                "input[0].role: must be one of 'system', 'developer', 'user', 'assistant', 'tool', got 'robot'",
            ),
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
            (
                400,
                "invalid_field",
                "input[0].content[0].type: 'input_file' parts are not supported here; user messages take input_text and input_image parts",
            ),
        ),
        (
            {"input": [{"type": "function_call_output", "output": "x"}]},
            (400, "invalid_field", "input[0].call_id: must be a non-empty string"),
        ),
        (
            {
                "input": [
                    {"role": "user", "content": "hi"},
                    {"type": "function_call_output", "call_id": "call_9", "output": "x"},
                ]
            },
            (
                400,
                "invalid_field",
                "input[1].call_id: 'call_9' answers no function_call before it in the "
                "conversation (send the function_call item first, or continue with "
                "previous_response_id)",
            ),
        ),
        (
            {
                "input": [
                    {"type": "function_call_output", "call_id": "call_1", "output": "x"},
                    {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": ""},
                ]
            },
            (
                400,
                "invalid_field",
                "input[0].call_id: 'call_1' answers no function_call before it in the "
                "conversation (send the function_call item first, or continue with "
                "previous_response_id)",
            ),
        ),
        (
            {"input": []},
            (400, "invalid_field", "input: must be a string or a non-empty array of input items"),
        ),
        ({}, (400, "invalid_field", "input: is required")),
    ],
)
def test_refusals_name_the_field(body: dict[str, Any], expected: tuple[int, str, str]) -> None:
    assert refused(body) == expected


def test_too_many_messages_names_the_input() -> None:
    items = [{"role": "user", "content": "x"}] * (SETTINGS.max_messages + 1)
    assert refused({"input": items}) == (
        400,
        "too_many_messages",
        f"input: {len(items)} messages exceed the limit of {SETTINGS.max_messages}",
    )


def test_an_error_repeats_no_more_of_a_clients_keys_and_values_than_it_may() -> None:
    """Found by the fuzz on workerd (seed 5): a role that is an object, and an unknown key of
    text.format, went into the message whole."""
    role = {"name": "{" * 500}
    status, code, message = refused(
        {"model": GEMMA, "input": [{"role": role, "content": [{"type": "function"}]}]}
    )
    assert (status, code) == (400, "invalid_field") and "{{{{" not in message, message
    assert message == (
        "input[0].content[0].type: 'function' parts are not supported here; "
        "these messages take input_text and input_image parts"
    )
    status, code, message = refused(
        {"model": GEMMA, "input": "hi", "text": {"format": {"type": "json_object", "k" * 500: 1}}}
    )
    assert (status, code) == (400, "invalid_field") and len(message) < 200, message
    assert message.startswith("text.format." + "k" * 64 + "…: unknown field")
