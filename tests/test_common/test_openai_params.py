from typing import Any

import pytest
from conftest import ROOT
from fakes import completion_context

from base.errors import ApiError
from base.settings import load
from common import openai_params
from common.openai_params import NEUTRAL, PARAMS, PASSED, REFUSED, table
from doors.openai_chat.openai_compat import parse_completion

NATIVE = "@cf/meta/llama-3.1-8b-instruct"
OPENAI = "@cf/openai/gpt-oss-20b"
SETTINGS = load({"AI_MODELS": f"{NATIVE},{OPENAI}"}.get)
USER = [{"role": "user", "content": "hi"}]


CTX = completion_context(SETTINGS)


def inputs(model: str = NATIVE, **params: Any) -> dict[str, Any]:
    return parse_completion({"model": model, "messages": USER, **params}, CTX).ai_inputs()


def refusal(model: str = NATIVE, **params: Any) -> ApiError:
    with pytest.raises(ApiError) as info:
        parse_completion({"model": model, "messages": USER, **params}, CTX)
    return info.value


# A client that wants the answer whole still gets it streamed from the model (silence times
# out, not length); JSON mode is the exception, which Workers AI does not stream.
BASE = {"messages": USER, "stream": True, "max_tokens": 1024}
WHOLE = {**BASE, "stream": False}


@pytest.mark.parametrize(
    ("model", "params", "sent"),
    [
        (
            NATIVE,
            {
                "temperature": 0.2,
                "top_p": 0.9,
                "top_k": 40,
                "seed": 7,
                "frequency_penalty": 0.5,
                "presence_penalty": -1,
                "repetition_penalty": 1.1,
            },
            {
                "temperature": 0.2,
                "top_p": 0.9,
                "top_k": 40,
                "seed": 7,
                "frequency_penalty": 0.5,
                "presence_penalty": -1,
                "repetition_penalty": 1.1,
            },
        ),
        (
            OPENAI,
            {"top_k": 40, "repetition_penalty": 1.1, "min_p": 0.05},
            {"top_k": 40, "repetition_penalty": 1.1, "min_p": 0.05},
        ),
        (
            OPENAI,
            {"reasoning_effort": "low", "reasoning": {"effort": "high"}},
            {"reasoning_effort": "low"},
        ),
        (
            OPENAI,
            {"reasoning": {"effort": "high", "enabled": True, "exclude": False}},
            {"reasoning_effort": "high"},
        ),
        # OpenRouter's way to ask for no thinking.
        (OPENAI, {"reasoning": {"enabled": False}}, {"reasoning_effort": "none"}),
        # stop strings are the relay's (test_stop.py): never sent to the model
        (OPENAI, {"stop": ["END", "\n\n", "a", "b", "c", "d"]}, {}),
        (NATIVE, {"stop": "END"}, {}),
    ],
)
def test_passed_parameters_reach_the_inputs(
    model: str, params: dict[str, object], sent: dict[str, object]
) -> None:
    assert inputs(model, **params) == {**BASE, **sent}


# What the clients named in issue 12 send by default: every one of them is accepted, and
# none reaches the model.
NEUTRAL_DEFAULTS: dict[str, object] = {
    "stop": [],
    "logprobs": False,
    "top_logprobs": 0,
    "n": 1,
    "parallel_tool_calls": False,
    "store": False,
    "response_format": {"type": "text"},
    "user": "u-1",
    "metadata": {"k": "v"},
    "service_tier": "auto",
    "logit_bias": {},
    "modalities": ["text"],
    "safety_identifier": "s",
    "prompt_cache_key": "k",
    "verbosity": "medium",
    "tools": [],
    "tool_choice": "auto",
    "stream_options": None,
    "audio": None,
    "functions": None,
}


@pytest.mark.parametrize("model", [NATIVE, OPENAI])
def test_neutral_values_are_accepted_and_send_nothing(model: str) -> None:
    assert inputs(model, **NEUTRAL_DEFAULTS) == BASE
    assert inputs(model, stop="") == BASE
    nulls = {p.name: None for p in PARAMS if p.name not in ("messages", "model")}
    assert inputs(model, **nulls) == BASE


@pytest.mark.parametrize(
    ("model", "name", "value", "needle"),
    [
        (NATIVE, "n", 2, "n: this service accepts 1 only, got 2"),
        (NATIVE, "logprobs", True, "logprobs: this service accepts false only, got true"),
        (NATIVE, "store", True, "store: this service accepts false only"),
        (
            NATIVE,
            "logit_bias",
            {"50256": -100},
            'logit_bias: this service accepts {} only, got {"50256": -100}',
        ),
        (
            NATIVE,
            "service_tier",
            "priority",
            "service_tier: this service accepts auto or default only",
        ),
        (NATIVE, "modalities", ["text", "audio"], 'modalities: this service accepts ["text"] only'),
        (
            NATIVE,
            "audio",
            {"voice": "alloy", "format": "mp3"},
            "audio: not supported: no audio output",
        ),
        (
            NATIVE,
            "functions",
            [{"name": "f"}],
            "functions: not supported: deprecated by OpenAI: use `tools`",
        ),
        (NATIVE, "min_p", 0.1, f"min_p: not supported by {NATIVE}"),
        (NATIVE, "best_of", 2, "best_of: not supported by this service"),
    ],
)
def test_what_cannot_be_honoured_is_refused_by_name(
    model: str, name: str, value: object, needle: str
) -> None:
    error = refusal(model, **{name: value})
    assert (error.status, error.code, error.param) == (400, "unsupported_parameter", name)
    assert needle in error.message, error.message


@pytest.mark.parametrize(
    ("name", "value", "field", "needle"),
    [
        ("top_p", 1.5, "top_p", "must be between 0 and 1, got 1.5"),
        ("top_k", 2.5, "top_k", "must be an integer"),
        ("top_k", 0, "top_k", "must be between 1 and 50"),
        ("seed", True, "seed", "must be an integer"),
        ("seed", 0, "seed", "must be between 1 and 9999999999"),
        ("frequency_penalty", "0", "frequency_penalty", "must be a number"),
        ("presence_penalty", 3, "presence_penalty", "must be between -2 and 2"),
        ("repetition_penalty", -0.1, "repetition_penalty", "must be between 0 and 2"),
        ("stop", [1], "stop", "must be a string or an array of strings"),
        ("stop", ["s"] * 17, "stop", "at most 16 stop strings, got 17"),
        ("stop", ["a", ""], "stop[1]", "must not be empty"),
        ("min_p", 1.5, "min_p", "must be between 0 and 1"),
        ("reasoning", "high", "reasoning", "must be an object"),
        (
            "reasoning",
            {"effort": "maximum"},
            "reasoning.effort",
            'must be one of "none", "minimal", "low", "medium", "high", "xhigh", "max", got "maximum"',
        ),
        (
            "reasoning",
            {"max_tokens": 100},
            "reasoning.max_tokens",
            "takes reasoning.effort only (got 100)",
        ),
        ("reasoning_effort", True, "reasoning_effort", "got true"),
        ("logprobs", "no", "logprobs", "must be a boolean"),
        ("n", 1.0, "n", "must be an integer"),
        ("user", 5, "user", "must be a string"),
        ("metadata", [], "metadata", "must be an object"),
        (
            "response_format",
            {"type": "xml"},
            "response_format",
            'must be {"type": "text" | "json_object" | "json_schema"',
        ),
        ("response_format", {"type": "json_schema"}, "response_format.json_schema", "is required"),
        (
            "response_format",
            {"type": "json_schema", "json_schema": {"name": "a b"}},
            "response_format.json_schema.name",
            "1-64 letters",
        ),
        (
            "response_format",
            {"type": "json_object", "schema": {}},
            "response_format.schema",
            "unknown field",
        ),
    ],
)
def test_bad_values_are_invalid_fields_named(
    name: str, value: object, field: str, needle: str
) -> None:
    params: dict[str, Any] = {name: value}
    error = refusal(NATIVE, **params)
    assert (error.code, error.param) == ("invalid_field", field)
    assert error.message.startswith(f"{field}: ") and needle in error.message, error.message


SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def test_json_mode_is_not_streamed_upstream_and_speaks_each_schema() -> None:
    openai_format = {
        "type": "json_schema",
        "json_schema": {"name": "place", "schema": SCHEMA, "strict": True},
    }
    request = parse_completion(
        {"model": NATIVE, "messages": USER, "stream": True, "response_format": openai_format}, CTX
    )
    assert request.stream and request.json_mode
    assert request.ai_inputs() == {
        **WHOLE,
        "response_format": {"type": "json_schema", "json_schema": SCHEMA},
    }
    assert inputs(OPENAI, response_format=openai_format, stream=True) == {
        **WHOLE,
        "response_format": openai_format,
    }
    assert inputs(NATIVE, response_format={"type": "json_object"}) == {
        **WHOLE,
        "response_format": {"type": "json_object"},
    }
    plain = parse_completion(
        {"model": NATIVE, "messages": USER, "stream": True, "response_format": {"type": "text"}},
        CTX,
    )
    assert plain.ai_inputs()["stream"] is True and not plain.json_mode


def test_every_parameter_has_a_handling_the_table_shows() -> None:
    assert {p.handling for p in PARAMS} <= {PASSED, NEUTRAL, REFUSED, openai_params.OWN}
    rendered = table()
    for p in PARAMS:
        assert f"| `{p.name}` |" in rendered
    assert len(rendered.splitlines()) == len(PARAMS) + 2


README = ROOT / "docs" / "API.md"  # the API reference holds the table


def test_readme_parameter_table_is_the_code_table() -> None:
    assert table() in README.read_text(encoding="utf-8")
