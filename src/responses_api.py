"""POST /v1/responses: the OpenAI Responses API, stateless, over the same relay.

The request becomes what /v1/chat/completions would have sent: its input items are mapped
onto Chat Completions messages (``instructions`` a system message first; a ``function_call``
an assistant tool call; a ``function_call_output`` a tool message; a ``reasoning`` item the
next assistant message's reasoning), then checked by the one conversation checker; tools
(Responses' flat shape), tool_choice, ``text.format`` and ``reasoning`` become their Chat
Completions forms and go through the same checks. Nothing is stored: ``store: true``,
``previous_response_id`` and ``conversation`` are refused, saying so.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any

import catalog
import openai_params
from app import Api, Context, Route, answer_whole, new_relay, open_upstream, parse_body
from chat_request import parse_max_tokens, parse_model
from conversation import OPENAI, parse_conversation
from errors import ApiError, clip, invalid, json_shown, shown
from openai_compat import CompletionRequest, openai_error
from openai_messages import parse_tool_choice, parse_tools
from responses_events import ResponsesEncoder
from stop import parse_stop
from web import SSE_HEADERS, Relayed, WebResponse, json_response

PATH = "/v1/responses"

_STATELESS = "this service stores nothing: send the whole conversation in input"
# Accepted when they ask for nothing different from what is done anyway; the value test.
_NEUTRAL: dict[str, tuple[str, Any]] = {
    "parallel_tool_calls": ("any boolean", lambda v: isinstance(v, bool)),
    "metadata": ("any object (ignored)", lambda v: isinstance(v, dict)),
    "user": ("any string (ignored)", lambda v: isinstance(v, str)),
    "safety_identifier": ("any string (ignored)", lambda v: isinstance(v, str)),
    "prompt_cache_key": ("any string (ignored)", lambda v: isinstance(v, str)),
    "prompt_cache_retention": ("any string (ignored)", lambda v: isinstance(v, str)),
    "service_tier": ('"auto" or "default"', lambda v: v in ("auto", "default")),
    "truncation": (
        '"disabled" (a conversation too long for the model is a 400)',
        lambda v: v == "disabled",
    ),
    "include": (
        "an array of strings (nothing more is included)",
        lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
    ),
    "background": ("false", lambda v: v is False),
    "top_logprobs": ("0", lambda v: v == 0 and not isinstance(v, bool)),
    "max_tool_calls": (
        "an integer (it bounds built-in tools, which this service has none of)",
        lambda v: isinstance(v, int) and not isinstance(v, bool),
    ),
    "stream_options": (
        "an object of include_obfuscation",
        lambda v: isinstance(v, dict) and set(v) <= {"include_obfuscation"},
    ),
}
_OWN = (
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "max_output_tokens",
    "temperature",
    "top_p",
    "reasoning",
    "text",
    "stream",
    "stop",
    "store",
    "previous_response_id",
    "conversation",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponsesRequest:
    completion: CompletionRequest  # what reaches the model: the same as the other OpenAI door's
    echo: dict[str, Any]  # the request's fields a Response repeats


def _refuse(name: str, why: str) -> ApiError:
    return ApiError(400, "unsupported_parameter", f"{name}: {why}", param=name)


def _text_of(where: str, parts: object, kinds: tuple[str, ...]) -> str:
    """A string, or content parts of the given kinds joined (a tool's output, instructions)."""
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        raise invalid(where, "must be a string or an array of content parts")
    out = []
    for i, part in enumerate(parts):
        if (
            not isinstance(part, dict)
            or part.get("type") not in kinds
            or not isinstance(part.get("text"), str)
        ):
            raise invalid(
                f"{where}[{i}]", f"must be a part of type {' or '.join(kinds)} with a text"
            )
        out.append(part["text"])
    return "".join(out)


def _content(where: str, value: object, role: str) -> object:
    """A message's content in Chat Completions parts, one part for one part (so an error the
    conversation checker finds at content[j] is at content[j] of the input item too)."""
    if not isinstance(value, list):
        return value  # a string; anything else the conversation checker refuses
    out: list[Any] = []
    for j, part in enumerate(value):
        at = f"{where}[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(part, dict):
            raise invalid(at, 'must be a content part, e.g. {"type": "input_text", "text": "..."}')
        if kind in ("input_text", "output_text", "text"):
            out.append({"type": "text", "text": part.get("text")})
        elif kind == "refusal" and role == "assistant":
            out.append({"type": "refusal"})
        elif kind == "input_image" and role != "assistant":
            if part.get("file_id") is not None or not isinstance(part.get("image_url"), str):
                raise invalid(
                    f"{at}.image_url",
                    "must be a data:image/...;base64 URL or an https: URL (file ids need storage)",
                )
            out.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
        else:
            allowed = (
                "output_text and refusal" if role == "assistant" else "input_text and input_image"
            )
            raise invalid(
                f"{at}.type",
                f"{shown(kind)} parts are not supported here; {role} messages take {allowed} parts",
            )
    return out


_MESSAGE_KEYS = ("type", "role", "content", "id", "status", "phase")
_CALL_KEYS = ("type", "call_id", "name", "arguments", "id", "status")
_OUTPUT_KEYS = ("type", "call_id", "output", "id", "status")
_REASONING_KEYS = ("type", "id", "summary", "content", "encrypted_content", "status")


def _only(where: str, item: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in item:
        if key not in keys:
            raise ApiError(
                400,
                "unknown_field",
                f"{where}.{clip(key)}: unknown field; allowed fields are {', '.join(keys)}",
                param=f"{where}.{clip(key)}",
            )


def _string_field(where: str, item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise invalid(f"{where}.{key}", "must be a non-empty string")
    return value


def input_messages(value: object, instructions: object) -> tuple[list[Any], list[str]]:
    """Chat Completions messages from `instructions` and `input`, and for each message the
    name of the input item it came from (for error messages)."""
    messages: list[Any] = []
    names: list[str] = []
    if instructions is not None:
        messages.append(
            {"role": "system", "content": _text_of("instructions", instructions, ("input_text",))}
        )
        names.append("instructions")
    if isinstance(value, str):
        return [*messages, {"role": "user", "content": value}], [*names, "input"]
    if value is None:
        raise invalid("input", "is required")
    if not isinstance(value, list) or not value:
        raise invalid("input", "must be a string or a non-empty array of input items")
    reasoning = ""  # a reasoning item's text, for the assistant message that follows it

    def assistant(where: str) -> dict[str, Any]:
        """The assistant message a function call joins: the one just before, or a new one."""
        nonlocal reasoning
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "assistant" and not reasoning:
            return last  # type: ignore[no-any-return]
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if reasoning:
            message["reasoning"], reasoning = reasoning, ""
        messages.append(message)
        names.append(where)
        return message

    for i, item in enumerate(value):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise invalid(
                where,
                "must be an input item: a message, function_call, function_call_output or reasoning",
            )
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            _only(where, item, _MESSAGE_KEYS)
            role = item.get("role")
            message = {
                "role": role,
                "content": _content(f"{where}.content", item.get("content"), str(role)),
            }
            if role == "assistant" and reasoning:
                message["reasoning"], reasoning = reasoning, ""
            messages.append(message)
            names.append(where)
        elif kind == "function_call":
            _only(where, item, _CALL_KEYS)
            arguments = item.get("arguments")
            if not isinstance(arguments, str):
                raise invalid(f"{where}.arguments", "must be a string (JSON text)")
            call = {
                "id": _string_field(where, item, "call_id"),
                "type": "function",
                "function": {"name": _string_field(where, item, "name"), "arguments": arguments},
            }
            assistant(where).setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            _only(where, item, _OUTPUT_KEYS)
            output = _text_of(f"{where}.output", item.get("output"), ("input_text", "output_text"))
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": _string_field(where, item, "call_id"),
                    "content": output,
                }
            )
            names.append(where)
        elif kind == "reasoning":
            _only(where, item, _REASONING_KEYS)
            texts = item.get("content") or item.get("summary") or []
            reasoning += _text_of(f"{where}.content", texts, ("reasoning_text", "summary_text"))
        elif kind == "item_reference":
            raise _refuse(
                f"{where}.type", f'"item_reference" items need stored items; {_STATELESS}'
            )
        else:
            raise invalid(
                f"{where}.type",
                f"{shown(kind)} items are not supported; send message, function_call, function_call_output or reasoning items",
            )
    return messages, names


_MESSAGE_AT = re.compile(r"\bmessages\[(\d+)\]")


def _renamed(error: ApiError, names: list[str]) -> ApiError:
    """An error the conversation checker found in messages[k], named by the input item."""

    def name(match: re.Match[str]) -> str:
        k = int(match.group(1))
        return names[k] if k < len(names) else match.group(0)

    if error.param == "messages":  # the conversation as a whole: too many messages
        return ApiError(
            error.status,
            error.code,
            "input" + error.message.removeprefix("messages"),
            headers=error.headers,
            param="input",
        )
    param = _MESSAGE_AT.sub(name, error.param) if error.param else error.param
    return ApiError(
        error.status,
        error.code,
        _MESSAGE_AT.sub(name, error.message),
        headers=error.headers,
        param=param,
    )


def flat_tools(value: object) -> list[Any] | None:
    """Responses' function tools ({"type", "name", "description", "parameters", "strict"}) in
    Chat Completions' shape, for the one tools checker."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise invalid(
            "tools", 'must be an array of {"type": "function", "name": ..., "parameters": {...}}'
        )
    tools = []
    for i, tool in enumerate(value):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else None
            raise _refuse(
                f"tools[{i}].type", f"only function tools are supported, got {json_shown(kind)}"
            )
        function = {k: v for k, v in tool.items() if k != "type"}
        tools.append({"type": "function", "function": function})
    return tools


_FUNCTION_AT = re.compile(r"(\btools\[\d+\])\.function\b")


def _renamed_tools(error: ApiError) -> ApiError:
    param = _FUNCTION_AT.sub(r"\1", error.param) if error.param else error.param
    return ApiError(error.status, error.code, _FUNCTION_AT.sub(r"\1", error.message), param=param)


def flat_tool_choice(value: object) -> object:
    if (
        isinstance(value, dict)
        and value.get("type") == "function"
        and set(value) == {"type", "name"}
    ):
        return {"type": "function", "function": {"name": value["name"]}}
    if isinstance(value, dict):
        raise invalid(
            "tool_choice", 'must be "none", "auto", "required" or {"type": "function", "name": ...}'
        )
    return value


def text_format(value: object) -> dict[str, Any] | None:
    """`text.format` as Chat Completions' response_format (None for plain text)."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"format", "verbosity"}:
        raise invalid(
            "text", 'must be {"format": {"type": "text" | "json_object" | "json_schema", ...}}'
        )
    if value.get("verbosity") not in (None, "medium"):
        raise _refuse(
            "text.verbosity",
            f'this service accepts "medium" only, got {json_shown(value["verbosity"])}',
        )
    spec = value.get("format")
    if spec is None:
        return None
    if isinstance(spec, dict) and spec.get("type") == "json_schema":
        inner = {k: v for k, v in spec.items() if k != "type"}
        spec = {"type": "json_schema", "json_schema": inner}
    checked = openai_params.response_format("text.format", spec)
    return checked if openai_params.is_json_mode(checked) else None  # type: ignore[return-value]


def _reasoning_effort(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, dict):
        # A summary is not made; the reasoning itself is sent, as reasoning_text.
        value = {k: v for k, v in value.items() if k not in ("summary", "generate_summary")}
    effort = openai_params.reasoning_object("reasoning", value)
    return effort if isinstance(effort, str) else None


def parse_responses(body: dict[str, Any], ctx: Context) -> ResponsesRequest:
    for key, value in body.items():
        if key in _OWN or value is None:
            continue
        neutral = _NEUTRAL.get(key)
        if neutral is None:
            raise _refuse(clip(key), "not supported by this service's /v1/responses")
        if not neutral[1](value):
            raise _refuse(key, f"this service accepts {neutral[0]}, got {json_shown(value)}")
    if body.get("store") is True:
        raise _refuse("store", f"true is not supported: {_STATELESS} (store: false)")
    for key in ("previous_response_id", "conversation"):
        if body.get(key) is not None:
            raise _refuse(key, f"not supported: {_STATELESS}")
    if body.get("store") not in (None, False):
        raise invalid("store", "must be a boolean")
    model = parse_model(body.get("model"), ctx.settings)
    options: dict[str, Any] = {}
    for key in ("temperature", "top_p"):
        sent = openai_params.read(key, body.get(key), model)
        if sent is not None:
            options[key] = sent
    effort = _reasoning_effort(body.get("reasoning"))
    if effort is not None:
        options["reasoning_effort"] = effort
    try:
        tools = parse_tools(flat_tools(body.get("tools")))
    except ApiError as error:  # named as the flat shape has them: tools[0].name
        raise _renamed_tools(error) from None
    choice = parse_tool_choice(flat_tool_choice(body.get("tool_choice")), tools)
    if tools and choice != "none":
        options["tools"] = list(tools)
        if choice is not None:
            options["tool_choice"] = choice
    response_format = text_format(body.get("text"))
    if response_format is not None:
        openai_inputs = openai_params.takes_openai_inputs(model)
        options["response_format"] = (
            response_format
            if openai_inputs
            else openai_params.native_response_format(response_format)
        )
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise invalid("stream", "must be a boolean")
    messages, names = input_messages(body.get("input"), body.get("instructions"))
    try:
        conversation = parse_conversation(
            messages, ctx.settings, dialect=OPENAI, model=model, facts=catalog.info(model)
        )
    except ApiError as error:
        raise _renamed(error, names) from None
    max_tokens = parse_max_tokens("max_output_tokens", body.get("max_output_tokens"), ctx.settings)
    completion = CompletionRequest(
        model=model,
        messages=conversation.messages,
        max_tokens=max_tokens,
        options=tuple(options.items()),
        stream=stream is True,
        include_usage=False,
        json_mode=response_format is not None,
        stop=parse_stop("stop", body.get("stop")),
    )
    echo = {
        "instructions": body.get("instructions"),
        "max_output_tokens": max_tokens,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": {"effort": effort, "summary": None},
        "store": False,
        "temperature": options.get("temperature"),
        "text": {
            "format": body["text"]["format"]
            if isinstance(body.get("text"), dict) and body["text"].get("format")
            else {"type": "text"}
        },
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": body.get("tools") or [],
        "top_p": options.get("top_p"),
        "truncation": "disabled",
        "metadata": body.get("metadata") or {},
    }
    return ResponsesRequest(completion=completion, echo=echo)


async def responses(ctx: Context) -> WebResponse:
    request = parse_responses(await parse_body(ctx), ctx)
    completion = request.completion
    source = await open_upstream(ctx, completion.model, completion.ai_inputs())
    encoder = ResponsesEncoder(
        id="resp_" + os.urandom(12).hex(),
        created_at=int(time.time()),
        model=completion.model,
        echo=request.echo,
        stream=completion.stream,
    )
    relay = new_relay(ctx, encoder, completion.max_tokens, completion.model, completion.stop)
    if completion.stream:
        return WebResponse(
            status=200, headers=SSE_HEADERS, body=Relayed(source=source, relay=relay)
        )
    finished = await answer_whole(ctx, source, relay)
    assert encoder.response is not None  # set with every ending the relay reports
    return json_response(200, encoder.response, usage=finished.usage)


RESPONSES_API = Api(
    prefix=PATH,
    routes={PATH: Route(methods={"POST": responses}, render_error=openai_error, metered=True)},
    render_error=openai_error,
)
