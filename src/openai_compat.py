"""OpenAI Chat Completions over the same relay: request parsing, chunk and error shapes.

Supported: model, messages (system/developer/user/assistant; string or text-part content),
stream, stream_options.include_usage, max_tokens / max_completion_tokens, temperature,
reasoning_effort, n (only 1). Ignored: user. Anything else is refused with 400 unsupported_parameter, so
nothing reaches env.AI.run unchecked.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from app import Api, Context, Route, new_relay, open_upstream, parse_body
from chat_request import (
    ChatRequest,
    parse_max_tokens,
    parse_messages,
    parse_model,
    parse_reasoning_effort,
    parse_temperature,
)
from errors import ApiError, clip, invalid
from relay import Failed, Finished, OneShot, drive, relay_whole
from upstream import TEXT, Part
from web import SSE_HEADERS, Relayed, WebResponse, json_response

SUPPORTED = (
    "model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens",
    "temperature", "reasoning_effort", "n",
)
IGNORED = ("user",)
ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}

ERROR_TYPES = {403: "permission_error", 404: "not_found_error", 429: "rate_limit_error"}


def openai_error(error: ApiError) -> WebResponse:
    kind = ERROR_TYPES.get(error.status, "server_error" if error.status >= 500 else "invalid_request_error")
    body = {"error": {"message": error.message, "type": kind, "param": error.param, "code": error.code}}
    return json_response(error.status, body, error.headers)


def content_text(field: str, content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if not (isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)):
                raise invalid(f"{field}[{i}]", "only text parts ({\"type\": \"text\", \"text\": ...}) are supported")
            parts.append(part["text"])
        return "".join(parts)
    raise invalid(field, "must be a string or an array of text parts")


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletionRequest:
    chat: ChatRequest
    stream: bool
    include_usage: bool


def parse_completion(body: dict[str, Any], ctx: Context) -> CompletionRequest:
    for key in body:
        if key not in SUPPORTED and key not in IGNORED:
            raise ApiError(
                400,
                "unsupported_parameter",
                f"{clip(key)}: not supported by this service; supported: {', '.join(SUPPORTED)}",
                param=clip(key),
            )
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise invalid("stream", "must be a boolean")
    include_usage = False
    options = body.get("stream_options")
    if options is not None:
        if not stream:
            raise invalid("stream_options", "is only allowed when stream is true")
        if not isinstance(options, dict) or any(k != "include_usage" for k in options):
            raise invalid("stream_options", "only {\"include_usage\": bool} is supported")
        include_usage = options.get("include_usage", False)
        if not isinstance(include_usage, bool):
            raise invalid("stream_options.include_usage", "must be a boolean")
    n = body.get("n")
    if n is not None and (n != 1 or isinstance(n, bool)):
        raise invalid("n", "only n = 1 is supported")
    if body.get("max_completion_tokens") is not None:
        max_tokens = parse_max_tokens("max_completion_tokens", body["max_completion_tokens"], ctx.settings)
    else:
        max_tokens = parse_max_tokens("max_tokens", body.get("max_tokens"), ctx.settings)
    chat = ChatRequest(
        messages=parse_messages(
            body.get("messages"),
            ctx.settings,
            roles=ROLES,
            content_of=content_text,
            message_fields=("role", "content", "name"),
        ),
        model=parse_model(body.get("model"), ctx.settings),
        max_tokens=max_tokens,
        temperature=parse_temperature(body.get("temperature")),
        reasoning_effort=parse_reasoning_effort(body.get("reasoning_effort")),
    )
    return CompletionRequest(chat=chat, stream=stream, include_usage=include_usage)


_dumps = json.JSONEncoder(separators=(",", ":")).encode
_string = json.encoder.encode_basestring_ascii


class CompletionEncoder:
    """chat.completion.chunk frames; official clients raise on the error frame.

    Reasoning goes out as delta.reasoning_content, the field DeepSeek, vLLM and Workers AI
    use, in stream order with delta.content.
    """

    __slots__ = ("_head", "_tail", "_include_usage")

    def __init__(self, *, id: str, created: int, model: str, include_usage: bool) -> None:
        self._head = '{"id":"%s","object":"chat.completion.chunk","created":%d,"model":%s,"choices":' % (id, created, _string(model))
        self._tail = ',"usage":null}' if include_usage else "}"
        self._include_usage = include_usage

    def _choice(self, delta: str, finish: str = "null") -> str:
        return 'data: %s[{"index":0,"delta":%s,"finish_reason":%s}]%s\n\n' % (self._head, delta, finish, self._tail)

    def start(self) -> bytes:
        return self._choice('{"role":"assistant","content":""}').encode()

    def parts(self, parts: list[Part]) -> bytes:
        return "".join(
            [
                self._choice(('{"content":%s}' if kind == TEXT else '{"reasoning_content":%s}') % _string(t))
                for kind, t in parts
            ]
        ).encode()

    def ping(self) -> bytes:
        return b": ping\n\n"

    def finished(self, stop: Finished) -> bytes:
        out = self._choice("{}", _string(stop.stop_reason))
        if self._include_usage and stop.usage is not None:
            out += "data: %s[],\"usage\":%s}\n\n" % (self._head, _dumps(stop.usage))
        return (out + "data: [DONE]\n\n").encode()

    def failed(self, failure: Failed) -> bytes:
        # No [DONE] after a failure: [DONE] means the answer is complete.
        error = {"error": {"message": failure.message, "type": "server_error", "param": None, "code": failure.code}}
        return b"data: " + _dumps(error).encode() + b"\n\n"


class Collector:
    """An encoder for the non-streamed answer: keeps the text, the reasoning and the ending."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.finish: Finished | None = None
        self.failure: Failed | None = None

    def start(self) -> bytes:
        return b""

    def parts(self, parts: list[Part]) -> bytes:
        for kind, t in parts:
            (self.text if kind == TEXT else self.reasoning).append(t)
        return b""

    def message(self) -> dict[str, str]:
        """The assistant message; reasoning_content only when the model reasoned."""
        message = {"role": "assistant", "content": "".join(self.text)}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        return message

    def ping(self) -> bytes:
        return b""

    def finished(self, stop: Finished) -> bytes:
        self.finish = stop
        return b""

    def failed(self, failure: Failed) -> bytes:
        self.failure = failure
        return b""


async def completions(ctx: Context) -> WebResponse:
    request = parse_completion(await parse_body(ctx), ctx)
    chat = request.chat
    inputs = chat.ai_inputs()
    # Not streamed to the client: ask for the whole answer, one JSON result, no stream to read.
    inputs["stream"] = request.stream
    source = await open_upstream(ctx, chat.model, inputs)
    id, created = "chatcmpl-" + os.urandom(12).hex(), int(time.time())
    if request.stream:
        encoder = CompletionEncoder(id=id, created=created, model=chat.model, include_usage=request.include_usage)
        relay = new_relay(ctx, encoder, chat.max_tokens, chat.model)
        return WebResponse(status=200, headers=SSE_HEADERS, body=Relayed(source=source, relay=relay))
    collector = Collector()
    relay = new_relay(ctx, collector, chat.max_tokens, chat.model)
    if isinstance(source, OneShot):
        relay_whole(relay, source)
    else:  # a model that streams although asked not to
        async for _ in drive(source, relay):
            pass
    if collector.failure is not None:
        raise ApiError(502, collector.failure.code, collector.failure.message)
    finished = collector.finish
    if finished is None:  # drive() always ends in finished or failed
        raise ApiError(500, "internal_error", "The answer could not be completed.")
    completion: dict[str, Any] = {
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": chat.model,
        "choices": [
            {
                "index": 0,
                "message": collector.message(),
                "finish_reason": finished.stop_reason,
            }
        ],
    }
    if finished.usage is not None:
        completion["usage"] = finished.usage
    return json_response(200, completion)


async def models(ctx: Context) -> WebResponse:
    data = [{"id": m, "object": "model", "created": 0, "owned_by": "cloudflare"} for m in ctx.settings.models]
    return json_response(200, {"object": "list", "data": data})


OPENAI_API = Api(
    prefix="/v1/",
    routes={
        "/v1/chat/completions": Route(methods={"POST": completions}, render_error=openai_error, metered=True),
        "/v1/models": Route(methods={"GET": models}, render_error=openai_error),
    },
    render_error=openai_error,
)
