"""The Server-Sent Events wire format, and nothing else."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSentEvent:
    data: str | None = None
    event: str | None = None
    id: str | None = None
    retry: int | None = None
    comment: str | None = None

    def __post_init__(self) -> None:
        for name in ("event", "id"):
            value = getattr(self, name)
            if value is not None and ("\n" in value or "\r" in value):
                raise ValueError(f"SSE {name}={value!r} must not contain a line break")
        if self.id is not None and "\0" in self.id:
            raise ValueError(f"SSE id={self.id!r} must not contain NUL")
        if self.retry is not None and (isinstance(self.retry, bool) or self.retry < 0):
            raise ValueError(f"SSE retry={self.retry!r} must be a non-negative integer")

    def encode(self) -> bytes:
        lines: list[str] = []
        if self.comment is not None:
            lines.extend(f": {line}" for line in _LINE_BREAK.split(self.comment))
        if self.id is not None:
            lines.append(f"id: {self.id}")
        if self.event is not None:
            lines.append(f"event: {self.event}")
        if self.retry is not None:
            lines.append(f"retry: {self.retry}")
        if self.data is not None:
            lines.extend(f"data: {line}" for line in _LINE_BREAK.split(self.data))
        return ("\n".join(lines) + "\n\n").encode()


def event(name: str, data: str) -> bytes:
    """The common case, kept cheap: one named event whose data has no line breaks."""
    if "\n" in data or "\r" in data:
        return ServerSentEvent(event=name, data=data).encode()
    if "\n" in name or "\r" in name:
        raise ValueError(f"SSE event={name!r} must not contain a line break")
    return f"event: {name}\ndata: {data}\n\n".encode()


PING = b": ping\n\n"

# Event data as compact JSON, made by hand in the encoders' hot paths: a whole value, and one
# string as a JSON literal (ASCII-only, so no encoding question arises on the way out).
dumps = json.JSONEncoder(separators=(",", ":")).encode
json_string = json.encoder.encode_basestring_ascii
