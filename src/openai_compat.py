"""OpenAI Chat Completions over the same relay: request parsing, chunk and error shapes.

Supported: model, messages (system/developer/user/assistant; string or text-part content),
stream, stream_options.include_usage, max_tokens / max_completion_tokens, temperature,
n (only 1). Ignored: user. Anything else is refused with 400 unsupported_parameter, so
nothing reaches env.AI.run unchecked.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from app import Context, Route, add_routes, open_upstream, parse_body, timing
from chat_request import ChatRequest, parse_max_tokens, parse_messages, parse_model, parse_temperature
from errors import ApiError, invalid
from relay import Failed, Finished, Ping, RelayEvent, Text, relay
from web import SSE_HEADERS, WebResponse, json_response

SUPPORTED = ("model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature", "n")
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
                f"{key}: not supported by this service; supported: {', '.join(SUPPORTED)}",
                param=key,
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
    )
    return CompletionRequest(chat=chat, stream=stream, include_usage=include_usage)


def _frame(value: object) -> bytes:
    return b"data: " + json.dumps(value, separators=(",", ":")).encode() + b"\n\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkMeta:
    id: str
    created: int
    model: str


async def completion_chunks(
    batches: AsyncIterator[list[RelayEvent]], meta: ChunkMeta, include_usage: bool
) -> AsyncIterator[bytes]:
    head = b'{"id":"%s","object":"chat.completion.chunk","created":%d,"model":%s,"choices":' % (
        meta.id.encode(),
        meta.created,
        json.dumps(meta.model).encode(),
    )
    usage_tail = b',"usage":null}' if include_usage else b"}"
    yield b'data: %s[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]%s\n\n' % (head, usage_tail)
    async for batch in batches:
        parts: list[bytes] = []
        for item in batch:
            if isinstance(item, Text):
                parts.append(
                    b'data: %s[{"index":0,"delta":{"content":%s},"finish_reason":null}]%s\n\n'
                    % (head, json.dumps(item.text).encode(), usage_tail)
                )
            elif isinstance(item, Ping):
                parts.append(b": ping\n\n")
            elif isinstance(item, Finished):
                parts.append(
                    b'data: %s[{"index":0,"delta":{},"finish_reason":%s}]%s\n\n'
                    % (head, json.dumps(item.stop_reason).encode(), usage_tail)
                )
                if include_usage and item.usage is not None:
                    parts.append(b'data: %s[],"usage":%s}\n\n' % (head, json.dumps(item.usage, separators=(",", ":")).encode()))
                parts.append(b"data: [DONE]\n\n")
            elif isinstance(item, Failed):
                # Official clients raise on an error frame; no [DONE] follows a failure.
                parts.append(_frame({"error": {"message": item.message, "type": "server_error", "param": None, "code": item.code}}))
        yield b"".join(parts)


async def completions(ctx: Context) -> WebResponse:
    request = parse_completion(await parse_body(ctx), ctx)
    chat = request.chat
    source = await open_upstream(ctx, chat.model, chat.ai_inputs())
    events = relay(source, timing(ctx.settings), max_tokens=chat.max_tokens)
    meta = ChunkMeta(id="chatcmpl-" + secrets.token_hex(12), created=int(time.time()), model=chat.model)
    if request.stream:
        body = completion_chunks(events, meta, request.include_usage)
        return WebResponse(status=200, headers=SSE_HEADERS, body=body, on_cancel=source.cancel)
    text: list[str] = []
    finished: Finished | None = None
    async for batch in events:
        for item in batch:
            if isinstance(item, Text):
                text.append(item.text)
            elif isinstance(item, Failed):
                raise ApiError(502, item.code, item.message)
            elif isinstance(item, Finished):
                finished = item
    if finished is None:  # the relay always ends in Finished or Failed
        raise ApiError(500, "internal_error", "The answer could not be completed.")
    completion: dict[str, Any] = {
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "".join(text)},
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


add_routes(
    {
        "/v1/chat/completions": Route(methods={"POST": completions}, render_error=openai_error),
        "/v1/models": Route(methods={"GET": models}, render_error=openai_error),
    },
    prefix="/v1/",
    render_error=openai_error,
)
