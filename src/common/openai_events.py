"""The OpenAI Chat Completions encoders: chat.completion.chunk events for a stream, and the
Collector that keeps a whole answer for one chat.completion object."""

from __future__ import annotations

from typing import Any

from streaming.relay import Failed, Finished
from streaming.sse import PING
from streaming.sse import dumps as _dumps
from streaming.sse import json_string as _string
from streaming.upstream import TEXT, Part, ToolCall


def openai_usage(usage: dict[str, int]) -> dict[str, Any]:
    """Our usage in OpenAI's shape: cached prompt tokens in prompt_tokens_details, reasoning
    tokens in completion_tokens_details."""
    out: dict[str, Any] = {
        k: v for k, v in usage.items() if k not in ("cached_tokens", "reasoning_tokens")
    }
    if "cached_tokens" in usage:
        out["prompt_tokens_details"] = {"cached_tokens": usage["cached_tokens"]}
    if "reasoning_tokens" in usage:
        out["completion_tokens_details"] = {"reasoning_tokens": usage["reasoning_tokens"]}
    return out


def error_frame(failure: Failed) -> bytes:
    """How OpenAI's streams end in an error, chat and legacy completions alike. No [DONE] after
    it: [DONE] means the answer is complete."""
    error = {
        "error": {
            "message": failure.message,
            "type": "server_error",
            "param": None,
            "code": failure.code,
        }
    }
    return b"data: " + _dumps(error).encode() + b"\n\n"


def call_id(completion_id: str, index: int) -> str:
    """The id of a tool call the model sent without one (native calls have none)."""
    return "call_%s_%d" % (completion_id.removeprefix("chatcmpl-"), index)


class CompletionEncoder:
    """chat.completion.chunk frames; official clients raise on the error frame.

    Reasoning goes out as delta.reasoning_content, the field DeepSeek, vLLM and Workers AI
    use, in stream order with delta.content.
    """

    __slots__ = ("_calls", "_head", "_id", "_include_usage", "_tail")

    def __init__(self, *, id: str, created: int, model: str, include_usage: bool) -> None:
        self._id = id
        self._calls = 0  # tool calls started; the decoder numbers them 0, 1, ... in order
        self._head = (
            '{"id":"%s","object":"chat.completion.chunk","created":%d,"model":%s,"choices":'
            % (id, created, _string(model))
        )
        self._tail = ',"usage":null}' if include_usage else "}"
        self._include_usage = include_usage

    def _choice(self, delta: str, finish: str = "null") -> str:
        return 'data: %s[{"index":0,"delta":%s,"finish_reason":%s}]%s\n\n' % (
            self._head,
            delta,
            finish,
            self._tail,
        )

    def start(self) -> bytes:
        return self._choice('{"role":"assistant","content":""}').encode()

    def parts(self, parts: list[Part]) -> bytes:
        return "".join(
            [
                self._choice(
                    ('{"content":%s}' if kind == TEXT else '{"reasoning_content":%s}') % _string(t)
                )
                for kind, t in parts
            ]
        ).encode()

    def tool_calls(self, calls: list[ToolCall]) -> bytes:
        """As OpenAI streams them: a call's first chunk has its index, id, type and name, with
        empty arguments; the arguments follow in pieces, each chunk naming the index."""
        out = []
        delta = '{"tool_calls":[{"index":%d,"function":%s}]}'
        for call in calls:
            if call.index >= self._calls:
                self._calls = call.index + 1
                head = (
                    '{"tool_calls":[{"index":%d,"id":%s,"type":"function","function":{"name":%s,"arguments":""}}]}'
                    % (
                        call.index,
                        _string(call.id or call_id(self._id, call.index)),
                        _string(call.name or ""),
                    )
                )
                out.append(self._choice(head))
                function = '{"arguments":%s}' % _string(call.arguments) if call.arguments else None
            elif call.name:
                function = '{"name":%s,"arguments":%s}' % (
                    _string(call.name),
                    _string(call.arguments),
                )
            else:
                function = '{"arguments":%s}' % _string(call.arguments)
            if function is not None:
                out.append(self._choice(delta % (call.index, function)))
        return "".join(out).encode()

    def ping(self) -> bytes:
        return PING

    def finished(self, stop: Finished) -> bytes:
        out = self._choice("{}", _string(stop.stop_reason))
        if self._include_usage and stop.usage is not None:
            out += 'data: %s[],"usage":%s}\n\n' % (self._head, _dumps(openai_usage(stop.usage)))
        return (out + "data: [DONE]\n\n").encode()

    def failed(self, failure: Failed) -> bytes:
        return error_frame(failure)


class Collector:
    """An encoder for the non-streamed answer: keeps the text, the reasoning and the ending."""

    def __init__(self, *, id: str = "chatcmpl-") -> None:
        self._id = id
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[dict[str, Any]] = []

    def start(self) -> bytes:
        return b""

    def parts(self, parts: list[Part]) -> bytes:
        for kind, t in parts:
            (self.text if kind == TEXT else self.reasoning).append(t)
        return b""

    def tool_calls(self, calls: list[ToolCall]) -> bytes:
        for call in calls:
            if call.index >= len(self.calls):
                self.calls.append(
                    {
                        "id": call.id or call_id(self._id, call.index),
                        "name": call.name or "",
                        "arguments": [],
                    }
                )
            whole = self.calls[call.index]
            if call.name and not whole["name"]:
                whole["name"] = call.name
            whole["arguments"].append(call.arguments)
        return b""

    def message(self) -> dict[str, Any]:
        """The assistant message; reasoning_content only when the model reasoned, tool_calls
        only when it called tools (content is then null if it wrote nothing)."""
        text = "".join(self.text)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.calls:
            message["content"] = text or None
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": "".join(c["arguments"])},
                }
                for c in self.calls
            ]
        return message

    def ping(self) -> bytes:
        return b""

    def finished(self, stop: Finished) -> bytes:
        return b""  # how it ended is the relay's ending (service.answer_whole reads it)

    def failed(self, failure: Failed) -> bytes:
        return b""
