"""The relay's driver for host tests: the same contract as the Worker's RelayPipe
(src/streaming/relay.py), in asyncio, so the tests pin the relay's timing semantics on CPython."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Protocol

from streaming.relay import Relay, Source


class ByteSource(Source, Protocol):
    """An upstream body the host reads itself: read() returns None at the end."""

    async def read(self) -> bytes | None: ...


async def drain(source: ByteSource, relay: Relay) -> None:
    """drive() to the end, its output dropped: a whole answer on a host with asyncio timers."""
    async for _ in drive(source, relay):
        pass


async def drive(source: ByteSource, relay: Relay) -> AsyncGenerator[bytes, None]:
    """Run a relay over an async ByteSource with asyncio timers; cancels the source early."""
    loop = asyncio.get_running_loop()
    pending: asyncio.Future[bytes | None] | None = None
    at_end = False
    try:
        if first := relay.start():
            yield first
        while not relay.closed:
            if pending is None:
                pending = asyncio.ensure_future(source.read())
            wait = max(relay.next_deadline() - loop.time(), 0)
            done, _ = await asyncio.wait((pending,), timeout=wait)
            if not done:
                if out := relay.tick(loop.time()):
                    yield out
                continue
            read, pending = pending, None
            try:
                chunk = read.result()
            except Exception as exc:
                at_end = True
                out = relay.fail(exc)
            else:
                try:
                    if chunk is None:
                        at_end = True
                        out = relay.end()
                    else:
                        out = relay.feed(chunk)
                except Exception as exc:
                    out = relay.crash(exc)
            if out:
                yield out
    finally:
        if pending is not None:
            pending.cancel()
        if not relay.closed:
            relay.abandon()  # the consumer stopped reading: the client went away
        if not at_end:
            source.cancel()
