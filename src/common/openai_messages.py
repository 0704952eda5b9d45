"""OpenAI's tools and tool_choice, checked, as Workers AI receives them (the messages that
carry tool calls and their results are checked in conversation.py).

Tools are ``function`` tools; ``tool_choice: "none"`` sends no tools at all, which is what it
means, and ``"auto"`` is the default, so it is not sent.
"""

from __future__ import annotations

import re
from typing import Any

from base.errors import clip, invalid, shown

MAX_TOOLS = 128  # OpenAI's own limit
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
TOOL_CHOICES = ("none", "auto", "required")


def parse_tools(value: object) -> tuple[dict[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise invalid("tools", 'must be an array of {"type": "function", "function": {...}}')
    if len(value) > MAX_TOOLS:
        raise invalid("tools", f"at most {MAX_TOOLS} tools, got {len(value)}")
    tools = []
    names: set[str] = set()
    for i, tool in enumerate(value):
        at = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise invalid(f"{at}.type", 'only "function" tools are supported')
        for key in tool:
            if key not in ("type", "function"):
                raise invalid(f"{at}.{clip(key)}", "unknown field")
        function = tool.get("function")
        if not isinstance(function, dict):
            raise invalid(f"{at}.function", 'must be {"name", "description", "parameters"}')
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
            if (key == "description" and isinstance(item, str)) or (
                key == "parameters" and isinstance(item, dict)
            ):
                out[key] = item
            elif key == "strict" and (item is None or isinstance(item, bool)):
                if item is not None:
                    out[key] = item
            else:
                raise invalid(
                    f"{at}.function.{clip(key)}",
                    "unknown field or wrong type (description: string, parameters: object, strict: boolean)",
                )
        tools.append({"type": "function", "function": out})
    return tuple(tools)


def parse_tool_choice(
    value: object, tools: tuple[dict[str, Any], ...]
) -> str | dict[str, Any] | None:
    """What is sent as tool_choice: None for the default (auto), or when no tools are sent."""
    if value is None or value == "auto":
        return None
    if value == "none":
        return "none"
    if value in ("required", "any") or isinstance(value, dict):
        if not tools:
            raise invalid("tool_choice", "needs tools")
        if value in ("required", "any"):
            return "required"  # "any" (Anthropic's and Mistral's word) fails on vLLM-served models (8001)
        assert isinstance(value, dict)
        function = value.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if (
            value.get("type") != "function"
            or set(value) != {"type", "function"}
            or not isinstance(name, str)
        ):
            raise invalid(
                "tool_choice",
                'must be "none", "auto", "required", "any" or {"type": "function", "function": {"name": ...}}',
            )
        if name not in {t["function"]["name"] for t in tools}:
            raise invalid("tool_choice.function.name", f"{shown(name)} is not one of the tools")
        return {"type": "function", "function": {"name": name}}
    raise invalid(
        "tool_choice",
        'must be "none", "auto", "required", "any" or {"type": "function", "function": {"name": ...}}',
    )
