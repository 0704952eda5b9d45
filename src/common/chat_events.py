"""Our SSE protocol as a relay Encoder.

Events: content_block_delta {"index", "text"} for answer text; thinking_delta {"index",
"text"} for the model's reasoning, with its own index from 0, in stream order with the
answer; message_stop {"stop_reason", "while_thinking"?, "usage"?, "model"?}; error {"error",
"message"}; done {}. "while_thinking": true appears only when the token budget ran out
(stop_reason "length") while the model was still reasoning, before any answer text;
"model" only when a fallback model answered instead of the one asked.
"""

from __future__ import annotations

from streaming.relay import Failed, Finished
from streaming.sse import PING, event
from streaming.sse import dumps as _dumps
from streaming.sse import json_string as _string
from streaming.upstream import TEXT, Part, ToolCall

DONE = event("done", "{}")

_TEXT = 'event: content_block_delta\ndata: {"index":%d,"text":%s}\n\n'
_THINKING = 'event: thinking_delta\ndata: {"index":%d,"text":%s}\n\n'


def error_event(code: str, message: str) -> bytes:
    return event("error", _dumps({"error": code, "message": message}))


class ChatEncoder:
    __slots__ = ("_index", "_model", "_thinking")

    def __init__(self, *, model: str | None = None) -> None:
        self._index = 0
        self._thinking = 0
        self._model = model

    def start(self) -> bytes:
        return b""

    def parts(self, parts: list[Part]) -> bytes:
        if len(parts) == 1:
            kind, text = parts[0]
            if kind == TEXT:
                i = self._index
                self._index = i + 1
                return (_TEXT % (i, _string(text))).encode()
        out = []
        for kind, text in parts:
            if kind == TEXT:
                out.append(_TEXT % (self._index, _string(text)))
                self._index += 1
            else:
                out.append(_THINKING % (self._thinking, _string(text)))
                self._thinking += 1
        return "".join(out).encode()

    def tool_calls(self, calls: list[ToolCall]) -> bytes:
        return b""  # tools are not part of this protocol (the OpenAI endpoint relays them)

    def ping(self) -> bytes:
        return PING

    def finished(self, stop: Finished) -> bytes:
        data: dict[str, object] = {"stop_reason": stop.stop_reason}
        if stop.while_thinking:
            data["while_thinking"] = True
        if stop.usage is not None:
            data["usage"] = stop.usage
        if self._model is not None:
            data["model"] = self._model
        return event("message_stop", _dumps(data)) + DONE

    def failed(self, failure: Failed) -> bytes:
        return error_event(failure.code, failure.message) + DONE
