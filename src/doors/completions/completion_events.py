"""The text_completion encoder: OpenAI's legacy Completions chunks over the relay, and the
whole text_completion object. A completion has text only: the model's reasoning and tool calls
(none are asked for) are left out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from common.openai_events import Collector, error_frame, openai_usage
from streaming.relay import Failed, Finished
from streaming.sse import PING
from streaming.sse import dumps as _dumps
from streaming.sse import json_string as _string
from streaming.upstream import TEXT, Part, ToolCall

# OpenAI's finish reasons for a completion; a tool call (never asked for) reads as a stop.
FINISH_REASONS = ("stop", "length", "content_filter")


def finish_reason(stop_reason: str) -> str:
    return stop_reason if stop_reason in FINISH_REASONS else "stop"


class TextCompletionEncoder:
    """text_completion chunks: one per text part, then one with the finish reason (and with
    stream_options.include_usage one with `choices: []` and the usage), then [DONE]."""

    __slots__ = ("_head", "_include_usage", "_tail")

    def __init__(self, *, id: str, created: int, model: str, include_usage: bool) -> None:
        self._head = '{"id":"%s","object":"text_completion","created":%d,"model":%s,"choices":' % (
            id,
            created,
            _string(model),
        )
        self._tail = ',"usage":null}' if include_usage else "}"
        self._include_usage = include_usage

    def _choice(self, text: str, finish: str = "null") -> str:
        return 'data: %s[{"text":%s,"index":0,"logprobs":null,"finish_reason":%s}]%s\n\n' % (
            self._head,
            _string(text),
            finish,
            self._tail,
        )

    def start(self) -> bytes:
        return b""

    def parts(self, parts: list[Part]) -> bytes:
        return "".join([self._choice(t) for kind, t in parts if kind == TEXT and t]).encode()

    def tool_calls(self, calls: list[ToolCall]) -> bytes:
        return b""

    def ping(self) -> bytes:
        return PING

    def finished(self, stop: Finished) -> bytes:
        out = self._choice("", _string(finish_reason(stop.stop_reason)))
        if self._include_usage and stop.usage is not None:
            out += 'data: %s[],"usage":%s}\n\n' % (self._head, _dumps(openai_usage(stop.usage)))
        return (out + "data: [DONE]\n\n").encode()

    def failed(self, failure: Failed) -> bytes:
        return error_frame(failure)


def text_completion(
    *,
    id: str,
    created: int,
    model: str,
    choices: Sequence[tuple[Collector, Finished]],
    usage: dict[str, int] | None,
) -> dict[str, Any]:
    """The whole text_completion object of a non-streamed answer: a choice per prompt, in the
    prompts' order (`index` is the prompt's), and the usage of them all."""
    body: dict[str, Any] = {
        "id": id,
        "object": "text_completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "text": "".join(collector.text),
                "index": index,
                "logprobs": None,
                "finish_reason": finish_reason(finished.stop_reason),
            }
            for index, (collector, finished) in enumerate(choices)
        ],
    }
    if usage is not None:
        body["usage"] = openai_usage(usage)
    return body
