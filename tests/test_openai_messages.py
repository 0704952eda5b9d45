from typing import Any

import pytest

from errors import ApiError
from openai_messages import parse_messages, parse_tool_choice, parse_tools
from settings import load

SETTINGS = load({"AI_MODELS": "m", "MAX_MESSAGE_CHARS": "40"}.get)
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather now",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}


def test_a_tool_round_trip_reaches_the_model_in_openai_shape() -> None:
    messages = parse_messages(
        [
            {"role": "developer", "content": "be brief", "name": "ops"},
            {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
            {"role": "assistant", "content": None, "tool_calls": [CALL], "refusal": None},
            {"role": "assistant", "tool_calls": [{**CALL, "index": 0}]},
            {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "sunny"}]},
        ],
        SETTINGS,
    )
    assert messages == (
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
    )


@pytest.mark.parametrize(
    ("message", "field", "code"),
    [
        ({"role": "assistant", "content": None}, "messages[0].content", "invalid_field"),
        ({"role": "assistant"}, "messages[0].content", "invalid_field"),
        ({"role": "assistant", "content": "", "tool_calls": []}, "messages[0].tool_calls", "invalid_field"),
        ({"role": "assistant", "content": "", "tool_calls": [{**CALL, "type": "code"}]}, "messages[0].tool_calls[0].type", "invalid_field"),
        ({"role": "assistant", "content": "", "tool_calls": [{**CALL, "id": ""}]}, "messages[0].tool_calls[0].id", "invalid_field"),
        ({"role": "assistant", "content": "", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": {}}}]},
         "messages[0].tool_calls[0].function.arguments", "invalid_field"),
        ({"role": "assistant", "content": "", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "x" * 41}}]},
         "messages[0].tool_calls[0].function.arguments", "message_too_long"),
        ({"role": "tool", "content": "x"}, "messages[0].tool_call_id", "invalid_field"),
        ({"role": "tool", "content": "x", "tool_call_id": "c", "name": "f"}, "messages[0].name", "unknown_field"),
        ({"role": "user", "content": "x", "tool_calls": [CALL]}, "messages[0].tool_calls", "unknown_field"),
        ({"role": "user", "content": None}, "messages[0].content", "invalid_field"),
        ({"role": "tool", "content": "x" * 41, "tool_call_id": "c"}, "messages[0].content", "message_too_long"),
    ],
)
def test_bad_messages_name_the_field(message: dict[str, Any], field: str, code: str) -> None:
    with pytest.raises(ApiError) as info:
        parse_messages([message], SETTINGS)
    assert (info.value.code, info.value.param) == (code, field)
    assert info.value.message.startswith(field + ":"), info.value.message


def test_tools_are_checked_and_kept_in_openai_shape() -> None:
    assert parse_tools([WEATHER, {"type": "function", "function": {"name": "now", "strict": None}}]) == (
        WEATHER, {"type": "function", "function": {"name": "now"}})
    assert parse_tools(None) == parse_tools([]) == ()


@pytest.mark.parametrize(
    ("tools", "field"),
    [
        ({"type": "function"}, "tools"),
        ([{"type": "web_search"}], "tools[0].type"),
        ([{"type": "function", "function": {"name": "bad name"}}], "tools[0].function.name"),
        ([WEATHER, WEATHER], "tools[1].function.name"),
        ([{"type": "function", "function": {"name": "f", "parameters": "{}"}}], "tools[0].function.parameters"),
        ([{"type": "function", "function": {"name": "f"}, "extra": 1}], "tools[0].extra"),
    ],
)
def test_bad_tools_name_the_field(tools: object, field: str) -> None:
    with pytest.raises(ApiError) as info:
        parse_tools(tools)
    assert (info.value.code, info.value.param) == ("invalid_field", field)


def test_tool_choice() -> None:
    tools = parse_tools([WEATHER])
    assert parse_tool_choice(None, tools) is None and parse_tool_choice("auto", tools) is None
    assert parse_tool_choice("none", ()) == "none" and parse_tool_choice("required", tools) == "required"
    named = {"type": "function", "function": {"name": "get_weather"}}
    assert parse_tool_choice(named, tools) == named
    for bad, field in [("required", "tool_choice"), ("always", "tool_choice"),
                       ({"type": "function", "function": {"name": "other"}}, "tool_choice.function.name")]:
        with pytest.raises(ApiError) as info:
            parse_tool_choice(bad, tools if bad != "required" else ())
        assert info.value.param == field
