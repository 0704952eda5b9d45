"""A conversation's size checked against the model's context window before the model is
called, so a chat that cannot fit fails at once (400 context_length_exceeded) instead of
after a paid round trip that Workers AI refuses with error 5021.

The estimate has no tokenizer: characters / 4 (about what Llama 3 and gpt-oss tokenizers
average on English prose) plus a few tokens per message for the chat template, plus
max_tokens, which Workers AI counts against the window as well (its 5021 message says
"input and maximum output tokens"). It runs low on code and non-Latin scripts; those
requests reach the model and come back as the same 5021 -> context_length_exceeded.
"""

from __future__ import annotations

import json
import math
from typing import Any

from errors import ApiError

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4  # e.g. Llama 3: <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>

# Context windows in tokens, as the Workers AI model pages give them ("Context Window";
# the catalog's `context_window` property, cloudflare/cloudflare-docs
# src/content/workers-ai-models/<name>.json), read 2026-11. A model not listed here is not
# checked (Workers AI still is).
CONTEXT_WINDOWS: dict[str, int] = {
    # developers.cloudflare.com/ai/models/@cf/meta/llama-3.1-8b-instruct/: 7,968 tokens
    # (retired 2026-05-30, still in wrangler.toml's AI_MODELS)
    "@cf/meta/llama-3.1-8b-instruct": 7_968,
    # developers.cloudflare.com/workers-ai/models/llama-3.1-8b-instruct-fast/: 128,000 tokens
    "@cf/meta/llama-3.1-8b-instruct-fast": 128_000,
    # developers.cloudflare.com/workers-ai/models/gpt-oss-20b/: 128,000 (gpt-oss-20b.json)
    "@cf/openai/gpt-oss-20b": 128_000,
    # developers.cloudflare.com/workers-ai/models/gpt-oss-120b/: 128,000 (gpt-oss-120b.json)
    "@cf/openai/gpt-oss-120b": 128_000,
    # developers.cloudflare.com/workers-ai/models/gemma-4-26b-a4b-it/: 256,000 (gemma-4-26b-a4b-it.json)
    "@cf/google/gemma-4-26b-a4b-it": 256_000,
}


def _chars(value: object) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))


def estimate(inputs: dict[str, Any]) -> int:
    """Tokens the request may take: the messages, anything structured the model reads as
    text (tools, say), and max_tokens."""
    messages = inputs.get("messages") or []
    chars = sum(_chars(m.get("content", "")) for m in messages if isinstance(m, dict))
    chars += sum(_chars(v) for k, v in inputs.items() if k != "messages" and isinstance(v, (list, dict)))
    max_tokens = inputs.get("max_tokens")
    output = max_tokens if isinstance(max_tokens, int) else 0
    return math.ceil(chars / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS * len(messages) + output


def check(model: str, inputs: dict[str, Any]) -> None:
    window = CONTEXT_WINDOWS.get(model)
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
