"""The HTTP exchange as the core sees it: plain values, no JavaScript."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from streaming.relay import Relayed

Headers = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class WebRequest:
    method: str
    url: str
    path: str
    headers: Mapping[str, str]  # lower-case names
    body: AsyncIterator[bytes]


@dataclass(frozen=True, slots=True, kw_only=True)
class Forwarded:
    """A body the shell got from elsewhere (a Durable Object's response), sent on untouched.
    The core never looks inside: it is a JS Response to the shell, opaque here."""

    response: object
    logged: bool = False  # its request line is written by whoever made it (a durable turn)


@dataclass(frozen=True, slots=True, kw_only=True)
class Pieces:
    """A whole answer written out a piece at a time, each piece made when the client is ready
    for it (the shell pulls them), so that a large answer is never one string in memory. Its
    maker checks everything that can fail before the first piece."""

    chunks: Iterator[bytes]

    def joined(self) -> bytes:
        """All of it at once (the host tests)."""
        return b"".join(self.chunks)


@dataclass(frozen=True, slots=True, kw_only=True)
class WebResponse:
    """``code``: an error answer's stable code; ``usage``: a whole answer's token counts (the
    relay's flat form). The request log reads both here, never from the body."""

    status: int
    headers: Headers = ()
    body: bytes | Relayed | Forwarded | Pieces = b""
    code: str | None = None
    usage: Mapping[str, int] | None = None

    def with_headers(self, extra: Headers) -> WebResponse:
        if not extra:
            return self
        return replace(self, headers=self.headers + extra)


JSON_HEADERS: Headers = (
    ("content-type", "application/json; charset=utf-8"),
    ("cache-control", "no-store"),
)

SSE_HEADERS: Headers = (
    ("content-type", "text/event-stream; charset=utf-8"),
    ("cache-control", "no-cache, no-transform"),
    ("x-accel-buffering", "no"),
)


# On every API response: error bodies repeat what a client sent, so no browser may sniff
# them into HTML; and whether CORS headers are present depends on Origin, so caches must
# key on it even when none were sent.
API_HEADERS: Headers = (
    ("x-content-type-options", "nosniff"),
    ("vary", "Origin"),
)


def origin_of(url: str) -> str:
    """scheme://host[:port] of a URL, as a browser writes it in Origin."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def without_body(response: WebResponse) -> WebResponse:
    """The answer to HEAD: the GET answer's headers and no body. No Content-Length: the runtime
    may compress the GET answer (then it has another length, or none), and HEAD may omit it."""
    return replace(response, body=b"")


def json_response(
    status: int,
    value: Any,
    headers: Headers = (),
    *,
    code: str | None = None,
    usage: Mapping[str, int] | None = None,
) -> WebResponse:
    try:
        body = json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        # A lone surrogate (from a client's JSON or the model's) has no UTF-8 form; as a
        # \udXXX escape it is still valid JSON, the same text the streamed answer sends.
        body = json.dumps(value).encode()
    return WebResponse(
        status=status, headers=JSON_HEADERS + headers, body=body, code=code, usage=usage
    )


def pieces_response(
    status: int, chunks: Iterator[bytes], *, usage: Mapping[str, int] | None = None
) -> WebResponse:
    """A JSON answer too large to hold whole, written a piece at a time (Pieces)."""
    return WebResponse(status=status, headers=JSON_HEADERS, body=Pieces(chunks=chunks), usage=usage)


def sse_response(body: Relayed, headers: Headers = ()) -> WebResponse:
    """The one way a door answers with a stream: 200, the SSE headers (and a door's own), and
    the relay the shell runs."""
    return WebResponse(status=200, headers=SSE_HEADERS + headers, body=body)
