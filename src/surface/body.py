"""A request body as the doors get it: the content type checked, at most the size allowed
read (the declared length only a hint), parsed as one JSON object within json_limits."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from base.errors import ApiError, clip
from checks import json_limits


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
