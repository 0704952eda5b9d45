"""API keys: the Worker secret API_KEYS, and whether a request presents one of them.

The keys are secrets: they are never put in a message, a log line or a repr, and a
presented key is compared with every configured key in constant time, so neither the
answer's timing nor its text tells how close a guess came.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field

SECRET = "API_KEYS"


@dataclass(frozen=True, slots=True, kw_only=True)
class Keys:
    digests: tuple[bytes, ...] = field(repr=False)

    @classmethod
    def parse(cls, raw: str | None) -> Keys:
        """Comma-separated keys; blanks around them are ignored; none at all means no keys."""
        keys = (part.strip() for part in (raw or "").split(","))
        return cls(digests=tuple(_digest(key) for key in keys if key))

    def __bool__(self) -> bool:
        return bool(self.digests)

    def match(self, presented: str) -> bool:
        """Compared as SHA-256 digests, so every comparison is over 32 bytes whatever the
        lengths, and every key is compared (no early exit on the first match)."""
        digest = _digest(presented)
        found = False
        for known in self.digests:
            found |= hmac.compare_digest(digest, known)
        return found


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def bearer(headers: Mapping[str, str]) -> str | None:
    """The token of `Authorization: Bearer <token>`, or None without one."""
    value = headers.get("authorization")
    if value is None:
        return None
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def rate_key(presented: str) -> str:
    """What the rate limiter counts a key under: a digest, so the key itself never leaves."""
    return "key:" + hashlib.sha256(presented.encode()).hexdigest()[:32]


def key_id(presented: str) -> str:
    """A key's id for logs and the AI Gateway's metadata: the first 16 hex digits of its SHA-256
    (`printf %s "$KEY" | sha256sum | cut -c1-16`), never the key."""
    return hashlib.sha256(presented.encode()).hexdigest()[:16]
