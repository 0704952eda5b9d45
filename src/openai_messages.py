"""An OpenAI conversation and its tools, checked, as Workers AI receives them.

Messages keep OpenAI's shape, which both Workers AI input schemas read: assistant messages
may carry ``tool_calls`` (their content may then be null: it is sent as ""), and ``tool``
messages carry the ``tool_call_id`` they answer (OpenAI lets such an assistant message
leave content out). Only text content is supported. Tools are
``function`` tools; ``tool_choice: "none"`` sends no tools at all, which is what it means,
and ``"auto"`` is the default, so it is not sent.
"""

from __future__ import annotations

import re
from typing import Any

from chat_request import message_list
from errors import ApiError, clip, invalid, shown
from settings import Settings

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
FIELDS = {
    "system": ("role", "content", "name"),
    "developer": ("role", "content", "name"),
    "user": ("role", "content", "name"),
    "assistant": ("role", "content", "name", "tool_calls", "refusal"),
    "tool": ("role", "content", "tool_call_id"),
}
MAX_TOOLS = 128  # OpenAI's own limit
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
TOOL_CHOICES = ("none", "auto", "required")


def content_text(field: str, content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if not (isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)):
                raise invalid(f"{field}[{i}]", "only text parts ({\"type\": \"text\", \"text\": ...}) are supported")
            parts.append(part["text"])
        return "".join(parts)
    raise invalid(field, "must be a string or an array of text parts")


def _too_long(field: str, size: int, settings: Settings) -> None:
    if size > settings.max_message_chars:
        raise ApiError(
            400,
            "message_too_long",
            f"{field}: {size} characters exceed the limit of {settings.max_message_chars}",
            param=field,
        )


def _tool_calls(where: str, value: object, settings: Settings) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise invalid(where, "must be a non-empty array of tool calls")
    calls = []
    for i, call in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(call, dict):
            raise invalid(at, "must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}")
        for key in call:
            # index: the openai SDKs keep it when they rebuild a streamed message
            if key not in ("id", "type", "function", "index"):
                raise invalid(f"{at}.{clip(key)}", "unknown field")
        if not isinstance(call.get("id"), str) or not call["id"]:
            raise invalid(f"{at}.id", "must be a non-empty string")
        if call.get("type") != "function":
            raise invalid(f"{at}.type", "must be \"function\"")
        function = call.get("function")
        if not isinstance(function, dict):
            raise invalid(f"{at}.function", "must be {\"name\", \"arguments\"}")
        if not isinstance(function.get("name"), str) or not function["name"]:
            raise invalid(f"{at}.function.name", "must be a non-empty string")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            raise invalid(f"{at}.function.arguments", "must be a string (JSON text)")
        _too_long(f"{at}.function.arguments", len(arguments), settings)
        calls.append({"id": call["id"], "type": "function", "function": {"name": function["name"], "arguments": arguments}})
    return calls


def parse_messages(value: object, settings: Settings) -> tuple[dict[str, Any], ...]:
    items = message_list(value, settings)
    messages: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        where = f"messages[{i}]"
        if not isinstance(item, dict):
            raise invalid(where, "must be an object with role and content")
        role = item.get("role")
        if not isinstance(role, str) or role not in ROLES:
            allowed = ", ".join(repr(r) for r in ROLES)
            raise invalid(f"{where}.role", f"must be one of {allowed}, got {shown(role)}")
        for key in item:
            if key not in FIELDS[role]:
                raise ApiError(
                    400,
                    "unknown_field",
                    f"{where}.{clip(key)}: unknown field for role {role!r}; allowed fields are {', '.join(FIELDS[role])}",
                    param=f"{where}.{clip(key)}",
                )
        message: dict[str, Any] = {"role": ROLES[role]}
        calls = item.get("tool_calls")
        content = item.get("content")
        if "content" not in item and not (role == "assistant" and calls):
            raise invalid(f"{where}.content", "is required")
        if content is None and role == "assistant" and calls:
            text = ""
        else:
            text = content_text(f"{where}.content", content)
        _too_long(f"{where}.content", len(text), settings)
        if not text.strip() and role == "user":
            raise invalid(f"{where}.content", "must not be empty")
        message["content"] = text
        if role == "assistant" and calls is not None:
            message["tool_calls"] = _tool_calls(f"{where}.tool_calls", calls, settings)
        if role == "tool":
            call_id = item.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise invalid(f"{where}.tool_call_id", "must be the id of the tool call this answers")
            message["tool_call_id"] = call_id
        refusal = item.get("refusal")
        if refusal is not None and not isinstance(refusal, str):
            raise invalid(f"{where}.refusal", "must be a string or null")
        messages.append(message)
    return tuple(messages)


def parse_tools(value: object) -> tuple[dict[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise invalid("tools", "must be an array of {\"type\": \"function\", \"function\": {...}}")
    if len(value) > MAX_TOOLS:
        raise invalid("tools", f"at most {MAX_TOOLS} tools, got {len(value)}")
    tools = []
    names: set[str] = set()
    for i, tool in enumerate(value):
        at = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise invalid(f"{at}.type", "only \"function\" tools are supported")
        for key in tool:
            if key not in ("type", "function"):
                raise invalid(f"{at}.{clip(key)}", "unknown field")
        function = tool.get("function")
        if not isinstance(function, dict):
            raise invalid(f"{at}.function", "must be {\"name\", \"description\", \"parameters\"}")
        name = function.get("name")
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            raise invalid(f"{at}.function.name", "must be 1-64 letters, digits, _ or -")
        if name in names:
            raise invalid(f"{at}.function.name", f"{name!r} is defined twice")
        names.add(name)
        out: dict[str, Any] = {"name": name}
        for key, item in function.items():
            if key == "name":
                continue
            if key == "description" and isinstance(item, str):
                out[key] = item
            elif key == "parameters" and isinstance(item, dict):
                out[key] = item
            elif key == "strict" and (item is None or isinstance(item, bool)):
                if item is not None:
                    out[key] = item
            else:
                raise invalid(f"{at}.function.{clip(key)}", "unknown field or wrong type (description: string, parameters: object, strict: boolean)")
        tools.append({"type": "function", "function": out})
    return tuple(tools)


def parse_tool_choice(value: object, tools: tuple[dict[str, Any], ...]) -> str | dict[str, Any] | None:
    """What is sent as tool_choice: None for the default (auto), or when no tools are sent."""
    if value is None or value == "auto":
        return None
    if value == "none":
        return "none"
    if value == "required" or isinstance(value, dict):
        if not tools:
            raise invalid("tool_choice", "needs tools")
        if value == "required":
            return "required"
        assert isinstance(value, dict)
        function = value.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if value.get("type") != "function" or set(value) != {"type", "function"} or not isinstance(name, str):
            raise invalid("tool_choice", "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}")
        if name not in {t["function"]["name"] for t in tools}:
            raise invalid("tool_choice.function.name", f"{shown(name)} is not one of the tools")
        return {"type": "function", "function": {"name": name}}
    raise invalid("tool_choice", "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}")
