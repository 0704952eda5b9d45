"""Our SSE protocol as a relay Encoder: content_block_delta, message_stop, error, done."""

from __future__ import annotations

import json

from relay import Failed, Finished
from sse import PING, event

DONE = event("done", "{}")
_dumps = json.JSONEncoder(separators=(",", ":")).encode
_string = json.encoder.encode_basestring_ascii


def error_event(code: str, message: str) -> bytes:
    return event("error", _dumps({"error": code, "message": message}))


class ChatEncoder:
    __slots__ = ("_index",)

    def __init__(self) -> None:
        self._index = 0

    def start(self) -> bytes:
        return b""

    def texts(self, texts: list[str]) -> bytes:
        i = self._index
        self._index = i + len(texts)
        if len(texts) == 1:
            return ('event: content_block_delta\ndata: {"index":%d,"text":%s}\n\n' % (i, _string(texts[0]))).encode()
        return "".join(
            ['event: content_block_delta\ndata: {"index":%d,"text":%s}\n\n' % (i + n, _string(t)) for n, t in enumerate(texts)]
        ).encode()

    def ping(self) -> bytes:
        return PING

    def finished(self, stop: Finished) -> bytes:
        data: dict[str, object] = {"stop_reason": stop.stop_reason}
        if stop.usage is not None:
            data["usage"] = stop.usage
        return event("message_stop", _dumps(data)) + DONE

    def failed(self, failure: Failed) -> bytes:
        return error_event(failure.code, failure.message) + DONE
