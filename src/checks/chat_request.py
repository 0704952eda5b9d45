"""A chat request from its raw body: content type, size, JSON and every field checked."""

from __future__ import annotations

import json
import math
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from checks import json_limits
from checks.messages import CHAT, parse_conversation
from streaming.stop import parse_stop
from surface.errors import ApiError, clip, invalid, json_shown, shown
from surface.settings import Settings
from workers_ai import catalog, thinking

CHAT_FIELDS = ("messages", "model", "max_tokens", "temperature", "reasoning_effort", "stop")
TEMPERATURE_RANGE = (0.0, 5.0)  # what Workers AI text models accept
# What a client may ask; each model gets what it takes (workers_ai/thinking.py).
REASONING_EFFORTS = thinking.EFFORTS


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    model: str
    messages: tuple[dict[str, Any], ...]
    max_tokens: int
    temperature: float | None = None
    reasoning_effort: str | None = None
    stop: tuple[str, ...] = ()  # cut by the relay (see stop.py), not sent to the model

    def ai_inputs(self) -> dict[str, Any]:
        """What env.AI.run receives: only known fields, always streaming, always max_tokens.

        reasoning_effort goes inside the inputs object, where Workers AI reasoning models
        (gpt-oss, ...) read it; it is left out when not asked for.
        """
        inputs: dict[str, Any] = {
            "messages": [dict(m) for m in self.messages],
            "stream": True,
            "max_tokens": self.max_tokens,
        }
        if self.temperature is not None:
            inputs["temperature"] = self.temperature
        if self.reasoning_effort is not None:
            inputs["reasoning_effort"] = self.reasoning_effort
        return inputs


def check_content_type(value: str | None) -> None:
    media_type = (value or "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise ApiError(
            415,
            "unsupported_media_type",
            f"Content-Type must be application/json, got {clip(value) if value else 'none'}",
        )


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "body_too_large", f"request body exceeds {limit} bytes")


# ASCII digits only ("²".isdigit() is true and int("²") raises), and few enough for int().
_DECIMAL = re.compile(r"[0-9]{1,30}")


async def read_body(chunks: AsyncIterator[bytes], declared: str | None, limit: int) -> bytes:
    """Read at most `limit` bytes; the Content-Length header is a hint, never trusted."""
    if declared is not None and _DECIMAL.fullmatch(declared.strip()) and int(declared) > limit:
        raise _too_large(limit)
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        parts.append(chunk)
    return b"".join(parts)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(body: bytes) -> dict[str, Any]:
    if not body.strip():
        raise ApiError(400, "invalid_json", "request body is empty; expected a JSON object")
    if body.startswith(b"\xef\xbb\xbf"):
        raise ApiError(
            400,
            "invalid_json",
            "request body starts with a byte order mark; send UTF-8 without one",
        )
    json_limits.check(body)
    try:
        value = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise ApiError(400, "invalid_json", "request body is not valid UTF-8") from None
    except ValueError as exc:
        raise ApiError(400, "invalid_json", f"request body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ApiError(400, "invalid_json", "request body must be a JSON object")
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return _is_int(value)  # math.isfinite(int) converts to float and overflows past 1e308


def reject_unknown(body: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for key in body:
        if key not in allowed:
            raise ApiError(
                400,
                "unknown_field",
                f"{clip(key)}: unknown field; allowed fields are {', '.join(allowed)}",
                param=clip(key),
            )


# A surrogate code point left in a Python str is a lone one: json.loads joins escaped pairs.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """Lone surrogates as U+FFFD, as a browser's TextEncoder sends them: a JS client that cut
    a string inside an emoji still gets its answer, and UTF-8 can encode what goes upstream."""
    # isascii() is a C scan many times faster than the regex: a base64 image or most prose
    # skips the search (a 2 MiB conversation went from 15 to <1 ms on the host).
    if text.isascii() or _LONE_SURROGATE.search(text) is None:
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def well_formed_json(value: Any) -> Any:
    """A parsed JSON value with well_formed() on every string (keys too): what UTF-8 can carry
    to the model. Integers a JS Number cannot hold are js_values' business, at the boundary.
    Recursing is safe: a body is nested at most json_limits' depth before it is parsed."""
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, list):
        return [well_formed_json(item) for item in value]
    if isinstance(value, dict):
        return {well_formed(str(key)): well_formed_json(item) for key, item in value.items()}
    return value


def parse_model(value: object, settings: Settings) -> str:
    if value is None:
        return settings.default_model
    if not isinstance(value, str):
        raise invalid("model", "must be a string")
    if value in settings.embedding_models:
        raise ApiError(
            400,
            "wrong_model_type",
            f"model: {shown(value)} is an embedding model: POST /v1/embeddings takes it; "
            f"chat takes one of {', '.join(settings.models)}",
            param="model",
        )
    if value not in settings.models:
        raise ApiError(
            400,
            "unknown_model",
            f"model: {shown(value)} is not available; choose one of {', '.join(settings.models)}",
            param="model",
        )
    return value


def parse_max_tokens(field: str, value: object, settings: Settings) -> int:
    if value is None:
        return settings.default_max_tokens
    if not _is_int(value):
        raise invalid(field, "must be an integer")
    assert isinstance(value, int)
    if not 1 <= value <= settings.max_tokens_limit:
        raise invalid(field, f"must be between 1 and {settings.max_tokens_limit}, got {value}")
    return value


def parse_temperature(value: object) -> float | None:
    if value is None:
        return None
    low, high = TEMPERATURE_RANGE
    if not is_number(value):
        raise invalid("temperature", "must be a number")
    assert isinstance(value, (int, float))
    if not low <= value <= high:
        raise invalid("temperature", f"must be between {low:g} and {high:g}, got {value}")
    return float(value)


def parse_reasoning_effort(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and value in REASONING_EFFORTS:
        return value
    allowed = ", ".join(repr(e) for e in REASONING_EFFORTS)
    raise invalid("reasoning_effort", f"must be one of {allowed} or null, got {json_shown(value)}")


def parse_chat(body: dict[str, Any], settings: Settings) -> ChatRequest:
    reject_unknown(body, CHAT_FIELDS)
    model = parse_model(body.get("model"), settings)
    conversation = parse_conversation(
        body.get("messages"), settings, dialect=CHAT, model=model, facts=catalog.info(model)
    )
    return ChatRequest(
        messages=conversation.messages,
        model=model,
        max_tokens=parse_max_tokens("max_tokens", body.get("max_tokens"), settings),
        temperature=parse_temperature(body.get("temperature")),
        reasoning_effort=parse_reasoning_effort(body.get("reasoning_effort")),
        stop=parse_stop("stop", body.get("stop")),
    )
