"""The one message checker, for both APIs: what real clients send, and what is still refused."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from base import catalog
from base.errors import ApiError
from base.settings import load
from checks.messages import CHAT, OPENAI, Dialect, parse_conversation

SETTINGS = load(
    {"AI_MODELS": "m", "MAX_MESSAGE_CHARS": "40", "MAX_IMAGES": "2", "MAX_IMAGE_BYTES": "1024"}.get
)
BIG = load({"AI_MODELS": "m"}.get)  # the shipped defaults
GEMMA = "@cf/google/gemma-4-26b-a4b-it"
GPT_OSS = "@cf/openai/gpt-oss-20b"
LLAMA = "@cf/meta/llama-3.1-8b-instruct-fast"
SCOUT = "@cf/meta/llama-4-scout-17b-16e-instruct"
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
}
PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 100).decode()


def parse(
    messages: list[Any], model: str = GEMMA, dialect: Dialect = OPENAI, settings: Any = SETTINGS
) -> tuple[dict[str, Any], ...]:
    return parse_conversation(
        messages, settings, dialect=dialect, model=model, facts=catalog.info(model)
    ).messages


def refusal(messages: list[Any], model: str = GEMMA, dialect: Dialect = OPENAI) -> ApiError:
    with pytest.raises(ApiError) as info:
        parse(messages, model, dialect)
    return info.value


def test_a_tool_round_trip_reaches_the_model_in_openai_shape() -> None:
    messages = parse(
        [
            {"role": "developer", "content": "be brief", "name": "ops"},
            {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
            {"role": "assistant", "content": None, "tool_calls": [CALL], "refusal": None},
            {"role": "assistant", "tool_calls": [{**CALL, "index": 0}]},
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "name": "get_weather",
                "content": [{"type": "text", "text": "sunny"}],
            },
        ]
    )
    assert messages == (
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
    )


# The assistant message each SDK builds from our answer and sends back on the next turn.
SDK_ECHOES: dict[str, dict[str, Any]] = {
    # openai-python's ChatCompletionMessage.model_dump() after a reasoning answer
    "openai-python": {
        "role": "assistant",
        "content": "Paris.",
        "refusal": None,
        "annotations": [],
        "audio": None,
        "function_call": None,
        "tool_calls": None,
        "reasoning_content": "The capital is Paris.",
    },
    # openai-python's parse() helper keeps the parsed object too
    "openai-python parse()": {
        "role": "assistant",
        "content": '{"a":1}',
        "parsed": {"a": 1},
        "refusal": None,
        "reasoning_content": "The capital is Paris.",
    },
    # openai-node pushes the message object as it came
    "openai-node": {
        "role": "assistant",
        "content": "Paris.",
        "refusal": None,
        "reasoning_content": "The capital is Paris.",
    },
    # OpenRouter-style: reasoning as a string, and its details
    "openrouter": {
        "role": "assistant",
        "content": "Paris.",
        "reasoning": "The capital is Paris.",
        "reasoning_details": [{"type": "reasoning.text", "text": "The capital is Paris."}],
    },
    # Kimi-style: the same text in both fields
    "both fields": {
        "role": "assistant",
        "content": "Paris.",
        "reasoning": "The capital is Paris.",
        "reasoning_content": "The capital is Paris.",
    },
    # reasoning as an object
    "object": {
        "role": "assistant",
        "content": "Paris.",
        "reasoning": {"text": "The capital is Paris."},
    },
}


@pytest.mark.parametrize("sdk", SDK_ECHOES)
def test_an_sdks_own_message_goes_back_with_its_reasoning_as_reasoning(sdk: str) -> None:
    echo = SDK_ECHOES[sdk]
    messages = parse(
        [{"role": "user", "content": "capital?"}, echo, {"role": "user", "content": "and Spain?"}],
        GPT_OSS,
    )
    assert messages[1] == {
        "role": "assistant",
        "content": echo["content"],
        "reasoning": "The capital is Paris.",
    }


@pytest.mark.parametrize("sdk", SDK_ECHOES)
def test_a_model_that_does_not_reason_gets_no_reasoning_back(sdk: str) -> None:
    messages = parse([{"role": "user", "content": "capital?"}, SDK_ECHOES[sdk]], LLAMA)
    assert messages[1] == {"role": "assistant", "content": SDK_ECHOES[sdk]["content"]}


def test_the_chat_api_takes_reasoning_on_an_assistant_turn() -> None:
    turn = {"role": "assistant", "content": "Paris.", "reasoning": "The capital is Paris."}
    assert parse([{"role": "user", "content": "q"}, turn], GPT_OSS, CHAT)[1] == turn
    assert (
        refusal([{"role": "tool", "content": "x", "tool_call_id": "c"}], GPT_OSS, CHAT).param
        == "messages[0].role"
    )
    error = refusal([{"role": "assistant", "content": "", "tool_calls": [CALL]}], GPT_OSS, CHAT)
    assert (error.param, error.message) == (
        "messages[0].tool_calls",
        "messages[0].tool_calls: this API has no tools: use /v1/chat/completions",
    )


def test_a_45k_character_system_prompt_in_text_parts_fits_the_defaults() -> None:
    prompt = [
        {"type": "text", "text": "You are Cline. " * 1500},
        {"type": "text", "text": "x" * 22_500},
    ]
    messages = parse(
        [{"role": "system", "content": prompt}, {"role": "user", "content": "hi"}], settings=BIG
    )
    assert len(messages[0]["content"]) == 45_000


def test_an_image_reaches_a_vision_model_as_an_image_url_part() -> None:
    content = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": PNG, "detail": "auto"}},
    ]
    assert parse([{"role": "user", "content": content}])[0]["content"] == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": PNG}},
    ]
    remote = "https://example.com/cat.png"
    assert parse([{"role": "user", "content": [{"type": "image_url", "image_url": remote}]}])[0][
        "content"
    ] == [{"type": "image_url", "image_url": {"url": remote}}]


@pytest.mark.parametrize(
    ("model", "url", "code", "field", "says"),
    [
        (LLAMA, PNG, "images_not_supported", "messages[0].content[0]", f"{LLAMA} reads text only"),
        (
            SCOUT,
            "https://example.com/cat.png",
            "invalid_field",
            "messages[0].content[0].image_url.url",
            "takes images only as data:",
        ),
        (
            GEMMA,
            "http://example.com/cat.png",
            "invalid_field",
            "messages[0].content[0].image_url.url",
            "https: URL",
        ),
        (
            GEMMA,
            "data:image/png;base64,@@@@",
            "invalid_field",
            "messages[0].content[0].image_url.url",
            "not valid base64",
        ),
        (
            GEMMA,
            "data:image/png;base64,iVBORw0KGgo\u00e9=",  # not ASCII: ValueError, not binascii.Error
            "invalid_field",
            "messages[0].content[0].image_url.url",
            "not valid base64",
        ),
        (
            GEMMA,
            "data:image/png;base64,",
            "invalid_field",
            "messages[0].content[0].image_url.url",
            "the image is empty (0 bytes)",
        ),
        (
            GEMMA,
            "data:image/png;base64," + base64.b64encode(b"\xff\xd8\xff\xe0 a jpeg").decode(),
            "invalid_field",
            "messages[0].content[0].image_url.url",
            "the bytes are not a PNG image",
        ),
        (
            GEMMA,
            "https://169.254.169.254/latest/meta-data",
            "invalid_field",
            "messages[0].content[0].image_url.url",
            "must not point to a loopback, private or link-local address",
        ),
        (
            GEMMA,
            "data:text/html;base64,PGI+",
            "invalid_field",
            "messages[0].content[0].image_url.url",
            "data:image/",
        ),
        (
            GEMMA,
            "data:image/png;base64," + base64.b64encode(b"\0" * 1025).decode(),
            "image_too_large",
            "messages[0].content[0]",
            "1025 bytes, more than the limit of 1024",
        ),
    ],
)
def test_images_that_cannot_be_sent_are_refused_naming_the_part(
    model: str, url: str, code: str, field: str, says: str
) -> None:
    error = refusal(
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}], model
    )
    assert (error.status, error.code, error.param) == (400, code, field)
    assert says in error.message, error.message


def test_more_images_than_the_limit_are_refused() -> None:
    part = {"type": "image_url", "image_url": {"url": PNG}}
    parse([{"role": "user", "content": [part, part]}])
    error = refusal(
        [{"role": "user", "content": [part]}, {"role": "user", "content": [part, part]}]
    )
    assert (error.code, error.param) == ("too_many_images", "messages[1].content[1]")


@pytest.mark.parametrize(
    ("message", "field", "code"),
    [
        (
            {"role": "assistant", "content": "", "tool_calls": [{**CALL, "type": "code"}]},
            "messages[0].tool_calls[0].type",
            "invalid_field",
        ),
        (
            {"role": "assistant", "content": "", "tool_calls": [{**CALL, "id": ""}]},
            "messages[0].tool_calls[0].id",
            "invalid_field",
        ),
        (
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{**CALL, "function": {"name": "f", "arguments": {}}}],
            },
            "messages[0].tool_calls[0].function.arguments",
            "invalid_field",
        ),
        (
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "x" * 41}}],
            },
            "messages[0].tool_calls[0].function.arguments",
            "message_too_long",
        ),
        (
            {"role": "assistant", "content": "", "tool_calls": {}},
            "messages[0].tool_calls",
            "invalid_field",
        ),
        (
            {
                "role": "assistant",
                "content": "x",
                "function_call": {"name": "f", "arguments": "{}"},
            },
            "messages[0].function_call",
            "invalid_field",
        ),
        (
            {"role": "assistant", "content": "x", "reasoning": 5},
            "messages[0].reasoning",
            "invalid_field",
        ),
        (
            {"role": "assistant", "content": "x", "thoughts": "hmm"},
            "messages[0].thoughts",
            "unknown_field",
        ),
        (
            {"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": PNG}}]},
            "messages[0].content[0].type",
            "invalid_field",
        ),
        ({"role": "tool", "content": "x"}, "messages[0].tool_call_id", "invalid_field"),
        (
            {"role": "user", "content": "x", "tool_calls": [CALL]},
            "messages[0].tool_calls",
            "unknown_field",
        ),
        ({"role": "user", "content": None}, "messages[0].content", "invalid_field"),
        ({"role": "user", "content": " "}, "messages[0].content", "invalid_field"),
        (
            {"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]},
            "messages[0].content[0].type",
            "invalid_field",
        ),
        (
            {"role": "tool", "content": "x" * 41, "tool_call_id": "c"},
            "messages[0].content",
            "message_too_long",
        ),
        (
            {
                "role": "user",
                "content": [{"type": "text", "text": "x" * 21}, {"type": "text", "text": "y" * 20}],
            },
            "messages[0].content",
            "message_too_long",
        ),
    ],
)
def test_bad_messages_name_the_field(message: dict[str, Any], field: str, code: str) -> None:
    error = refusal([message])
    assert (error.code, error.param) == (code, field)
    assert error.message.startswith(field + ":"), error.message
