"""The owner's settings of the chat: CHAT_TITLE (the page's title and header), SYSTEM_PROMPT
(the system message of every chat that has none of its own, on every door) and
CHAT_SUGGESTIONS (what the page's empty chat offers to ask, separated by `|`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MAX_TITLE = 80  # characters
MAX_SYSTEM_PROMPT = 20_000  # characters
MAX_SUGGESTIONS = 6
MAX_SUGGESTION = 200  # characters each


def owner_settings(
    lookup: Callable[[str], str | None], error: Callable[[str], Exception]
) -> dict[str, Any]:
    """The three settings as Settings' fields; `error(message)` for a value out of bounds."""
    out: dict[str, Any] = {}
    title = (lookup("CHAT_TITLE") or "").strip()
    if len(title) > MAX_TITLE:
        raise error(f"CHAT_TITLE={title[:40]!r}... is {len(title)} characters; at most {MAX_TITLE}")
    if title:
        out["chat_title"] = title
    prompt = (lookup("SYSTEM_PROMPT") or "").strip()
    if len(prompt) > MAX_SYSTEM_PROMPT:
        raise error(
            f"SYSTEM_PROMPT={prompt[:40]!r}... is {len(prompt)} characters; at most {MAX_SYSTEM_PROMPT}"
        )
    out["system_prompt"] = prompt
    raw = lookup("CHAT_SUGGESTIONS") or ""
    suggestions = tuple(s for s in (part.strip() for part in raw.split("|")) if s)
    if len(suggestions) > MAX_SUGGESTIONS:
        raise error(f"CHAT_SUGGESTIONS={raw!r} has {len(suggestions)}; at most {MAX_SUGGESTIONS}")
    for s in suggestions:
        if len(s) > MAX_SUGGESTION:
            raise error(
                f"CHAT_SUGGESTIONS: {s[:40]!r}... is longer than {MAX_SUGGESTION} characters"
            )
    out["chat_suggestions"] = suggestions
    return out


def with_system_prompt(inputs: dict[str, Any], prompt: str) -> dict[str, Any]:
    """The model's inputs with the owner's system prompt first, when its messages have no
    system message of their own (a chat's own prompt wins); inputs without messages as they are."""
    messages = inputs.get("messages")
    if not prompt or not isinstance(messages, list):
        return inputs
    if any(isinstance(m, dict) and m.get("role") == "system" for m in messages):
        return inputs
    return {**inputs, "messages": [{"role": "system", "content": prompt}, *messages]}
