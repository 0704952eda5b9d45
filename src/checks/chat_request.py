"""A chat request from its parsed body: every field checked."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from base import catalog, thinking
from base.errors import ApiError, clip, invalid, json_shown, shown
from base.settings import Settings
from checks.messages import CHAT, parse_conversation
from checks.stops import parse_stop

CHAT_FIELDS = ("messages", "model", "max_tokens", "temperature", "reasoning_effort", "stop")
TEMPERATURE_RANGE = (0.0, 5.0)  # what Workers AI text models accept
# What a client may ask; each model gets what it takes (base/thinking.py).
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
