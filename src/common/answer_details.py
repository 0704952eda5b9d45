"""What a page shows under a finished answer of a durable conversation, kept with the answer:
the model that wrote it, how it ended, its usage, and how long it took (in all, writing, and
thinking). Stored by the conversation's turn as it ends, given back with the message by
GET /api/v1/conversations/{id}, and carried by a client into a fork (POST
/api/v1/conversations, `details`), so that a reload, a second tab or another device draws the
answer as it was drawn while it streamed.

The times are the conversation object's: from the message's arrival to the answer's end, from
its first token to its end, and from its first thought to its last; `at` is when it ended (ms since the epoch).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from base.errors import ApiError, invalid

Clock = Callable[[], float]  # seconds
DETAILS_FIELD = "details"
MAX_DETAILS_BYTES = 2048  # one answer's details as JSON, from a client
_TIMES = ("ms", "writing_ms", "reasoning_ms", "at")
_STRINGS = ("model", "stop_reason")


class Timing:
    """When an answer's parts came: fed by the recorder of the turn, read at its end."""

    __slots__ = ("_clock", "first", "started", "thought_first", "thought_last")

    def __init__(self, clock: Clock = time.time) -> None:
        self._clock = clock
        self.started = clock()
        self.first: float | None = None
        self.thought_first: float | None = None
        self.thought_last: float | None = None

    def part(self, thinking: bool) -> None:
        now = self._clock()
        if self.first is None:
            self.first = now
        if thinking:
            if self.thought_first is None:
                self.thought_first = now
            self.thought_last = now

    def times(self) -> dict[str, int]:
        now = self._clock()
        out = {
            "at": _ms(now),  # when it ended, ms since the epoch
            "ms": _ms(now - self.started),
            "writing_ms": _ms(now - self.first) if self.first is not None else 0,
        }
        if self.thought_first is not None and self.thought_last is not None:
            out["reasoning_ms"] = _ms(self.thought_last - self.thought_first)
        return out


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))


def details_of(
    timing: Timing,
    *,
    model: str,
    stop_reason: str | None,
    while_thinking: bool = False,
    usage: dict[str, Any] | None = None,
    error: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """One answer's details, as stored and given back."""
    out: dict[str, Any] = {"model": model}
    if stop_reason is not None:
        out["stop_reason"] = stop_reason
    if while_thinking:
        out["while_thinking"] = True
    if usage is not None:
        out["usage"] = usage
    if error is not None:
        out["error"] = {"code": error[0], "message": error[1]}
    out.update(timing.times())
    return out


def check_details(where: str, value: object) -> dict[str, Any] | None:
    """A client's details of one assistant message of a history (a fork): the same fields, each
    checked, at most MAX_DETAILS_BYTES; null for none."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid(where, "must be an object or null")
    out: dict[str, Any] = {}
    for key, item in value.items():
        field = f"{where}.{key}"
        if key in _STRINGS:
            if not isinstance(item, str) or len(item) > 200:
                raise invalid(field, "must be a string of at most 200 characters")
        elif key in _TIMES:
            if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < 2**53:
                raise invalid(field, "must be a non-negative integer (milliseconds)")
        elif key == "while_thinking":
            if not isinstance(item, bool):
                raise invalid(field, "must be true or false")
        elif key == "usage":
            if not isinstance(item, dict) or not all(
                isinstance(k, str) and isinstance(v, int | dict) for k, v in item.items()
            ):
                raise invalid(field, "must be an object of token counts")
        elif key == "error":
            if not (
                isinstance(item, dict)
                and set(item) <= {"code", "message"}
                and all(isinstance(v, str) for v in item.values())
            ):
                raise invalid(field, "must be an object {code, message} of strings")
        else:
            allowed = ", ".join((*_STRINGS, *_TIMES, "while_thinking", "usage", "error"))
            raise ApiError(
                400,
                "unknown_field",
                f"{field}: unknown field; allowed fields are {allowed}",
                param=field,
            )
        out[key] = item
    size = len(json.dumps(out, ensure_ascii=False).encode())
    if size > MAX_DETAILS_BYTES:
        raise invalid(where, f"is {size} bytes as JSON; at most {MAX_DETAILS_BYTES}")
    return out


def with_details(messages: list[dict[str, Any]], value: object) -> list[dict[str, Any]]:
    """The history's messages, each assistant message with its details from `details` (an
    array beside `messages`, null or absent where there are none)."""
    if value is None:
        return messages
    if not isinstance(value, list) or len(value) > len(messages):
        raise invalid(
            DETAILS_FIELD, "must be an array no longer than messages, of objects or nulls"
        )
    out = list(messages)
    for i, item in enumerate(value):
        checked = check_details(f"{DETAILS_FIELD}[{i}]", item)
        if checked is None:
            continue
        if out[i].get("role") != "assistant":
            raise invalid(
                f"{DETAILS_FIELD}[{i}]", "must be null: messages[i] is not an assistant message"
            )
        out[i] = {**out[i], DETAILS_FIELD: checked}
    return out
