"""The OpenAI Responses API's output as a relay Encoder: streamed events, or the whole Response.

Streamed, it writes what the official SDKs parse (openai-python's ResponseStreamState,
the Agents SDK): ``response.created``, ``response.in_progress``, then per output item
``response.output_item.added``, its content (``response.content_part.added``,
``response.output_text.delta`` ... ``.done``, ``response.content_part.done`` for a message;
``response.reasoning_text.delta`` ... ``.done`` inside a ``reasoning`` item for the model's
thinking, and beside each the same text as the item's one summary part,
``response.reasoning_summary_part.added``, ``response.reasoning_summary_text.delta`` ...
``.done``, ``response.reasoning_summary_part.done``; ``response.function_call_arguments.delta``
... ``.done`` for a tool call), then
``response.output_item.done``, and last ``response.completed`` (``response.incomplete``
when the token budget or a content filter cut it, ``response.failed`` when it failed), each
with its ``sequence_number`` from 0. No ``[DONE]``: the Responses stream has none.

The reasoning is in both places because the default clients each read one: the Agents SDK and
openai-python's ``reasoning_text`` users the content, ``@ai-sdk/openai`` only the summary, and
pydantic-ai shows the summary and keeps the content beside it in one ThinkingPart (its
``raw_content``); none shows both, so none shows it twice (issue 34). A reasoning item sent
back with both is read once (responses_input.py takes its content, else its summary).

Not streamed, the same state machine writes nothing and ``response`` is the Response object
(the one ``response.completed`` carries). A message or reasoning item ends when the model
turns to something else; tool calls, whose pieces may interleave, end with the answer.

Usage has the Responses names: the cached prompt tokens Workers AI reports (its
prompt_tokens_details, kept by the relay as `cached_tokens`) and the reasoning tokens when the
usage counts them (else 0).
"""

from __future__ import annotations

import json
from typing import Any

from streaming.relay import Failed, Finished
from streaming.sse import PING
from streaming.upstream import TEXT, Part, ToolCall

_dumps = json.JSONEncoder(separators=(",", ":")).encode
_string = json.encoder.encode_basestring_ascii

# The per-token events, formatted without building a dict each time.
_TEXT_DELTA = (
    'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":%d,'
    '"item_id":"%s","output_index":%d,"content_index":0,"delta":%s,"logprobs":[]}\n\n'
)
_REASONING_DELTA = (
    'event: response.reasoning_text.delta\ndata: {"type":"response.reasoning_text.delta","sequence_number":%d,'
    '"item_id":"%s","output_index":%d,"content_index":0,"delta":%s}\n\n'
)
_SUMMARY_DELTA = (
    'event: response.reasoning_summary_text.delta\ndata: {"type":"response.reasoning_summary_text.delta",'
    '"sequence_number":%d,"item_id":"%s","output_index":%d,"summary_index":0,"delta":%s}\n\n'
)
_ARGUMENTS_DELTA = (
    'event: response.function_call_arguments.delta\ndata: {"type":"response.function_call_arguments.delta",'
    '"sequence_number":%d,"item_id":"%s","output_index":%d,"delta":%s}\n\n'
)

INCOMPLETE_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}


def usage(counts: dict[str, int] | None) -> dict[str, Any] | None:
    if counts is None:
        return None
    prompt, completion = counts.get("prompt_tokens", 0), counts.get("completion_tokens", 0)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": counts.get("cached_tokens", 0)},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": counts.get("reasoning_tokens", 0)},
        "total_tokens": counts.get("total_tokens", prompt + completion),
    }


class _Open:
    """The message or reasoning item being written, and its text so far."""

    __slots__ = ("id", "index", "kind", "texts")

    def __init__(self, index: int, id: str, kind: str) -> None:
        self.index, self.id, self.kind = index, id, kind
        self.texts: list[str] = []


class ResponsesEncoder:
    """``response`` is the whole Response object once the answer has ended (finished or
    failed: how it ended is the relay's ``ending``). ``echo`` holds the request's fields a Response
    repeats (instructions, tools, tool_choice, temperature, ...)."""

    __slots__ = (
        "_calls",
        "_head",
        "_id",
        "_items",
        "_open",
        "_seq",
        "_stream",
        "response",
    )

    def __init__(
        self, *, id: str, created_at: int, model: str, echo: dict[str, Any], stream: bool
    ) -> None:
        self._id = id
        self._seq = 0
        self._stream = stream
        self._head: dict[str, Any] = {
            "id": id,
            "object": "response",
            "created_at": created_at,
            "model": model,
            **echo,
        }
        self._items: list[dict[str, Any]] = []  # the output, in output_index order
        self._open: _Open | None = None
        self._calls: dict[int, tuple[int, list[str]]] = {}  # tool call -> (output_index, arguments)
        self.response: dict[str, Any] | None = None

    def _event(self, kind: str, fields: dict[str, Any]) -> str:
        if not self._stream:
            return ""
        seq = self._seq
        self._seq = seq + 1
        return "event: %s\ndata: %s\n\n" % (
            kind,
            _dumps({"type": kind, "sequence_number": seq, **fields}),
        )

    def _snapshot(self, status: str, **extra: Any) -> dict[str, Any]:
        return {
            **self._head,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "output": self._items,
            "usage": None,
            **extra,
        }

    def start(self) -> bytes:
        if not self._stream:
            return b""
        return (
            self._event("response.created", {"response": self._snapshot("in_progress", output=[])})
            + self._event(
                "response.in_progress", {"response": self._snapshot("in_progress", output=[])}
            )
        ).encode()

    def _item_id(self, prefix: str) -> str:
        return "%s_%s_%d" % (prefix, self._id.removeprefix("resp_"), len(self._items))

    def _begin(self, kind: str) -> str:
        """Opens a message (TEXT) or reasoning (THINKING) item, ending the one before."""
        out = self._end_open("completed")
        index = len(self._items)
        if kind == TEXT:
            item_id = self._item_id("msg")
            item: dict[str, Any] = {
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
            }
            part: dict[str, Any] = {
                "type": "output_text",
                "annotations": [],
                "logprobs": [],
                "text": "",
            }
        else:
            item_id = self._item_id("rs")
            item = {
                "id": item_id,
                "type": "reasoning",
                "summary": [],
                "content": [],
                "status": "in_progress",
            }
            part = {"type": "reasoning_text", "text": ""}
        self._open = _Open(index, item_id, kind)
        self._items.append(item)
        out += self._event("response.output_item.added", {"output_index": index, "item": item})
        out += self._event(
            "response.content_part.added",
            {"item_id": item_id, "output_index": index, "content_index": 0, "part": part},
        )
        if kind == TEXT:
            return out
        return out + self._event(
            "response.reasoning_summary_part.added",
            {
                "item_id": item_id,
                "output_index": index,
                "summary_index": 0,
                "part": {"type": "summary_text", "text": ""},
            },
        )

    def _end_open(self, status: str) -> str:
        current = self._open
        if current is None:
            return ""
        self._open = None
        text = "".join(current.texts)
        item = self._items[current.index]
        at = {"item_id": current.id, "output_index": current.index, "content_index": 0}
        if current.kind == TEXT:
            part: dict[str, Any] = {
                "type": "output_text",
                "annotations": [],
                "logprobs": [],
                "text": text,
            }
            out = self._event("response.output_text.done", {**at, "text": text, "logprobs": []})
        else:
            part = {"type": "reasoning_text", "text": text}
            out = self._event("response.reasoning_text.done", {**at, "text": text})
        item["content"] = [part]
        item["status"] = status
        out += self._event("response.content_part.done", {**at, "part": part})
        if current.kind != TEXT:
            summary = {"type": "summary_text", "text": text}
            item["summary"] = [summary]
            at = {"item_id": current.id, "output_index": current.index, "summary_index": 0}
            out += self._event("response.reasoning_summary_text.done", {**at, "text": text})
            cut = {"status": "incomplete"} if status == "incomplete" else {}
            out += self._event(
                "response.reasoning_summary_part.done", {**at, "part": summary, **cut}
            )
        return out + self._event(
            "response.output_item.done", {"output_index": current.index, "item": item}
        )

    def parts(self, parts: list[Part]) -> bytes:
        out = []
        for kind, text in parts:
            current = self._open
            if current is None or current.kind != kind:
                out.append(self._begin(kind))
                current = self._open
                assert current is not None
            current.texts.append(text)
            if self._stream:
                seq = self._seq
                if kind == TEXT:
                    self._seq = seq + 1
                    out.append(_TEXT_DELTA % (seq, current.id, current.index, _string(text)))
                else:  # the content and the summary (the module's docstring says why)
                    self._seq = seq + 2
                    quoted = _string(text)
                    out.append(_REASONING_DELTA % (seq, current.id, current.index, quoted))
                    out.append(_SUMMARY_DELTA % (seq + 1, current.id, current.index, quoted))
        return "".join(out).encode()

    def tool_calls(self, calls: list[ToolCall]) -> bytes:
        out = []
        for call in calls:
            known = self._calls.get(call.index)
            if known is None:
                out.append(self._end_open("completed"))
                index = len(self._items)
                item_id = self._item_id("fc")
                call_id = call.id or "call_%s_%d" % (self._id.removeprefix("resp_"), call.index)
                item = {
                    "id": item_id,
                    "type": "function_call",
                    "status": "in_progress",
                    "arguments": "",
                    "call_id": call_id,
                    "name": call.name or "",
                }
                self._items.append(item)
                known = self._calls[call.index] = (index, [])
                out.append(
                    self._event(
                        "response.output_item.added", {"output_index": index, "item": dict(item)}
                    )
                )
            elif call.name and not self._items[known[0]]["name"]:
                self._items[known[0]]["name"] = call.name
            index, arguments = known
            if call.arguments:
                arguments.append(call.arguments)
                if self._stream:
                    seq = self._seq
                    self._seq = seq + 1
                    out.append(
                        _ARGUMENTS_DELTA
                        % (seq, self._items[index]["id"], index, _string(call.arguments))
                    )
        return "".join(out).encode()

    def _end_calls(self, status: str) -> str:
        out = []
        for index, arguments in self._calls.values():
            item = self._items[index]
            item["arguments"] = "".join(arguments)
            item["status"] = status
            out.append(
                self._event(
                    "response.function_call_arguments.done",
                    {
                        "item_id": item["id"],
                        "output_index": index,
                        "name": item["name"],
                        "arguments": item["arguments"],
                    },
                )
            )
            out.append(
                self._event("response.output_item.done", {"output_index": index, "item": item})
            )
        return "".join(out)

    def ping(self) -> bytes:
        return PING if self._stream else b""

    def finished(self, stop: Finished) -> bytes:
        reason = INCOMPLETE_REASONS.get(stop.stop_reason)
        status = "completed" if reason is None else "incomplete"
        out = self._end_open(status) + self._end_calls(status)
        details = None if reason is None else {"reason": reason}
        self.response = self._snapshot(status, incomplete_details=details, usage=usage(stop.usage))
        return (out + self._event("response.%s" % status, {"response": self.response})).encode()

    def failed(self, failure: Failed) -> bytes:
        """What was sent stays sent; the items still open end as incomplete."""
        out = self._end_open("incomplete") + self._end_calls("incomplete")
        self.response = self._snapshot(
            "failed", error={"code": failure.code, "message": failure.message}
        )
        return (out + self._event("response.failed", {"response": self.response})).encode()

    def abandoned(self) -> dict[str, Any]:
        """The Response as it stood when the client went away (what is stored): the items still
        open end as incomplete, and no event is written."""
        if self.response is None:
            self._stream = False
            self._end_open("incomplete")
            self._end_calls("incomplete")
            self.response = self._snapshot(
                "incomplete", incomplete_details={"reason": "client_disconnected"}
            )
        return self.response
