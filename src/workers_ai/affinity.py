"""The conversation key sent to Workers AI as the x-session-affinity header: every turn of one
conversation goes to the replica that holds its prefix cache, and its cached prompt tokens
come back in usage (billed lower).

The client's own key wins (an X-Session-Affinity header, or on /v1 `prompt_cache_key` or
`user`), passed as is when it is a plain header value; otherwise the key is a digest of the
conversation's first messages (up to the first user message), which every later turn of the
same conversation repeats.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

HEADER = "x-session-affinity"
# Visible ASCII and inner spaces, at most 256 characters: sent as is. Anything else is
# digested, so that a header value never carries what a header cannot.
_PLAIN = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]{0,254}[\x21-\x7e])?")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def key(given: Iterable[str | None], messages: Sequence[dict[str, Any]]) -> str:
    """The first non-blank key the client gave, else the conversation's own."""
    for value in given:
        if isinstance(value, str) and value.strip():
            value = value.strip()
            return value if _PLAIN.fullmatch(value) else "key-" + _digest(value)
    return conversation_key(messages)


def conversation_key(messages: Sequence[dict[str, Any]]) -> str:
    first = []
    for message in messages:
        first.append([message.get("role"), message.get("content")])
        if message.get("role") == "user":
            break
    return "conv-" + _digest(json.dumps(first, ensure_ascii=False, separators=(",", ":")))
