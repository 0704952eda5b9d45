"""How many texts one isolate embeds at once, all requests together. Each text's vector is held
until the answer is written (the status goes with the first byte, so a later call's failure can
still be the request's error), and five requests of 2,048 texts at once came near or past the
isolate's 128 MB where one or two stay well under (bench/notes/2026-11-29-embeddings-memory.md).
A request that would pass MAX_TEXTS_AT_ONCE is refused at once with a 503 and Retry-After (the
openai SDK and LangChain retry it), unless nothing else is under way: a request of 2,048 texts
is never refused by an idle isolate. Waiting for a slot instead is not an option on workerd: a
request whose only wait is another request's work is cancelled as hung (measured: 500s).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

from base.errors import ApiError

MAX_TEXTS_AT_ONCE = 4096  # two requests of 2,048 texts
RETRY_SECONDS = 1

_under_way = [0]  # texts of the requests being embedded or written out (a Python int)


def under_way() -> int:
    return _under_way[0]


def hold(count: int) -> Callable[[], None]:
    """Count `count` texts as under way, or refuse the request; the returned function lets
    them go (once, whatever calls it again)."""
    now = _under_way[0]
    if now and now + count > MAX_TEXTS_AT_ONCE:
        raise ApiError(
            503,
            "embeddings_busy",
            f"input: this instance is embedding {now} texts of other requests; with these"
            f" {count} it would pass {MAX_TEXTS_AT_ONCE}. Retry in {RETRY_SECONDS} s.",
            headers=(("retry-after", str(RETRY_SECONDS)),),
            param="input",
        )
    _under_way[0] = now + count
    held = [count]

    def release() -> None:
        _under_way[0] -= held[0]
        held[0] = 0

    return release


def released_after(pieces: Iterator[bytes], release: Callable[[], None]) -> Iterator[bytes]:
    """The pieces, then `release`: when the last is written, or when the body is let go (the
    client left): a generator that has started runs its `finally` when it is closed or
    collected, so the first piece is made here."""
    body = _released_after(pieces, release)
    first = next(body)
    return itertools.chain((first,), body)


def _released_after(pieces: Iterator[bytes], release: Callable[[], None]) -> Iterator[bytes]:
    try:
        yield from pieces
    finally:
        release()
