"""Every Chat Completions parameter and what this service does with it: one table, read by
the request parser and rendered for the README (``python src/common/openai_params.py``).

A parameter is passed (it reaches env.AI.run inside the inputs object), accepted as neutral
(a value that asks for nothing different from what we do, like ``logprobs: false``: any
other value is refused), or refused. Refusals are 400 ``unsupported_parameter`` naming the
parameter: only what would change the answer and cannot be honoured is refused, and a wrong
type or range is 400 ``invalid_field`` naming the field, whatever the parameter's handling.

Workers AI models take one of two input schemas (@cloudflare/workers-types 5.20261117.1):
the native one (``AiTextGenerationInput``: top_k and repetition_penalty, no stop; JSON mode
as ``{"type": "json_schema", "json_schema": <the schema>}``) or OpenAI's
(``ChatCompletionsInput``, the models that stream OpenAI-shaped chunks: gpt-oss, Kimi, GLM,
QwQ: stop, OpenAI's response_format). A parameter one schema lacks is refused for its models.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from base import catalog
from base.errors import ApiError, clip, invalid, json_shown
from checks.chat_request import REASONING_EFFORTS, is_number
from checks.stops import MAX_STOPS

PASSED = "passed"
NEUTRAL = "neutral"
REFUSED = "refused"
OWN = "endpoint"  # read by the endpoint itself (model, messages, stream, ...)


def takes_openai_inputs(model: str) -> bool:
    return catalog.info(model).openai_schema


Check = Callable[[str, object], object]


@dataclass(frozen=True, slots=True, kw_only=True)
class Param:
    """``check`` validates a non-null value and returns what is sent (passed parameters).
    ``neutral`` says which values are accepted for a neutral or refused parameter.
    ``models``: "native" or "openai" when only that input schema has the parameter.
    ``built``: passed, but the endpoint builds what is sent (from two fields, or converted)."""

    name: str
    handling: str
    note: str
    check: Check | None = None
    neutral: Callable[[object], bool] | None = None
    models: str | None = None
    built: bool = False


def unsupported(name: str, why: str) -> ApiError:
    # The name may be anything a client sent: echo it clipped and safely encodable.
    return ApiError(400, "unsupported_parameter", f"{clip(name)}: {why}", param=clip(name))


def _shown(bound: float) -> str:
    return str(int(bound)) if bound == int(bound) else f"{bound:g}"


def number(low: float, high: float, *, integer: bool = False) -> Check:
    def check(name: str, value: object) -> object:
        if integer and not (isinstance(value, int) and not isinstance(value, bool)):
            raise invalid(name, "must be an integer")
        if not is_number(value):
            raise invalid(name, "must be a number")
        assert isinstance(value, (int, float))
        if not low <= value <= high:
            raise invalid(name, f"must be between {_shown(low)} and {_shown(high)}, got {value}")
        return value

    return check


def of_type(kind: type, described: str) -> Check:
    def check(name: str, value: object) -> object:
        if not isinstance(value, kind):
            raise invalid(name, f"must be {described}")
        return value

    return check


def reasoning_object(name: str, value: object) -> object:
    """OpenRouter's `reasoning: {"effort": ...}`: the effort, sent as reasoning_effort."""
    if not isinstance(value, dict):
        raise invalid(name, 'must be an object, e.g. {"effort": "low"}')
    for key, item in value.items():
        if key == "effort":
            if item not in REASONING_EFFORTS:
                allowed = ", ".join(json.dumps(e) for e in REASONING_EFFORTS)
                raise invalid(f"{name}.effort", f"must be one of {allowed}, got {json_shown(item)}")
        elif (key == "enabled" and item is True) or (key == "exclude" and item is False):
            continue  # what happens anyway: the model reasons, and its reasoning is sent
        elif key == "enabled" and item is False and value.get("effort") in (None, "none"):
            continue  # no thinking: effort "none" (base/thinking.py)
        else:
            raise invalid(
                f"{name}.{clip(key)}",
                f"not supported: this service takes {name}.effort only (got {json_shown(item)})",
            )
    if value.get("enabled") is False:
        return "none"
    return value.get("effort")


JSON_TYPES = ("text", "json_object", "json_schema")


def response_format(name: str, value: object) -> object:
    if not isinstance(value, dict) or value.get("type") not in JSON_TYPES:
        raise invalid(name, 'must be {"type": "text" | "json_object" | "json_schema", ...}')
    kind = value["type"]
    allowed = {"type", "json_schema"} if kind == "json_schema" else {"type"}
    extra = [k for k in value if k not in allowed]
    if extra:
        raise invalid(f"{name}.{clip(extra[0])}", f"unknown field for type {kind!r}")
    if kind == "json_schema":
        spec = value.get("json_schema")
        where = f"{name}.json_schema"
        if not isinstance(spec, dict):
            raise invalid(where, 'is required: {"name": ..., "schema": {...}}')
        if not isinstance(spec.get("name"), str) or not re.fullmatch(
            r"[A-Za-z0-9_-]{1,64}", spec["name"]
        ):
            raise invalid(f"{where}.name", "must be 1-64 letters, digits, _ or -")
        if not isinstance(spec.get("schema", {}), dict):
            raise invalid(f"{where}.schema", "must be a JSON Schema object")
        for key in spec:
            if key not in ("name", "schema", "strict", "description"):
                raise invalid(f"{where}.{clip(key)}", "unknown field")
    return value


def _text_format(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") == "text"


def is_json_mode(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") in ("json_object", "json_schema")


def native_response_format(value: dict[str, Any]) -> dict[str, Any]:
    """Workers AI's native JSON mode takes the schema itself as json_schema."""
    if value["type"] == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": value["json_schema"].get("schema", {"type": "object"}),
        }
    return {"type": "json_object"}


def _equals(*values: object) -> Callable[[object], bool]:
    return lambda value: any(value == v and type(value) is type(v) for v in values)


def _anything(value: object) -> bool:
    return True


_string = of_type(str, "a string")
_boolean = of_type(bool, "a boolean")
_object = of_type(dict, "an object")

PARAMS: tuple[Param, ...] = (
    Param(name="model", handling=OWN, note="one of `AI_MODELS`; the default model when absent"),
    Param(
        name="messages",
        handling=OWN,
        note="`system`, `developer` (sent as system), `user` (text and `image_url` parts), `assistant` (with `tool_calls`, and whatever the SDK put on the message it built: its reasoning goes back as `reasoning`), `tool` (with `tool_call_id`)",
    ),
    Param(name="stream", handling=OWN, note="chunks ending in `data: [DONE]`"),
    Param(
        name="stream_options",
        handling=OWN,
        note="`include_usage` (a last chunk with `usage`); `include_obfuscation` accepted, no padding is added",
    ),
    Param(
        name="max_tokens",
        handling=PASSED,
        note="1 to `AI_MAX_TOKENS_LIMIT`; `AI_MAX_TOKENS_DEFAULT` when absent",
        built=True,
    ),
    Param(
        name="max_completion_tokens",
        handling=PASSED,
        note="same as `max_tokens` (wins over it)",
        built=True,
    ),
    Param(name="temperature", handling=PASSED, note="0 to 5", check=number(0, 5)),
    Param(name="top_p", handling=PASSED, note="0 to 1", check=number(0, 1)),
    Param(name="top_k", handling=PASSED, note="1 to 50", check=number(1, 50, integer=True)),
    Param(
        name="seed",
        handling=PASSED,
        note="1 to 9999999999",
        check=number(1, 9_999_999_999, integer=True),
    ),
    Param(name="frequency_penalty", handling=PASSED, note="-2 to 2", check=number(-2, 2)),
    Param(name="presence_penalty", handling=PASSED, note="-2 to 2", check=number(-2, 2)),
    Param(name="repetition_penalty", handling=PASSED, note="0 to 2", check=number(0, 2)),
    Param(
        name="min_p",
        handling=PASSED,
        note="0 to 1; OpenAI-schema models only (vLLM's sampling parameter)",
        check=number(0, 1),
        models="openai",
    ),
    Param(
        name="stop",
        handling=OWN,
        note=f'a string or up to {MAX_STOPS} strings, on every model: the relay cuts the answer right before the first one (`finish_reason: "stop"`) and stops the model',
    ),
    Param(
        name="response_format",
        handling=PASSED,
        note="`json_object` / `json_schema`: Workers AI JSON mode (not streamed upstream: a streamed request gets the whole answer as chunks); `text` is neutral",
        check=response_format,
        neutral=_text_format,
        built=True,
    ),
    Param(
        name="tools", handling=PASSED, note="`function` tools; `[]` is the same as none", built=True
    ),
    Param(
        name="tool_choice",
        handling=PASSED,
        note="`auto` (the default), `none` (tools are not sent), `required` (`any` is sent as `required`), or one named function",
        built=True,
    ),
    Param(
        name="reasoning_effort",
        handling=PASSED,
        note="`low`, `medium`, `high` (reasoning models)",
        built=True,
    ),
    Param(
        name="reasoning",
        handling=PASSED,
        note='`{"effort": ...}` (OpenRouter\'s form): sent as `reasoning_effort` (`{"enabled": false}`: `"none"`); `reasoning_effort` wins when both are given',
        check=reasoning_object,
        built=True,
    ),
    Param(
        name="parallel_tool_calls",
        handling=NEUTRAL,
        note="any boolean; the model decides how many calls it makes",
        check=_boolean,
        neutral=_anything,
    ),
    Param(
        name="n",
        handling=NEUTRAL,
        note="`1` only",
        check=number(1, 128, integer=True),
        neutral=_equals(1),
    ),
    Param(
        name="logprobs",
        handling=NEUTRAL,
        note="`false` only",
        check=_boolean,
        neutral=_equals(False),
    ),
    Param(
        name="top_logprobs",
        handling=NEUTRAL,
        note="`0` only",
        check=number(0, 20, integer=True),
        neutral=_equals(0),
    ),
    Param(
        name="logit_bias", handling=NEUTRAL, note="`{}` only", check=_object, neutral=_equals({})
    ),
    Param(
        name="store",
        handling=NEUTRAL,
        note="`false` only (nothing is stored)",
        check=_boolean,
        neutral=_equals(False),
    ),
    Param(
        name="metadata",
        handling=NEUTRAL,
        note="any object; ignored (it only tags stored completions)",
        check=_object,
        neutral=_anything,
    ),
    Param(
        name="user",
        handling=NEUTRAL,
        note="any string; the conversation's cache key when there is no `X-Session-Affinity` header or `prompt_cache_key` (sent as `x-session-affinity`)",
        check=_string,
        neutral=_anything,
    ),
    Param(
        name="safety_identifier",
        handling=NEUTRAL,
        note="any string; ignored",
        check=_string,
        neutral=_anything,
    ),
    Param(
        name="prompt_cache_key",
        handling=NEUTRAL,
        note="any string; the conversation's cache key when there is no `X-Session-Affinity` header (sent as `x-session-affinity`)",
        check=_string,
        neutral=_anything,
    ),
    Param(
        name="service_tier",
        handling=NEUTRAL,
        note="`auto` or `default` only",
        check=_string,
        neutral=_equals("auto", "default"),
    ),
    Param(name="modalities", handling=NEUTRAL, note='`["text"]` only', neutral=_equals(["text"])),
    Param(
        name="verbosity",
        handling=NEUTRAL,
        note="`medium` only",
        check=_string,
        neutral=_equals("medium"),
    ),
    Param(
        name="prediction",
        handling=NEUTRAL,
        note="accepted, ignored (it only speeds up an answer)",
        check=_object,
        neutral=_anything,
    ),
    Param(name="audio", handling=REFUSED, note="no audio output"),
    Param(name="web_search_options", handling=REFUSED, note="no web search"),
    Param(name="functions", handling=REFUSED, note="deprecated by OpenAI: use `tools`"),
    Param(name="function_call", handling=REFUSED, note="deprecated by OpenAI: use `tool_choice`"),
)

BY_NAME = {p.name: p for p in PARAMS}
HANDLING_TEXT = {
    OWN: "read by the endpoint",
    PASSED: "passed to the model",
    NEUTRAL: "accepted as neutral",
    REFUSED: "refused",
}


def read(name: str, value: object, model: str) -> object | None:
    """The value to send for a passed parameter, None for one that sends nothing; raises
    ApiError for an unknown parameter, a bad value or one that cannot be honoured."""
    param = BY_NAME.get(name)
    if param is None:
        raise unsupported(
            name, "not supported by this service (see the parameter table in the README)"
        )
    if param.handling == OWN or value is None:
        return None
    if param.check is not None:
        value = param.check(name, value)
    if param.neutral is not None and param.neutral(value):
        return None
    if param.handling == NEUTRAL:
        accepted = param.note.split(";")[0].replace("`", "")
        raise unsupported(name, f"this service accepts {accepted}, got {json_shown(value)}")
    if param.handling == REFUSED:
        raise unsupported(name, f"not supported: {param.note}")
    openai_inputs = takes_openai_inputs(model)
    if param.models is not None and param.models != ("openai" if openai_inputs else "native"):
        raise unsupported(name, f"not supported by {model}")
    return value


def table() -> str:
    """The README's parameter table, from PARAMS."""
    lines = ["| parameter | handling | values |", "|---|---|---|"]
    for p in PARAMS:
        lines.append(f"| `{p.name}` | {HANDLING_TEXT[p.handling]} | {p.note} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(table(), end="")
