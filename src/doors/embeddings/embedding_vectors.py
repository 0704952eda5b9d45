"""What an embedding model answered, as OpenAI's embeddings list: each call's vectors checked,
joined in the order of the texts, cut to the asked width (Matryoshka models), as JSON numbers or
base64 (OpenAI's: the little-endian float32 bytes of each vector), with usage summed."""

from __future__ import annotations

import base64
import math
import struct
from dataclasses import dataclass
from typing import Any

from base.errors import ApiError
from workers_ai import budget

FLOAT = "float"
BASE64 = "base64"
ENCODINGS = (FLOAT, BASE64)


def bad_result(why: str) -> ApiError:
    return ApiError(502, "upstream_error", f"The embedding model's answer was not usable: {why}.")


_NUMBERS = frozenset((float, int))  # by exact type: a bool is no number here


def _floats(vector: list[Any]) -> list[float] | None:
    """The vector as floats, or None when it holds anything but finite numbers. Checked with
    C loops (map): a request of 2,048 texts checks 1.5-2 million numbers."""
    kinds = set(map(type, vector))
    if not kinds <= _NUMBERS:
        return None
    try:
        if not all(map(math.isfinite, vector)):
            return None
        return vector if kinds == {float} else list(map(float, vector))
    except OverflowError:  # an int too large for a float
        return None


def vectors(result: object, count: int) -> list[list[float]]:
    """Workers AI's {"shape": [n, width], "data": [[...], ...], "pooling": ...}: one vector of
    finite numbers per input, all of one width, or a 502."""
    data = result.get("data") if isinstance(result, dict) else None
    if not isinstance(data, list) or len(data) != count:
        got = len(data) if isinstance(data, list) else "no"
        raise bad_result(f"{got} vectors for {count} inputs")
    width = len(data[0]) if isinstance(data[0], list) else 0
    out = []
    for vector in data:
        if not isinstance(vector, list) or len(vector) != width or width == 0:
            raise bad_result("vectors of different or no widths")
        floats = _floats(vector)
        if floats is None:
            raise bad_result("a vector holds something other than finite numbers")
        out.append(floats)
    return out


def narrowed(vector: list[float], width: int) -> list[float]:
    """The first `width` numbers, L2-normalized again (a Matryoshka model's shorter vector)."""
    if width >= len(vector):
        return vector
    head = vector[:width]
    norm = math.sqrt(sum(x * x for x in head))
    return [x / norm for x in head] if norm > 0 else head


def encoded(vector: list[float], encoding: str) -> list[float] | str:
    if encoding == FLOAT:
        return vector
    try:
        packed = struct.pack("<%df" % len(vector), *vector)
    except OverflowError:
        raise bad_result("a number too large for float32") from None
    return base64.b64encode(packed).decode("ascii")


def prompt_tokens(result: object, texts: tuple[str, ...]) -> int:
    """The model's own count when it gives one, else the estimate the context checks use."""
    usage = result.get("usage") if isinstance(result, dict) else None
    given = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(given, int) and not isinstance(given, bool) and given >= 0:
        return given
    return sum(max(1, math.ceil(len(t) / budget.CHARS_PER_TOKEN)) for t in texts)


@dataclass(frozen=True, slots=True)
class Part:
    """One model call's answer, checked: a vector per text it was sent, and its tokens."""

    vectors: list[list[float]]
    tokens: int


def part(result: object, texts: tuple[str, ...]) -> Part:
    return Part(vectors(result, len(texts)), prompt_tokens(result, texts))


def embedding_list(
    parts: list[Part], *, model: str, width: int | None, encoding: str
) -> dict[str, Any]:
    """OpenAI's CreateEmbeddingResponse for the answers of the calls, in the order of the texts
    they were sent: `index` counts across the calls, usage is their sum."""
    widths = {len(p.vectors[0]) for p in parts}
    if len(widths) != 1:
        raise bad_result("vectors of different widths from one model")
    data: list[dict[str, Any]] = []
    for vector in (v for p in parts for v in p.vectors):
        if width is not None:
            vector = narrowed(vector, width)
        data.append(
            {"object": "embedding", "index": len(data), "embedding": encoded(vector, encoding)}
        )
    tokens = sum(p.tokens for p in parts)
    return {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
