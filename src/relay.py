"""Joins the upstream byte stream to the client: decoding, keep-alive pings, idle timeout.

The relay speaks in neutral events, batched per upstream read so that frames arriving
together cross into JavaScript together; the app's SSE protocol and the OpenAI chunk
format are two encoders over the same events.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from upstream import UpstreamDecoder

log = logging.getLogger("relay")


class ByteSource(Protocol):
    """An upstream body: read() returns None at the end; cancel() stops it for good."""

    async def read(self) -> bytes | None: ...

    def cancel(self) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Ping:
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished:
    stop_reason: str
    usage: dict[str, int] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Failed:
    code: str
    message: str


RelayEvent = Text | Ping | Finished | Failed
PING = Ping()


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    ping_after: float
    give_up_after: float


def _finished(decoder: UpstreamDecoder, max_tokens: int | None) -> Finished:
    reason = decoder.finish_reason
    if reason is None:
        completion = (decoder.usage or {}).get("completion_tokens")
        reason = "length" if max_tokens and completion and completion >= max_tokens else "stop"
    return Finished(stop_reason=reason, usage=decoder.usage)


async def relay(
    source: ByteSource, timing: Timing, *, max_tokens: int | None = None
) -> AsyncIterator[list[RelayEvent]]:
    """Yield batches of events; the last batch ends with Finished or Failed."""
    decoder = UpstreamDecoder()
    loop = asyncio.get_running_loop()
    pending: asyncio.Future[bytes | None] | None = None
    ended = False
    try:
        last_data = last_sent = loop.time()
        while True:
            if pending is None:
                pending = asyncio.ensure_future(source.read())
            deadline = min(last_sent + timing.ping_after, last_data + timing.give_up_after)
            done, _ = await asyncio.wait((pending,), timeout=max(deadline - loop.time(), 0))
            now = loop.time()
            if not done:
                if now - last_data >= timing.give_up_after:
                    log.warning("upstream silent for %.1fs; giving up", now - last_data)
                    yield [
                        Failed(
                            code="upstream_timeout",
                            message=f"The model sent nothing for {timing.give_up_after:g} seconds.",
                        )
                    ]
                    return
                last_sent = now
                yield [PING]
                continue
            read, pending = pending, None
            try:
                chunk = read.result()
            except Exception as exc:  # the upstream stream errored mid-answer
                ended = True
                log.error("upstream stream failed: %r", exc)
                batch: list[RelayEvent] = [
                    Text(text=t) for t in decoder.flush().texts
                ]
                batch.append(Failed(code="upstream_error", message="The model stream failed."))
                yield batch
                return
            last_data = now
            if chunk is None:
                ended = True
                decoded = decoder.flush()
            else:
                decoded = decoder.feed(chunk)
            batch = [Text(text=t) for t in decoded.texts]
            if decoder.done:
                batch.append(_finished(decoder, max_tokens))
            elif chunk is None:
                log.warning("upstream ended without [DONE]")
                batch.append(
                    Failed(
                        code="upstream_incomplete",
                        message="The model stream ended before the answer was complete.",
                    )
                )
            if batch:
                last_sent = now
                yield batch
            if decoder.done or chunk is None:
                return
    finally:
        if decoder.malformed:
            log.warning("skipped %d malformed upstream frame(s)", decoder.malformed)
        if pending is not None:
            pending.cancel()
        if not ended:
            source.cancel()
