"""The AI SDK's UI message stream (protocol v1) as a relay Encoder: what `useChat`'s default
transport and `readUIMessageStream` parse (the `ai` package's uiMessageChunkSchema).

Each chunk is ``data: {json}``: ``start`` (the message id), ``start-step``, then
``text-start`` / ``text-delta`` / ``text-end`` for the answer and ``reasoning-start`` /
``-delta`` / ``-end`` for the thinking (a part ends when the model turns to something else),
``tool-input-start`` / ``tool-input-delta`` for a tool call as it comes and
``tool-input-available`` with the parsed input when the answer ends (``tool-input-error``
when the model's arguments are not JSON), then ``finish-step`` and ``finish`` (its
``finishReason``, and ``messageMetadata`` with the model and usage), and ``data: [DONE]``.
A failure is an ``error`` chunk (``errorText``, and our ``code``) before ``[DONE]``.
"""

from __future__ import annotations

import json
from typing import Any

from streaming.relay import Failed, Finished
from streaming.sse import PING
from streaming.upstream import TEXT, Part, ToolCall

HEADERS = (("x-vercel-ai-ui-message-stream", "v1"),)
DONE = b"data: [DONE]\n\n"
FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "content_filter": "content-filter",
}

_dumps = json.JSONEncoder(separators=(",", ":")).encode
_string = json.encoder.encode_basestring_ascii
_DELTA = 'data: {"type":"%s-delta","id":"%s","delta":%s}\n\n'


def chunk(fields: dict[str, Any]) -> str:
    return "data: %s\n\n" % _dumps(fields)


def usage(counts: dict[str, int] | None) -> dict[str, int] | None:
    """The AI SDK's LanguageModelUsage names."""
    if counts is None:
        return None
    names = (
        ("inputTokens", "prompt_tokens"),
        ("outputTokens", "completion_tokens"),
        ("totalTokens", "total_tokens"),
    )
    return {ours: counts[theirs] for ours, theirs in names if theirs in counts}


class UIMessageEncoder:
    __slots__ = ("_call_prefix", "_calls", "_message_id", "_model", "_open", "_parts")

    def __init__(self, *, message_id: str, model: str, call_prefix: str | None = None) -> None:
        """call_prefix: unique to this answer, for the ids of tool calls the model sent none for
        (native calls have none); by default the message id's."""
        self._message_id = message_id
        self._call_prefix = call_prefix or message_id.removeprefix("msg_")
        self._model = model
        self._open: tuple[str, str] | None = None  # ("text" | "reasoning", its id)
        self._parts = 0
        self._calls: dict[int, tuple[str, str, list[str]]] = {}  # index -> (id, name, arguments)

    def start(self) -> bytes:
        return (
            chunk({"type": "start", "messageId": self._message_id}) + chunk({"type": "start-step"})
        ).encode()

    def _end_open(self) -> str:
        if self._open is None:
            return ""
        kind, id = self._open
        self._open = None
        return chunk({"type": f"{kind}-end", "id": id})

    def parts(self, parts: list[Part]) -> bytes:
        out = []
        for kind, text in parts:
            name = "text" if kind == TEXT else "reasoning"
            if self._open is None or self._open[0] != name:
                out.append(self._end_open())
                self._open = (name, f"{name}-{self._parts}")
                self._parts += 1
                out.append(chunk({"type": f"{name}-start", "id": self._open[1]}))
            out.append(_DELTA % (name, self._open[1], _string(text)))
        return "".join(out).encode()

    def tool_calls(self, calls: list[ToolCall]) -> bytes:
        out = []
        for call in calls:
            known = self._calls.get(call.index)
            if known is None:
                out.append(self._end_open())
                id = call.id or f"call_{self._call_prefix}_{call.index}"
                known = self._calls[call.index] = (id, call.name or "", [])
                out.append(
                    chunk({"type": "tool-input-start", "toolCallId": id, "toolName": known[1]})
                )
            if call.arguments:
                known[2].append(call.arguments)
                out.append(
                    chunk(
                        {
                            "type": "tool-input-delta",
                            "toolCallId": known[0],
                            "inputTextDelta": call.arguments,
                        }
                    )
                )
        return "".join(out).encode()

    def _inputs(self) -> str:
        out = []
        for id, name, pieces in self._calls.values():
            text = "".join(pieces)
            try:
                value = json.loads(text) if text.strip() else {}
            except ValueError as exc:
                out.append(
                    chunk(
                        {
                            "type": "tool-input-error",
                            "toolCallId": id,
                            "toolName": name,
                            "input": text,
                            "errorText": f"The model's arguments are not JSON: {exc}",
                        }
                    )
                )
            else:
                out.append(
                    chunk(
                        {
                            "type": "tool-input-available",
                            "toolCallId": id,
                            "toolName": name,
                            "input": value,
                        }
                    )
                )
        return "".join(out)

    def ping(self) -> bytes:
        return PING

    def finished(self, stop: Finished) -> bytes:
        metadata: dict[str, Any] = {"model": self._model}
        if stop.usage is not None:
            metadata["usage"] = usage(stop.usage)
        reason = FINISH_REASONS.get(stop.stop_reason, "other")
        out = self._end_open() + self._inputs() + chunk({"type": "finish-step"})
        return (
            out + chunk({"type": "finish", "finishReason": reason, "messageMetadata": metadata})
        ).encode() + DONE

    def failed(self, failure: Failed) -> bytes:
        """What was sent stays sent; an open part is ended first, so the client keeps it."""
        out = self._end_open() + chunk(
            {"type": "error", "errorText": failure.message, "code": failure.code}
        )
        return out.encode() + DONE
