"""Responses input, read into chat messages: the `input` items (messages, function calls and
their outputs, reasoning), `instructions`, the flat tools and tool choice, the text format and
the reasoning effort, with errors that name the Responses field, not the chat one."""

from __future__ import annotations

import re
from typing import Any

from base.errors import ApiError, clip, invalid, json_shown, shown
from common import openai_params

STATELESS = (
    "this deployment stores nothing (no RESPONSES binding): send the whole conversation in input"
)


def refuse(name: str, why: str) -> ApiError:
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
            # The role is the client's, not yet checked: named only when it is one of ours.
            who = role if role in ("user", "assistant", "system", "developer") else "these"
            raise invalid(
                f"{at}.type",
                f"{shown(kind)} parts are not supported here; {who} messages take {allowed} parts",
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


def input_messages(
    value: object, instructions: object, *, stored: int = 0, reasons: bool = True
) -> tuple[list[Any], list[str]]:
    """Chat Completions messages from `instructions` and `input`, and for each message the
    name of the input item it came from (for error messages). The first `stored` items are a
    stored response's (previous_response_id), named so; the request's own follow. Reasoning
    items are checked and, for a model that does not reason (`reasons`), not read further."""
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
    calls: set[str] = set()  # the call_id of every function_call so far

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
        where = f"input[{i - stored}]" if i >= stored else "previous_response_id"
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
            call_id = _string_field(where, item, "call_id")
            calls.add(call_id)
            call = {
                "id": call_id,
                "type": "function",
                "function": {"name": _string_field(where, item, "name"), "arguments": arguments},
            }
            assistant(where).setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            _only(where, item, _OUTPUT_KEYS)
            output = _text_of(f"{where}.output", item.get("output"), ("input_text", "output_text"))
            call_id = _string_field(where, item, "call_id")
            if call_id not in calls:
                raise invalid(
                    f"{where}.call_id",
                    f"{shown(call_id)} answers no function_call before it in the conversation "
                    "(send the function_call item first, or continue with previous_response_id)",
                )
            messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
            names.append(where)
        elif kind == "reasoning":
            _only(where, item, _REASONING_KEYS)
            if not reasons:
                continue
            texts = item.get("content") or item.get("summary") or []
            reasoning += _text_of(f"{where}.content", texts, ("reasoning_text", "summary_text"))
        elif kind == "item_reference":
            raise refuse(f"{where}.type", f'"item_reference" items need stored items; {STATELESS}')
        else:
            raise invalid(
                f"{where}.type",
                f"{shown(kind)} items are not supported; send message, function_call, function_call_output or reasoning items",
            )
    return messages, names


_MESSAGE_AT = re.compile(r"\bmessages\[(\d+)\]")


def renamed(error: ApiError, names: list[str]) -> ApiError:
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
            raise refuse(
                f"tools[{i}].type", f"only function tools are supported, got {json_shown(kind)}"
            )
        function = {k: v for k, v in tool.items() if k != "type"}
        tools.append({"type": "function", "function": function})
    return tools


_FUNCTION_AT = re.compile(r"(\btools\[\d+\])\.function\b")


def renamed_tools(error: ApiError) -> ApiError:
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
        raise refuse(
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


def reasoning_effort(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, dict):
        # A summary is not made; the reasoning itself is sent, as reasoning_text.
        value = {k: v for k, v in value.items() if k not in ("summary", "generate_summary")}
    effort = openai_params.reasoning_object("reasoning", value)
    return effort if isinstance(effort, str) else None
