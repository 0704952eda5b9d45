"""What Workers AI's stream frames mean: the data of each event, interpreted.

A frame is either the native shape ``{"response": "...", "tool_calls": [], "p": "<padding>"}``
(empty first and last frames, one frame with no ``response``, then ``{"response": "",
"usage": {...}}``) or the OpenAI shape ``{"choices": [{"delta": {"content": ...,
"reasoning_content": ...}, "finish_reason": ...}], "usage": {...}, "p": ...}``, ended by
``[DONE]``. ``sse_lines`` has already found where each frame starts and ends.

What comes out is an ordered list of parts, ``(TEXT, s)`` or ``(THINKING, s)``: reasoning
arrives in ``delta.reasoning_content`` and/or ``delta.reasoning`` (Kimi sends both with the
same text: it is relayed once), or inline as <think>...</think> (see think_tags).

Tool calls come out apart from the parts, as ToolCall pieces numbered from 0 in order of
appearance, in either upstream form: OpenAI-shaped ``delta.tool_calls`` (incremental by
``index``: id and name first, arguments in pieces; ``message.tool_calls`` when not streamed),
or the native top-level ``"tool_calls": [{"name", "arguments": {...}}]``, each call whole.
A native JSON-mode answer has an object as its ``response``: it is relayed as JSON text.

Usage: the latest non-zero counts win. Counts are cumulative (qwen over REST repeats them
on every chunk), so they are never summed, and the all-zero usage some paths send before or
after the real one never overwrites it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from streaming.plain_frames import PLAIN_CHUNK as _PLAIN_CHUNK
from streaming.plain_frames import PLAIN_NATIVE as _PLAIN_NATIVE
from streaming.plain_frames import chunk_delta as _chunk_delta
from streaming.think_tags import TEXT, THINKING, Part, ThinkTags

__all__ = ["TEXT", "THINKING", "Decoded", "Frames", "Part", "ToolCall", "finish_reason"]

USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


def _cached_tokens(usage: dict[str, object]) -> int | None:
    """Prompt tokens served from the prefix cache: OpenAI's usage.prompt_tokens_details
    .cached_tokens (what Workers AI sends, workers-ai-provider 3.1.13), or a flat cached_tokens.
    Kept in our usage as a flat `cached_tokens`."""
    details = usage.get("prompt_tokens_details")
    value = (
        details.get("cached_tokens") if isinstance(details, dict) else usage.get("cached_tokens")
    )
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _reasoning_tokens(usage: dict[str, object]) -> int | None:
    """Completion tokens spent reasoning, when the model counts them: OpenAI's
    usage.completion_tokens_details.reasoning_tokens, or a flat reasoning_tokens. Kept in our
    usage as a flat `reasoning_tokens` (issue 34: the Responses usage reports it)."""
    details = usage.get("completion_tokens_details")
    value = (
        details.get("reasoning_tokens")
        if isinstance(details, dict)
        else usage.get("reasoning_tokens")
    )
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


# The finish reasons we report, from what models send. Anything else is "stop" (the
# answer did end) and the raw value is kept for the log.
FINISH_REASONS = {
    "stop": "stop",
    "eos": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "length": "length",
    "max_tokens": "length",
    "model_length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
}


def finish_reason(raw: str) -> str:
    """One of stop, length, tool_calls, content_filter; an unknown reason is "stop"."""
    return FINISH_REASONS.get(raw, "stop")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A piece of tool call number ``index``: its first piece has the name (and the id, when
    the model gave one); ``arguments`` is the next piece of the JSON arguments text."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(slots=True)
class Decoded:
    """What one feed() produced: text and reasoning parts in stream order, tool-call pieces
    (None when there are none, the common case: no list is made per token), and [DONE]."""

    parts: list[Part] = field(default_factory=list)
    done: bool = False
    tool_calls: list[ToolCall] | None = None


def _json_text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Frames:
    """Interprets one frame at a time, keeping what spans frames: the <think> state, tool-call
    numbering, usage and the finish reason. ``opens_thinking``: the model starts inside
    <think> without writing the tag."""

    def __init__(self, *, opens_thinking: bool = False) -> None:
        self._tags: ThinkTags | None = ThinkTags(thinking=opens_thinking)
        self.done = False
        self.malformed = 0
        self.usage: dict[str, int] | None = None
        self.finish_reason: str | None = None
        self.unknown_finish_reason: str | None = None
        self.text_seen = False
        self.thinking_seen = False
        self.tool_calls_seen = False
        self._calls: dict[object, int] = {}  # upstream key (index, or id) -> our index
        self._last_call: object = None
        self._openai_calls = False

    def frame(self, payload: str, out: Decoded) -> None:
        """One event's data: its parts and tool-call pieces go to ``out``."""
        plain = _PLAIN_NATIVE.fullmatch(payload)
        if plain is not None:
            self._delta(plain.group(1), None, None, out)
            return
        chunk = _PLAIN_CHUNK.fullmatch(payload)
        if chunk is not None:
            self.plain_chunk(chunk, out)
            return
        if payload == "[DONE]":
            self.release(out)
            self.done = out.done = True
            return
        try:
            frame = json.loads(payload)
        except ValueError:
            self.malformed += 1
            return
        if not isinstance(frame, dict):
            self.malformed += 1
            return
        self._json_frame(frame, out)

    @property
    def plain(self) -> bool:
        """Answer text goes straight to the parts (no <think> scan, [DONE] not seen): what
        the batch path of UpstreamDecoder needs."""
        return self._tags is None and not self.done

    def plain_texts(self, texts: list[str], out: Decoded) -> None:
        """The texts of plain native frames, when ``plain``: what frame() would make of each."""
        parts = out.parts
        for text in texts:
            if text:
                parts.append((TEXT, text))
                self.text_seen = True

    def plain_chunk(self, chunk: re.Match[str], out: Decoded) -> None:
        """A chunk _PLAIN_CHUNK matched: what the JSON path would make of it."""
        self._delta(*_chunk_delta(chunk), out)
        prompt = chunk.group(9)
        if prompt is not None:
            self._counts(int(prompt), int(chunk.group(10)), int(chunk.group(11)))

    def plain_chunks(self, chunks: list[re.Match[str]], out: Decoded) -> None:
        """plain_chunk() of each, in order, in fewer steps: a content-only delta goes straight
        to the parts once the think-tag scan is done, and of the usages only the one that
        would be left standing is applied (the last non-zero one, else the first)."""
        parts = out.parts
        kept: tuple[str, str, str] | None = None
        zero: tuple[str, str, str] | None = None
        for chunk in chunks:
            k1, v1, k2, prompt, completion, total = chunk.group(1, 2, 3, 9, 10, 11)
            if k2 is None and k1 == "content" and self._tags is None:
                if v1:
                    parts.append((TEXT, v1))
                    self.text_seen = True
            else:
                self._delta(*_chunk_delta(chunk), out)
            if prompt is not None:
                if prompt != "0" or completion != "0" or total != "0":
                    kept = (prompt, completion, total)
                elif zero is None:
                    zero = (prompt, completion, total)
        usage = kept or zero
        if usage is not None:
            self._counts(int(usage[0]), int(usage[1]), int(usage[2]))

    def _counts(self, prompt: int, completion: int, total: int) -> None:
        """_usage() of a usage with just the three counts, without making its dict first."""
        old = self.usage
        if old is not None and not (prompt or completion or total):
            return
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}
        if old is not None:
            if (cached := old.get("cached_tokens")) is not None:
                usage["cached_tokens"] = cached
            if (reasoning := old.get("reasoning_tokens")) is not None:
                usage["reasoning_tokens"] = reasoning
        self.usage = usage

    def release(self, out: Decoded) -> None:
        """The end of the answer: text held back while a <think> tag might be forming."""
        if self._tags is not None:
            for kind, piece in self._tags.flush():
                self._emit(kind, piece, out)

    def _json_frame(self, frame: dict[str, object], out: Decoded) -> None:
        text = frame.get("response")
        reason = frame.get("finish_reason")
        choices = frame.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            choice = choices[0]
            # A streamed chunk has a delta; a non-streamed result (replayed as one frame)
            # has the whole message.
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                delta = choice.get("message")
            if isinstance(delta, dict):
                calls = delta.get("tool_calls")
                if isinstance(calls, list) and calls:
                    self._openai_tool_calls(calls, whole=delta is choice.get("message"), out=out)
                self._delta(None, delta.get("reasoning_content"), delta.get("reasoning"), out)
                text = delta.get("content")
            reason = choice.get("finish_reason")
        else:
            calls = frame.get("tool_calls")
            # A trailing native frame after OpenAI-shaped chunks must not double their calls.
            if isinstance(calls, list) and calls and not self._openai_calls:
                self._native_tool_calls(calls, out)
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            text = json.dumps(text)
        elif isinstance(text, (dict, list)):
            text = _json_text(text)
        self._delta(text, None, None, out)
        if isinstance(reason, str) and reason:
            self.finish_reason = finish_reason(reason)
            if reason not in FINISH_REASONS:
                self.unknown_finish_reason = reason
        usage = frame.get("usage")
        if isinstance(usage, dict):
            self._usage(usage)

    def _usage(self, usage: dict[str, object]) -> None:
        clean = {
            key: value
            for key in USAGE_KEYS
            if isinstance(value := usage.get(key), int) and not isinstance(value, bool)
        }
        cached = _cached_tokens(usage)
        if cached is None and self.usage is not None:
            cached = self.usage.get("cached_tokens")  # a later frame that leaves it out
        if cached is not None and clean:
            clean["cached_tokens"] = cached
        reasoning = _reasoning_tokens(usage)
        if reasoning is None and self.usage is not None:
            reasoning = self.usage.get("reasoning_tokens")
        if reasoning is not None and clean:
            clean["reasoning_tokens"] = reasoning
        if clean and (self.usage is None or any(clean.values())):
            self.usage = clean

    def _delta(self, text: object, thought: object, other: object, out: Decoded) -> None:
        """A delta's parts in the order they are shown: reasoning_content, then reasoning
        unless it repeats it (Kimi sends both fields with the same text: it is relayed once),
        then the content."""
        if thought or other:  # most frames carry neither: one test for both
            if isinstance(thought, str) and thought:
                self._emit(THINKING, thought, out)
            if isinstance(other, str) and other and other != thought:
                self._emit(THINKING, other, out)
        if not text or not isinstance(text, str):
            return
        tags = self._tags
        if tags is None:
            self.text_seen = True
            out.parts.append((TEXT, text))
            return
        for kind, piece in tags.feed(text):
            self._emit(kind, piece, out)
        if tags.idle:
            self._tags = None  # plain answer text from here on: no tag scan

    def _emit(self, kind: str, text: str, out: Decoded) -> None:
        if kind == TEXT:
            self.text_seen = True
        else:
            self.thinking_seen = True
        out.parts.append((kind, text))

    def _call(
        self, key: object, out: Decoded, *, id: str | None, name: str | None, arguments: str
    ) -> None:
        """One piece of the call known upstream as ``key``; a key not seen before starts a call."""
        index = self._calls.get(key)
        first = index is None
        if index is None:
            index = self._calls[key] = len(self._calls)
        self._last_call = key
        self.tool_calls_seen = True
        if out.tool_calls is None:
            out.tool_calls = []
        if first:
            out.tool_calls.append(ToolCall(index=index, id=id, name=name, arguments=arguments))
        elif arguments or name:
            out.tool_calls.append(ToolCall(index=index, name=name, arguments=arguments))

    def _openai_tool_calls(self, calls: list[object], *, whole: bool, out: Decoded) -> None:
        """``whole``: a non-streamed message, each item a complete call."""
        self._openai_calls = True
        for position, item in enumerate(calls):
            if not isinstance(item, dict):
                self.malformed += 1
                continue
            function = item.get("function")
            function = function if isinstance(function, dict) else {}
            index, id = item.get("index"), item.get("id")
            if isinstance(index, int) and not isinstance(index, bool):
                key: object = ("index", index)
            elif isinstance(id, str) and id:
                key = ("id", id)
            else:
                key = ("index", position) if whole or self._last_call is None else self._last_call
            self._call(
                key,
                out,
                id=id if isinstance(id, str) and id else None,
                name=_str(function.get("name")),
                arguments=_arguments(function.get("arguments")),
            )

    def _native_tool_calls(self, calls: list[object], out: Decoded) -> None:
        for item in calls:
            if not isinstance(item, dict):
                self.malformed += 1
                continue
            function = item.get("function")
            source = function if isinstance(function, dict) else item
            id = item.get("id")
            self._call(
                ("native", len(self._calls)),
                out,
                id=id if isinstance(id, str) and id else None,
                name=_str(source.get("name")),
                arguments=_arguments(source.get("arguments")),
            )


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _arguments(value: object) -> str:
    """Arguments as OpenAI sends them, JSON text; native models send the object itself."""
    if value is None:
        return ""
    return value if isinstance(value, str) else _json_text(value)
