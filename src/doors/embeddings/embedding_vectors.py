"""What an embedding model answered, as OpenAI's embeddings list: each call's vectors checked,
joined in the order of the texts, cut to the asked width (Matryoshka models), as JSON numbers or
base64 (OpenAI's: the little-endian float32 bytes of each vector), with usage summed.

A request of 2,048 texts holds two million numbers: as Python floats in lists, and then as the
JSON text of the whole answer, that was far more than an isolate may hold
(bench/notes/2026-11-29-embeddings-memory.md). So each vector is packed as soon as it is read
(an array of doubles, never a list of float objects: the shell's, or packed()), kept in the form its answer needs
(kept: float32 where that is the same numbers, or where base64 sends float32 anyway), and the
answer is written out a piece at a time (answer_pieces), the same bytes json.dumps would make.
"""

from __future__ import annotations

import base64
import json
import math
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from base.errors import ApiError
from workers_ai import budget

FLOAT = "float"
BASE64 = "base64"
ENCODINGS = (FLOAT, BASE64)
# About how many bytes of the answer each piece holds (a vector or more).
PIECE_BYTES = 64 * 1024


def bad_result(why: str) -> ApiError:
    return ApiError(502, "upstream_error", f"The embedding model's answer was not usable: {why}.")


_NUMBERS = frozenset((float, int))  # by exact type: a bool is no number here


def packed(vector: object) -> array[float] | None:
    """One vector of the model's answer (a list of numbers) as an array of doubles, the same
    numbers, or None when it is not a list of finite numbers. Checked with C loops (map): a
    request of 2,048 texts checks 1.5-2 million numbers."""
    if not isinstance(vector, list):
        return None
    kinds = set(map(type, vector))
    if not kinds <= _NUMBERS:
        return None
    try:
        if not all(map(math.isfinite, vector)):
            return None
        return array("d", vector)
    except OverflowError:  # an int too large for a float
        return None


def vectors(result: object, count: int) -> list[array[float]]:
    """Workers AI's {"shape": [n, width], "data": [[...], ...], "pooling": ...}: one vector of
    finite numbers per input, all of one width, or a 502. A vector may come packed already: an
    array of doubles is one the shell found all finite numbers (shell/jsvectors.py)."""
    data = result.get("data") if isinstance(result, dict) else None
    if not isinstance(data, list) or len(data) != count:
        got = len(data) if isinstance(data, list) else "no"
        raise bad_result(f"{got} vectors for {count} inputs")
    width = len(data[0]) if isinstance(data[0], list | array) else 0
    out = []
    for vector in data:
        if not isinstance(vector, list | array) or len(vector) != width or width == 0:
            raise bad_result("vectors of different or no widths")
        floats = vector if isinstance(vector, array) and vector.typecode == "d" else packed(vector)
        if floats is None:
            raise bad_result("a vector holds something other than finite numbers")
        out.append(floats)
    return out


def narrowed(vector: list[float] | array[float], width: int) -> list[float] | array[float]:
    """The first `width` numbers, L2-normalized again (a Matryoshka model's shorter vector)."""
    if width >= len(vector):
        return vector
    head = vector[:width]
    norm = math.sqrt(sum(x * x for x in head))
    return [x / norm for x in head] if norm > 0 else head


def kept(vector: list[float] | array[float], encoding: str) -> array[float]:
    """The vector as the answer keeps it until it is written: float32 for base64 (the numbers
    it sends; one too large for float32 is a 502 now, before anything is sent), and for float
    when float32 holds exactly the same numbers (a model's tensor is float32), else doubles."""
    single = array("f", vector)  # each number rounded as struct.pack("<f") rounds it
    if encoding == FLOAT:
        doubles = vector if isinstance(vector, array) else array("d", vector)
        return single if single == doubles else doubles
    if not all(map(math.isfinite, single)):  # finite before: rounded past float32's largest
        raise bad_result("a number too large for float32")
    return single


def prompt_tokens(result: object, texts: tuple[str, ...]) -> int:
    """The model's own count when it gives one, else the estimate the context checks use."""
    usage = result.get("usage") if isinstance(result, dict) else None
    given = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(given, int) and not isinstance(given, bool) and given >= 0:
        return given
    return sum(max(1, math.ceil(len(t) / budget.CHARS_PER_TOKEN)) for t in texts)


@dataclass(frozen=True, slots=True)
class Part:
    """One model call's answer, checked: a vector per text it was sent, as the answer keeps it
    (narrowed to the asked width, in the form kept() chose), and its tokens."""

    vectors: list[array[float]]
    tokens: int


def part(
    result: object, texts: tuple[str, ...], *, width: int | None = None, encoding: str = FLOAT
) -> Part:
    out = []
    for vector in vectors(result, len(texts)):
        out.append(kept(vector if width is None else narrowed(vector, width), encoding))
    return Part(out, prompt_tokens(result, texts))


def usage(parts: list[Part]) -> dict[str, int]:
    tokens = sum(p.tokens for p in parts)
    return {"prompt_tokens": tokens, "total_tokens": tokens}


def answer_pieces(parts: list[Part], *, model: str, encoding: str) -> Iterator[bytes]:
    """OpenAI's CreateEmbeddingResponse for the answers of the calls, in the order of the texts
    they were sent (`index` counts across the calls, usage is their sum), in pieces of about
    PIECE_BYTES: joined, the bytes of json.dumps(the whole list, ensure_ascii=False) (the
    JSON every whole answer is, surface.web.json_response). Everything that can fail is checked
    here, before the first piece; each part is let go once it is written."""
    widths = {len(p.vectors[0]) for p in parts}
    if len(widths) != 1:
        raise bad_result("vectors of different widths from one model")
    try:
        name = json.dumps(model, ensure_ascii=False).encode()
    except UnicodeEncodeError:  # a lone surrogate: escaped, as json_response does
        name = json.dumps(model).encode()
    total = usage(parts)
    tail = b'], "model": %s, "usage": {"prompt_tokens": %d, "total_tokens": %d}}' % (
        name,
        total["prompt_tokens"],
        total["total_tokens"],
    )
    return _pieces(list(reversed(parts)), encoding, tail)


def _pieces(backwards: list[Part], encoding: str, tail: bytes) -> Iterator[bytes]:
    out = bytearray(b'{"object": "list", "data": [')
    index = 0
    while backwards:
        for vector in backwards.pop().vectors:
            if index:
                out += b", "
            out += b'{"object": "embedding", "index": %d, "embedding": ' % index
            out += _encoded(vector, encoding)
            out += b"}"
            index += 1
            if len(out) >= PIECE_BYTES:
                yield bytes(out)
                out.clear()
    out += tail
    yield bytes(out)


def _encoded(vector: array[float], encoding: str) -> bytes:
    if encoding == FLOAT:
        return json.dumps(vector.tolist()).encode()
    if sys.byteorder == "big":  # OpenAI's base64 is little-endian
        vector = array(vector.typecode, vector)
        vector.byteswap()
    return b'"%s"' % base64.b64encode(vector.tobytes())
