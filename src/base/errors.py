"""Errors a client can see: an HTTP status, a stable code and a message naming the field."""

from __future__ import annotations

import json


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: tuple[tuple[str, str], ...] = (),
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.param = param

    def __repr__(self) -> str:
        return f"ApiError({self.status}, {self.code!r}, {self.message!r})"


ECHO_LIMIT = 64  # characters of a client's string an error message repeats


def clip(text: str) -> str:
    """A client's string as an error message may repeat it: at most ECHO_LIMIT characters, and
    lone surrogates (which UTF-8 cannot encode) written as \\udXXX escapes."""
    return _cut(text).encode("utf-8", "backslashreplace").decode("utf-8")


def _cut(text: str) -> str:
    return text if len(text) <= ECHO_LIMIT else text[:ECHO_LIMIT] + "…"


def shown(value: object) -> str:
    """A client's value in a message: a string clipped and quoted, anything else by its JSON
    type only (the repr of a nested value recurses and can be as long as the body)."""
    if isinstance(value, str):
        return repr(_cut(value))  # repr escapes lone surrogates and control characters itself
    return json_type(value)


def json_shown(value: object) -> str:
    """A client's small value as JSON text (`true`, `{"50256": -100}`), clipped: what the
    client sent, in the client's own notation rather than Python's."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError):
        return json_type(value)
    return clip(text)


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


class ClientGone(ApiError):
    """The client left before it had an answer: nobody reads this response (a quiet end)."""

    def __init__(self, message: str = "The client closed the connection.") -> None:
        super().__init__(499, "client_gone", message)


def invalid(field: str, message: str) -> ApiError:
    return ApiError(400, "invalid_field", f"{field}: {message}", param=field)


def body_timeout(seconds: float) -> ApiError:
    """The body did not arrive in time: a client still sending gets this (a slow one, or one
    holding the connection open on purpose)."""
    return ApiError(
        408, "body_timeout", f"The request body did not arrive within {seconds:g} seconds."
    )


def malformed_body() -> ApiError:
    """The body's HTTP framing is broken (a bad chunk size or extension, an unusable
    Content-Length): the client is still there, and it is its request that is wrong."""
    return ApiError(
        400,
        "malformed_body",
        "The request body's framing (Content-Length or chunked encoding) is invalid.",
    )
