"""A conversation's size checked against the model's context window before the model is
called, so a chat that cannot fit fails at once (400 context_length_exceeded) instead of
after a paid round trip that Workers AI refuses with error 5021.

The estimate has no tokenizer: characters / 4 (about what Llama 3 and gpt-oss tokenizers
average on English prose) plus a few tokens per message for the chat template, plus
max_tokens, which Workers AI counts against the window as well (its 5021 message says
"input and maximum output tokens"). It runs low on code and non-Latin scripts; those
requests reach the model and come back as the same 5021 -> context_length_exceeded.
An image counts as IMAGE_TOKENS whatever its size in bytes: a vision encoder turns it into a
bounded number of tokens, and its base64 text is not read as text.
"""

from __future__ import annotations

import json
import math
from typing import Any

from base import catalog
from base.catalog import CONTEXT_WINDOWS
from base.errors import ApiError

__all__ = ["CONTEXT_WINDOWS", "check", "estimate", "fits"]

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = (
    4  # e.g. Llama 3: <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
)
# Gemma 3/4 encode an image in 256-1,120 tokens, Llama 4 in 144 per tile (up to 16 tiles and
# a global one): the high end of either, so an estimate never runs low on images.
IMAGE_TOKENS = 2_500


def _chars(value: object) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))


def _content(content: object) -> tuple[int, int]:
    """(characters of text, images) of one message's content."""
    if not isinstance(content, list):
        return _chars(content) if content is not None else 0, 0
    chars = images = 0
    for part in content:
        if isinstance(part, dict) and part.get("type") == "image_url":
            images += 1
        elif isinstance(part, dict):
            chars += _chars(part.get("text", ""))
    return chars, images


def estimate(inputs: dict[str, Any]) -> int:
    """Tokens the request may take: the messages (text, images, the reasoning and tool calls
    they carry back), anything structured the model reads as text (tools, say), and max_tokens."""
    messages = inputs.get("messages") or []
    chars = images = 0
    for m in messages:
        if not isinstance(m, dict):
            continue
        text, pictures = _content(m.get("content"))
        chars += text + sum(_chars(m[k]) for k in ("reasoning", "tool_calls") if m.get(k))
        images += pictures
    chars += sum(
        _chars(v)
        for k, v in inputs.items()
        if (k != "messages" and isinstance(v, (list, dict))) or k == "prompt"
    )
    max_tokens = inputs.get("max_tokens")
    output = max_tokens if isinstance(max_tokens, int) else 0
    text_tokens = math.ceil(chars / CHARS_PER_TOKEN)
    return text_tokens + IMAGE_TOKENS * images + MESSAGE_OVERHEAD_TOKENS * len(messages) + output


def fits(model: str, inputs: dict[str, Any]) -> bool:
    window = catalog.info(model).context_window
    return window is None or estimate(inputs) <= window


def check(model: str, inputs: dict[str, Any]) -> None:
    window = catalog.info(model).context_window
    if window is None:
        return
    need = estimate(inputs)
    if need > window:
        raise ApiError(
            400,
            "context_length_exceeded",
            f"The conversation plus max_tokens need about {need} tokens, more than {model}'s "
            f"context window of {window} tokens; shorten the conversation or lower max_tokens.",
            param="messages",
        )
