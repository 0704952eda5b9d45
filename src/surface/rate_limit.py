"""The rate limit on the routes that cost Workers AI neurons, as the core sees it.

Counting happens in Cloudflare's Rate Limiting binding (a simulated one locally); the
shell wraps it as a Limiter. The core picks the key and decides what the client hears.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from base.errors import ApiError

BINDING = "RATE_LIMITER"
# Clients presenting a valid API key are counted per key on this one (a higher limit: an
# agent's turn is several calls). Without it they are counted on BINDING, never unlimited.
KEY_BINDING = "KEY_RATE_LIMITER"
# Reads of durable conversations (GET, stream, stop, delete): no model call, but each reaches
# a Durable Object, so they are counted too, per key or address, on a limit of their own.
READ_BINDING = "READ_RATE_LIMITER"
# The binding does not say when its window ends; 60 s is the longest period it allows
# (10 or 60), so a client that waits that long is always past the window that refused it.
RETRY_AFTER_SECONDS = 60


class Limiter(Protocol):
    async def allow(self, key: str) -> bool: ...


def address_key(headers: Mapping[str, str]) -> str:
    """The client address Cloudflare's edge puts in CF-Connecting-IP (it overwrites any a
    client sends). Without it every such request shares one bucket: limited, never open."""
    return "ip:" + headers.get("cf-connecting-ip", "unknown").strip()


def rate_limited() -> ApiError:
    return ApiError(
        429,
        "rate_limited",
        f"Too many requests; wait {RETRY_AFTER_SECONDS} seconds and try again.",
        headers=(("retry-after", str(RETRY_AFTER_SECONDS)),),
    )


def not_configured() -> ApiError:
    return ApiError(500, "server_misconfigured", "The service is misconfigured.")
