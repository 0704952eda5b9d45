"""Bad-input cases shared by the host tests and the over-HTTP tests: one table, two paths."""

from __future__ import annotations

import json
from typing import Any

USER = [{"role": "user", "content": "hi"}]
JSON = "application/json"

# (name, content type, raw body, status, error code, text the message must contain)
CASES: list[tuple[str, str | None, bytes, int, str, str]] = []


def case(
    name: str, body: Any, status: int, code: str, needle: str, ctype: str | None = JSON
) -> None:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    CASES.append((name, ctype, raw, status, code, needle))


case("no content type", {"messages": USER}, 415, "unsupported_media_type", "application/json", None)
case("text/plain", {"messages": USER}, 415, "unsupported_media_type", "text/plain", "text/plain")
case("empty body", b"", 400, "invalid_json", "empty")
case("broken json", b'{"messages": [', 400, "invalid_json", "not valid JSON")
case("not utf-8", b'{"messages": "\xff"}', 400, "invalid_json", "UTF-8")
case("NaN literal", b'{"messages": [], "temperature": NaN}', 400, "invalid_json", "NaN")
case("array body", [1], 400, "invalid_json", "JSON object")
case("unknown field", {"messages": USER, "stream": True}, 400, "unknown_field", "stream")
case("messages missing", {}, 400, "invalid_field", "messages")
case("messages not a list", {"messages": "hi"}, 400, "invalid_field", "messages")
case("messages empty", {"messages": []}, 400, "invalid_field", "messages")
case("message not an object", {"messages": ["hi"]}, 400, "invalid_field", "messages[0]")
case(
    "bad role",
    {"messages": [{"role": "tool", "content": "x"}]},
    400,
    "invalid_field",
    "messages[0].role",
)
case(
    "missing content", {"messages": [{"role": "user"}]}, 400, "invalid_field", "messages[0].content"
)
case(
    "content not a string",
    {"messages": [{"role": "user", "content": 5}]},
    400,
    "invalid_field",
    "messages[0].content",
)
case(
    "blank user content",
    {"messages": [{"role": "user", "content": "  "}]},
    400,
    "invalid_field",
    "messages[0].content",
)
case(
    "extra message field",
    {"messages": [{"role": "user", "content": "x", "thoughts": "n"}]},
    400,
    "unknown_field",
    "messages[0].thoughts",
)
case(
    "too many messages",
    {"messages": USER * 1001},
    400,
    "too_many_messages",
    "1001 messages exceed the limit of 1000",
)
case(
    "message too long",
    {"messages": [{"role": "user", "content": "x" * 1_000_001}]},
    400,
    "message_too_long",
    "messages[0].content: 1000001 characters",
)
case("unknown model", {"messages": USER, "model": "@cf/evil/x"}, 400, "unknown_model", "@cf/evil/x")
case("model not a string", {"messages": USER, "model": 3}, 400, "invalid_field", "model")
case("max_tokens zero", {"messages": USER, "max_tokens": 0}, 400, "invalid_field", "max_tokens")
case("max_tokens above cap", {"messages": USER, "max_tokens": 4097}, 400, "invalid_field", "4096")
case("max_tokens float", {"messages": USER, "max_tokens": 1.5}, 400, "invalid_field", "max_tokens")
case("max_tokens bool", {"messages": USER, "max_tokens": True}, 400, "invalid_field", "max_tokens")
case(
    "temperature string",
    {"messages": USER, "temperature": "hot"},
    400,
    "invalid_field",
    "temperature",
)
case(
    "temperature too high",
    {"messages": USER, "temperature": 5.5},
    400,
    "invalid_field",
    "temperature",
)
case(
    "reasoning_effort unknown",
    {"messages": USER, "reasoning_effort": "maximum"},
    400,
    "invalid_field",
    "reasoning_effort",
)
case(
    "reasoning_effort not a string",
    {"messages": USER, "reasoning_effort": 1},
    400,
    "invalid_field",
    "reasoning_effort",
)
# Over the default limit (a few MiB, from the allow-list's largest context window).
case(
    "body too large",
    {"messages": [{"role": "user", "content": "x" * 6_000_000}]},
    413,
    "body_too_large",
    "request body exceeds",
)

# Hostile bodies (issue 11): each once took the Worker down or answered 500.
DEEP = 7000
case(
    "7000 nested arrays",
    b'{"messages":' + b"[" * DEEP + b"]" * DEEP + b"}",
    400,
    "invalid_json",
    "32 levels",
)
case(
    "7000 nested objects",
    b'{"messages":' + b'{"a":' * DEEP + b"1" + b"}" * DEEP + b"}",
    400,
    "invalid_json",
    "32 levels",
)
case("unclosed nesting", b"[" * 20000, 400, "invalid_json", "32 levels")
# The body's own object is the first level.
case("33 levels", b'{"model":' + b"[" * 32 + b"]" * 32 + b"}", 400, "invalid_json", "32 levels")
case(
    "32 levels reach validation",
    b'{"messages":[{"role":"user","content":"x"}],"model":' + b"[" * 31 + b"]" * 31 + b"}",
    400,
    "invalid_field",
    "model",
)
case(
    "brackets in strings do not count",
    {"messages": [{"role": "user", "content": "x"}], "model": "[" * 40 + '\\"' + "{" * 40},
    400,
    "unknown_model",
    "[[[",
)
case(
    "310-digit temperature",
    b'{"messages": [], "temperature": 1' + b"0" * 309 + b"}",
    400,
    "invalid_json",
    "100 digits",
)
case(
    "5000-digit max_tokens",
    b'{"messages": [], "max_tokens": 1' + b"0" * 4999 + b"}",
    400,
    "invalid_json",
    "100 digits",
)
case(
    "100-digit temperature",
    b'{"messages": [{"role": "user", "content": "x"}], "temperature": 1' + b"0" * 99 + b"}",
    400,
    "invalid_field",
    "temperature",
)
case(
    "1e999 temperature",
    b'{"messages": [{"role": "user", "content": "x"}], "temperature": 1e999}',
    400,
    "invalid_field",
    "temperature",
)
case("byte order mark", b'\xef\xbb\xbf{"messages": []}', 400, "invalid_json", "byte order mark")
case(
    "lone surrogate role",
    b'{"messages": [{"role": "\\ud800", "content": "x"}]}',
    400,
    "invalid_field",
    "\\ud800",
)
case(
    "nested role",
    {"messages": [{"role": [[["user"]]], "content": "x"}]},
    400,
    "invalid_field",
    "got an array",
)
case(
    "lone surrogate model",
    b'{"messages": [{"role": "user", "content": "x"}], "model": "\\udfff"}',
    400,
    "unknown_model",
    "\\udfff",
)
case(
    "long model echoed clipped",
    {"messages": USER, "model": "m" * 5000},
    400,
    "unknown_model",
    "m" * 64 + "…",
)
case(
    "lone surrogate message key",
    b'{"messages": [{"role": "user", "content": "x", "\\ud800": 1}]}',
    400,
    "unknown_field",
    "messages[0].\\ud800",
)
