"""A conversation, checked once for every API that takes one: roles, text and image content,
what a client sends back of an earlier answer, tool calls and their results. Out comes what
Workers AI receives: OpenAI's message shape, which both of its input schemas read.

Clients send back the message they built from our answer, with whatever fields their SDK puts
on it (the openai SDKs: `refusal`, `annotations`, `audio`, `function_call: null`, `parsed`;
LiteLLM and pydantic-ai: `reasoning_content`; OpenRouter-style clients: `reasoning`,
`reasoning_details`). Those are accepted. Reasoning goes back to a model that reasons as the
assistant message's `reasoning` field (what workers-ai-provider sends; mixed into `content` it
would read as the answer); everything else of them is dropped. A field no client sends is
still refused, naming it.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from base.catalog import ModelInfo
from base.errors import ApiError, clip, invalid, shown
from base.settings import Settings
from checks import images


@dataclass(frozen=True, slots=True, kw_only=True)
class Dialect:
    """What one API's messages may hold."""

    roles: Mapping[str, str]  # the role as sent -> as Workers AI reads it
    tools: bool  # assistant tool_calls and tool messages


OPENAI = Dialect(
    roles={
        "system": "system",
        "developer": "system",
        "user": "user",
        "assistant": "assistant",
        "tool": "tool",
    },
    tools=True,
)
CHAT = Dialect(roles={"system": "system", "user": "user", "assistant": "assistant"}, tools=False)

# What an SDK puts on the assistant message it built from an answer, and sends back.
ROUND_TRIP = (
    "reasoning",
    "reasoning_content",
    "reasoning_details",
    "refusal",
    "parsed",
    "annotations",
    "audio",
    "function_call",
)
FIELDS = {
    "system": ("role", "content", "name"),
    "developer": ("role", "content", "name"),
    "user": ("role", "content", "name"),
    "assistant": ("role", "content", "name", "tool_calls", *ROUND_TRIP),
    "tool": ("role", "content", "tool_call_id", "name"),
}
_ROUND_TRIP_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "reasoning": ((str, dict), "a string, an object or null"),
    "reasoning_content": ((str,), "a string or null"),
    "reasoning_details": ((list,), "an array or null"),
    "refusal": ((str,), "a string or null"),
    "annotations": ((list,), "an array or null"),
    "audio": ((dict,), "an object or null"),
}

IMAGE_TYPES = ("png", "jpeg", "jpg", "gif", "webp")
_DATA_URL = re.compile(r"data:image/(png|jpeg|jpg|gif|webp);base64,", re.IGNORECASE)
MAX_IMAGE_URL = 2048  # characters of an https: image URL


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    messages: tuple[dict[str, Any], ...]
    images: int


def message_list(value: object, settings: Settings) -> list[object]:
    """The `messages` array itself: present, an array, not empty, and within MAX_MESSAGES."""
    if value is None:
        raise invalid("messages", "is required")
    if not isinstance(value, list):
        raise invalid("messages", "must be an array of {role, content} objects")
    if not value:
        raise invalid("messages", "must contain at least one message")
    if len(value) > settings.max_messages:
        raise ApiError(
            400,
            "too_many_messages",
            f"messages: {len(value)} messages exceed the limit of {settings.max_messages}",
            param="messages",
        )
    return value


def too_long(field: str, size: int, settings: Settings) -> None:
    if size > settings.max_message_chars:
        raise ApiError(
            400,
            "message_too_long",
            f"{field}: {size} characters exceed the limit of {settings.max_message_chars}",
            param=field,
        )


class _Reader:
    """One conversation's checks; counts what is bounded per request (images)."""

    def __init__(self, settings: Settings, dialect: Dialect, model: str, facts: ModelInfo) -> None:
        self.settings = settings
        self.dialect = dialect
        self.model = model
        self.facts = facts
        self.images = 0

    def message(self, where: str, item: object) -> dict[str, Any]:
        if not isinstance(item, dict):
            raise invalid(where, "must be an object with role and content")
        roles = self.dialect.roles
        role = item.get("role")
        if not isinstance(role, str) or role not in roles:
            allowed = ", ".join(repr(r) for r in roles)
            raise invalid(f"{where}.role", f"must be one of {allowed}, got {shown(role)}")
        for key in item:
            if key not in FIELDS[role]:
                raise ApiError(
                    400,
                    "unknown_field",
                    f"{where}.{clip(key)}: unknown field for role {role!r}; allowed fields are {', '.join(FIELDS[role])}",
                    param=f"{where}.{clip(key)}",
                )
        sent_as = roles[role]
        content = self.content(f"{where}.content", item, sent_as)
        message: dict[str, Any] = {"role": sent_as, "content": content}
        if sent_as == "assistant":
            self.assistant(where, item, message)
        elif sent_as == "tool":
            call_id = item.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise invalid(
                    f"{where}.tool_call_id", "must be the id of the tool call this answers"
                )
            message["tool_call_id"] = call_id
        return message

    def content(self, field: str, item: dict[str, Any], role: str) -> str | list[dict[str, Any]]:
        if "content" not in item and role != "assistant":
            raise invalid(field, "is required")
        value = item.get("content")
        if value is None and role == "assistant":  # a tool call or a refusal has no text
            return ""
        if isinstance(value, str):
            text: str | list[dict[str, Any]] = value
            size = len(value)
        elif isinstance(value, list):
            text, size = self.parts(field, value, role)
        else:
            raise invalid(field, "must be a string or an array of content parts")
        too_long(field, size, self.settings)
        if role == "user" and isinstance(text, str) and not text.strip():
            raise invalid(field, "must not be empty")
        return text

    def parts(
        self, field: str, value: list[object], role: str
    ) -> tuple[str | list[dict[str, Any]], int]:
        """Text parts joined into one string; with images, the parts as Workers AI takes them."""
        out: list[dict[str, Any]] = []
        size = 0
        has_image = False
        for i, part in enumerate(value):
            at = f"{field}[{i}]"
            kind = part.get("type") if isinstance(part, dict) else None
            if not isinstance(part, dict) or not isinstance(kind, str):
                raise invalid(at, 'must be a content part, e.g. {"type": "text", "text": "..."}')
            if kind == "text":
                text = part.get("text")
                if not isinstance(text, str):
                    raise invalid(f"{at}.text", "must be a string")
                size += len(text)
                out.append({"type": "text", "text": text})
            elif kind == "image_url" and role == "user":
                out.append(
                    {
                        "type": "image_url",
                        "image_url": {"url": self.image(at, part.get("image_url"))},
                    }
                )
                has_image = True
            elif kind == "refusal" and role == "assistant":
                continue  # the SDK's own record of a refusal: nothing the model needs
            else:
                allowed = "text and image_url" if role == "user" else "text"
                raise invalid(
                    f"{at}.type",
                    f"{shown(kind)} parts are not supported here; {role} messages take {allowed} parts",
                )
        if has_image:
            return out, size
        return "".join(p["text"] for p in out), size

    def image(self, at: str, value: object) -> str:
        url = value.get("url") if isinstance(value, dict) else value
        if not isinstance(url, str):
            raise invalid(
                f"{at}.image_url.url", "must be a data:image/...;base64 URL or an https: URL"
            )
        if not self.facts.vision:
            raise ApiError(
                400,
                "images_not_supported",
                f"{at}: {self.model} reads text only; send images to a vision model (GET /api/v1/models says which)",
                param=at,
            )
        self.images += 1
        limit = self.settings.max_images
        if self.images > limit:
            raise ApiError(
                400, "too_many_images", f"{at}: more than {limit} images in one request", param=at
            )
        head = _DATA_URL.match(url)
        if head is not None:
            try:
                data = binascii.a2b_base64(url[head.end() :], strict_mode=True)
            except (binascii.Error, ValueError):  # ValueError: a character that is not ASCII
                raise invalid(
                    f"{at}.image_url.url", "is not valid base64 after data:image/...;base64,"
                ) from None
            if len(data) > self.settings.max_image_bytes:
                raise ApiError(
                    400,
                    "image_too_large",
                    f"{at}: the image is {len(data)} bytes, more than the limit of {self.settings.max_image_bytes}",
                    param=at,
                )
            if (problem := images.bytes_problem(head.group(1), data)) is not None:
                raise invalid(f"{at}.image_url.url", problem)
            return url
        if url.startswith("https://") and len(url) <= MAX_IMAGE_URL:
            if not self.facts.remote_images:
                raise invalid(
                    f"{at}.image_url.url",
                    f"{self.model} takes images only as data:image/...;base64 URLs",
                )
            if (problem := images.url_problem(url)) is not None:
                raise invalid(f"{at}.image_url.url", problem)
            return url
        kinds = ", ".join(IMAGE_TYPES)
        raise invalid(
            f"{at}.image_url.url",
            f"must be a data:image/<{kinds}>;base64 URL or an https: URL of at most {MAX_IMAGE_URL} characters",
        )

    def assistant(self, where: str, item: dict[str, Any], message: dict[str, Any]) -> None:
        for key, (types, described) in _ROUND_TRIP_TYPES.items():
            value = item.get(key)
            if value is not None and not isinstance(value, types):
                raise invalid(f"{where}.{key}", f"must be {described}")
        if item.get("function_call") is not None:
            raise invalid(
                f"{where}.function_call", "legacy function calls are not supported: send tool_calls"
            )
        calls = item.get("tool_calls")
        if calls:
            if not self.dialect.tools:
                raise invalid(
                    f"{where}.tool_calls", "this API has no tools: use /v1/chat/completions"
                )
            message["tool_calls"] = tool_calls(f"{where}.tool_calls", calls, self.settings)
        elif calls is not None and calls != []:
            raise invalid(f"{where}.tool_calls", "must be an array of tool calls or null")
        reasoning = reasoning_text(item)
        if reasoning and self.facts.reasons:
            message["reasoning"] = reasoning


def reasoning_text(item: dict[str, Any]) -> str:
    """The thinking an assistant message carries back, from whichever field its SDK used
    (Kimi sends the same text in both reasoning_content and reasoning: taken once)."""
    for value in (item.get("reasoning_content"), item.get("reasoning")):
        if isinstance(value, dict):
            value = value.get("text", value.get("content"))
        if isinstance(value, str) and value:
            return value
    return ""


def tool_calls(where: str, value: object, settings: Settings) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise invalid(where, "must be a non-empty array of tool calls")
    calls = []
    for i, call in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(call, dict):
            raise invalid(
                at, 'must be {"id", "type": "function", "function": {"name", "arguments"}}'
            )
        for key in call:
            # index: the openai SDKs keep it when they rebuild a streamed message
            if key not in ("id", "type", "function", "index"):
                raise invalid(f"{at}.{clip(key)}", "unknown field")
        if not isinstance(call.get("id"), str) or not call["id"]:
            raise invalid(f"{at}.id", "must be a non-empty string")
        if call.get("type") != "function":
            raise invalid(f"{at}.type", 'must be "function"')
        function = call.get("function")
        if not isinstance(function, dict):
            raise invalid(f"{at}.function", 'must be {"name", "arguments"}')
        if not isinstance(function.get("name"), str) or not function["name"]:
            raise invalid(f"{at}.function.name", "must be a non-empty string")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            raise invalid(f"{at}.function.arguments", "must be a string (JSON text)")
        too_long(f"{at}.function.arguments", len(arguments), settings)
        calls.append(
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": function["name"], "arguments": arguments},
            }
        )
    return calls


def parse_conversation(
    value: object, settings: Settings, *, dialect: Dialect, model: str, facts: ModelInfo
) -> Conversation:
    reader = _Reader(settings, dialect, model, facts)
    items = message_list(value, settings)
    messages = tuple(reader.message(f"messages[{i}]", item) for i, item in enumerate(items))
    return Conversation(messages=messages, images=reader.images)
