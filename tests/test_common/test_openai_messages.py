import pytest

from base.errors import ApiError
from common.openai_messages import parse_tool_choice, parse_tools

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather now",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def test_tools_are_checked_and_kept_in_openai_shape() -> None:
    assert parse_tools(
        [WEATHER, {"type": "function", "function": {"name": "now", "strict": None}}]
    ) == (WEATHER, {"type": "function", "function": {"name": "now"}})
    assert parse_tools(None) == parse_tools([]) == ()


@pytest.mark.parametrize(
    ("tools", "field"),
    [
        ({"type": "function"}, "tools"),
        ([{"type": "web_search"}], "tools[0].type"),
        ([{"type": "function", "function": {"name": "bad name"}}], "tools[0].function.name"),
        ([WEATHER, WEATHER], "tools[1].function.name"),
        (
            [{"type": "function", "function": {"name": "f", "parameters": "{}"}}],
            "tools[0].function.parameters",
        ),
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
    assert (
        parse_tool_choice("none", ()) == "none"
        and parse_tool_choice("required", tools) == "required"
    )
    assert parse_tool_choice("any", tools) == "required"  # vLLM-served models refuse "any" (8001)
    named = {"type": "function", "function": {"name": "get_weather"}}
    assert parse_tool_choice(named, tools) == named
    for bad, field in [
        ("required", "tool_choice"),
        ("always", "tool_choice"),
        ({"type": "function", "function": {"name": "other"}}, "tool_choice.function.name"),
    ]:
        with pytest.raises(ApiError) as info:
            parse_tool_choice(bad, tools if bad != "required" else ())
        assert info.value.param == field
