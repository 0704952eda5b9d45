"""Our SSE protocol over relay events: content_block_delta, message_stop, error, done."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

from relay import Failed, Finished, Ping, RelayEvent, Text
from sse import PING, event

log = logging.getLogger("chat_events")

DONE = event("done", "{}")


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def stop_event(stop: Finished) -> bytes:
    data: dict[str, object] = {"stop_reason": stop.stop_reason}
    if stop.usage is not None:
        data["usage"] = stop.usage
    return event("message_stop", _dumps(data))


def error_event(code: str, message: str) -> bytes:
    return event("error", _dumps({"error": code, "message": message}))


async def chat_stream(batches: AsyncIterator[list[RelayEvent]]) -> AsyncIterator[bytes]:
    """One output chunk per relay batch; `done` always ends the stream."""
    index = 0
    try:
        async for batch in batches:
            parts: list[bytes] = []
            for item in batch:
                if isinstance(item, Text):
                    parts.append(
                        b'event: content_block_delta\ndata: {"index":%d,"text":%s}\n\n'
                        % (index, json.dumps(item.text).encode())
                    )
                    index += 1
                elif isinstance(item, Ping):
                    parts.append(PING)
                elif isinstance(item, Finished):
                    parts.append(stop_event(item))
                    parts.append(DONE)
                elif isinstance(item, Failed):
                    parts.append(error_event(item.code, item.message))
                    parts.append(DONE)
            yield b"".join(parts)
    except Exception:
        log.exception("relay failed")
        yield error_event("internal_error", "The answer could not be completed.") + DONE
