"""What a /v1/responses request expands to, counted as it is resolved and refused before it is
built: its own items, each item reference every time it appears, and every link of a
previous_response_id chain, against the budgets direct input has (MAX_MESSAGES, MAX_IMAGES, the
model's context window as budget.py estimates it) and the bytes a stored conversation may hold
(MAX_CONVERSATION_BYTES). One small body can name a large stored item thousands of times: only
a count made before the text is joined keeps that from growing the isolate (issue 46).

A reasoning item sent to a model that does not reason is dropped, not expanded: its bytes count
(it is stored with the input), its text does not reach the model's budget.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from base import catalog
from base.errors import ApiError
from base.settings import Settings
from surface.request_log import CURRENT
from workers_ai import budget


@dataclass(frozen=True, slots=True, kw_only=True)
class Size:
    """What some items hold: JSON bytes as stored, the text the model reads (reasoning apart),
    images, and items that become a message of their own (a function call or reasoning joins
    the assistant message beside it, as input_messages() builds them)."""

    bytes: int = 0
    chars: int = 0
    reasoning: int = 0
    images: int = 0
    items: int = 0

    def __add__(self, other: Size) -> Size:
        return Size(
            bytes=self.bytes + other.bytes,
            chars=self.chars + other.chars,
            reasoning=self.reasoning + other.reasoning,
            images=self.images + other.images,
            items=self.items + other.items,
        )

    def as_json(self) -> dict[str, int]:
        return {
            "bytes": self.bytes,
            "chars": self.chars,
            "reasoning": self.reasoning,
            "images": self.images,
            "items": self.items,
        }

    @staticmethod
    def from_json(value: object) -> Size | None:
        if not isinstance(value, dict):
            return None
        fields = ("bytes", "chars", "reasoning", "images", "items")
        if not all(isinstance(value.get(k), int) for k in fields):
            return None
        return Size(**{k: value[k] for k in fields})


def _texts(value: object) -> int:
    """Characters of a string, or of the `text` of each part of a list."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(
            len(part["text"])
            for part in value
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return 0


def _string(value: object) -> int:
    return len(value) if isinstance(value, str) else 0


def measure(item: object) -> Size:
    """One input or output item's size. Anything malformed is still counted in bytes; the
    checks that follow refuse it by name."""
    try:
        raw = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):  # not from JSON: nothing a client sent
        raw = ""
    size = len(raw.encode("utf-8", "surrogatepass"))
    if not isinstance(item, dict):
        return Size(bytes=size, items=1)
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "reasoning":
        reasoning = _texts(item.get("content")) or _texts(item.get("summary"))
        return Size(bytes=size, reasoning=reasoning)
    chars = images = 0
    if kind == "message":
        content = item.get("content")
        chars = _texts(content)
        if isinstance(content, list):
            images = sum(
                1
                for part in content
                if isinstance(part, dict) and part.get("type") == "input_image"
            )
    elif kind == "function_call":
        chars = _string(item.get("name")) + _string(item.get("arguments"))
    elif kind == "function_call_output":
        chars = _texts(item.get("output"))
    return Size(bytes=size, chars=chars, images=images, items=int(kind != "function_call"))


def drops(item: object, *, reasons: bool) -> bool:
    """Whether the model never sees this item: reasoning, for a model that does not reason."""
    return not reasons and isinstance(item, dict) and item.get("type") == "reasoning"


class Budget:
    """The running count of one request's expansion; add() refuses the item that passes a
    budget, naming the field it came from, and notes the budget in the request's log line."""

    def __init__(self, settings: Settings, model: str) -> None:
        self._settings = settings
        self._model = model
        facts = catalog.info(model)
        self.reasons = facts.reasons
        self._window = facts.context_window
        self.total = Size()

    def tokens(self, size: Size) -> int:
        chars = size.chars + (size.reasoning if self.reasons else 0)
        return (
            math.ceil(chars / budget.CHARS_PER_TOKEN)
            + budget.IMAGE_TOKENS * size.images
            + budget.MESSAGE_OVERHEAD_TOKENS * size.items
        )

    def seen(self, size: Size) -> Size:
        """What of `size` the model is sent (its reasoning dropped for a model that does not
        reason; the bytes stay, as they are stored)."""
        return size if self.reasons else Size(**{**size.as_json(), "reasoning": 0})

    def add(self, where: str, size: Size, *, dropped: bool = False) -> None:
        """Counts `size` (only its bytes when the item is dropped) or raises."""
        if dropped:
            size = Size(bytes=size.bytes)
        total = self.total + size
        settings = self._settings
        if total.items > settings.max_messages:
            self._refuse(
                "MAX_MESSAGES",
                400,
                "too_many_messages",
                where,
                f"the input expands to more than {settings.max_messages} items (MAX_MESSAGES)",
            )
        if total.images > settings.max_images:
            self._refuse(
                "MAX_IMAGES",
                400,
                "too_many_images",
                where,
                f"the input expands to more than {settings.max_images} images (MAX_IMAGES)",
            )
        if total.bytes > settings.max_conversation_bytes:
            self._refuse(
                "MAX_CONVERSATION_BYTES",
                413,
                "input_too_large",
                where,
                f"the input expands to more than {settings.max_conversation_bytes} bytes "
                "(MAX_CONVERSATION_BYTES); each item reference counts every time it appears",
            )
        need = self.tokens(total)
        if self._window is not None and need > self._window:
            self._refuse(
                "context_window",
                400,
                "context_length_exceeded",
                where,
                f"the input expands to about {need} tokens or more, past {self._model}'s context "
                f"window of {self._window} tokens; each item reference counts every time it "
                "appears",
            )
        self.total = total

    def refuse_links(self, links: int) -> None:
        self._refuse(
            "MAX_MESSAGES",
            400,
            "too_many_messages",
            "previous_response_id",
            f"the chain it continues is {links} responses long, more than "
            f"{self._settings.max_messages} (MAX_MESSAGES); start again from its items",
        )

    @staticmethod
    def _refuse(name: str, status: int, code: str, where: str, why: str) -> None:
        line = CURRENT.get()
        if line is not None:
            line.budget = name
        raise ApiError(status, code, f"{where}: {why}", param=where)


def total(items: list[Any]) -> Size:
    size = Size()
    for item in items:
        size = size + measure(item)
    return size
