"""OpenAI Chat Completions over the same relay: the request, chunk and error shapes.

What each parameter does is in openai_params.PARAMS (the README's table is made from it);
the conversation and its tools are checked in openai_messages. Nothing reaches env.AI.run
unchecked. Tool calls come back as OpenAI sends them: streamed as ``delta.tool_calls``
pieces (id, type and name first, then the arguments), whole in ``message.tool_calls``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import affinity
import catalog
import openai_params
from app import Api, Context, Route, answer_whole, new_relay, open_answer, parse_body
from chat_request import parse_max_tokens, parse_model, parse_reasoning_effort
from conversation import OPENAI, parse_conversation
from errors import ApiError, clip, invalid
from openai_messages import parse_tool_choice, parse_tools
from relay import Failed, Finished
from sse import PING
from sse import dumps as _dumps
from sse import json_string as _string
from stop import parse_stop
from upstream import TEXT, Part, ToolCall
from version import RELEASED
from web import SSE_HEADERS, Relayed, WebResponse, json_response

ERROR_TYPES = {403: "permission_error", 404: "not_found_error", 429: "rate_limit_error"}
# OpenAI's own 404 for a model id is an invalid request, not a missing route.
ERROR_TYPES_BY_CODE = {"model_not_found": "invalid_request_error"}

# Passed parameters the endpoint below builds itself rather than passing them as they come.
_OWN_INPUTS = frozenset(p.name for p in openai_params.PARAMS if p.built)


def openai_error(error: ApiError) -> WebResponse:
    kind = ERROR_TYPES_BY_CODE.get(error.code) or ERROR_TYPES.get(
        error.status, "server_error" if error.status >= 500 else "invalid_request_error"
    )
    body = {
        "error": {"message": error.message, "type": kind, "param": error.param, "code": error.code}
    }
    return json_response(error.status, body, error.headers, code=error.code)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletionRequest:
    """``options``: the passed parameters, as sent; ``json_mode``: asked for JSON output,
    which Workers AI does not stream, so the model is asked for the whole answer."""

    model: str
    messages: tuple[dict[str, Any], ...]
    max_tokens: int
    options: tuple[tuple[str, Any], ...]
    stream: bool
    include_usage: bool
    json_mode: bool = False
    stop: tuple[str, ...] = ()  # cut by the relay, never sent to the model
    # The client's own conversation keys, first wins: prompt_cache_key, user (affinity.py).
    cache_keys: tuple[str | None, ...] = ()

    def ai_inputs(self) -> dict[str, Any]:
        inputs: dict[str, Any] = {
            "messages": [dict(m) for m in self.messages],
            # Streamed from the model even for a client that wants the whole answer: then
            # silence times out, not length (the run() call itself is bounded by the idle limit).
            "stream": not self.json_mode,
            "max_tokens": self.max_tokens,
        }
        inputs.update(self.options)
        return inputs


def _stream_options(body: dict[str, Any], stream: bool) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not stream:
        raise invalid("stream_options", "is only allowed when stream is true")
    if not isinstance(options, dict):
        raise invalid("stream_options", "must be an object")
    for key, value in options.items():
        if key not in ("include_usage", "include_obfuscation"):
            raise invalid(
                f"stream_options.{clip(key)}",
                "unknown field; supported: include_usage, include_obfuscation",
            )
        if value is not None and not isinstance(value, bool):
            raise invalid(f"stream_options.{clip(key)}", "must be a boolean")
    return options.get("include_usage") is True


def parse_completion(body: dict[str, Any], ctx: Context) -> CompletionRequest:
    model = parse_model(body.get("model"), ctx.settings)
    options: dict[str, Any] = {}
    for key, value in body.items():
        sent = openai_params.read(key, value, model)
        if sent is not None and key not in _OWN_INPUTS:
            options[key] = sent
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise invalid("stream", "must be a boolean")
    include_usage = _stream_options(body, stream)
    if body.get("max_completion_tokens") is not None:
        max_tokens = parse_max_tokens(
            "max_completion_tokens", body["max_completion_tokens"], ctx.settings
        )
    else:
        max_tokens = parse_max_tokens("max_tokens", body.get("max_tokens"), ctx.settings)
    effort = parse_reasoning_effort(body.get("reasoning_effort"))
    if effort is None and body.get("reasoning") is not None:
        effort = openai_params.reasoning_object("reasoning", body["reasoning"])  # type: ignore[assignment]
    if effort is not None:
        options["reasoning_effort"] = effort
    tools = parse_tools(body.get("tools"))
    choice = parse_tool_choice(body.get("tool_choice"), tools)
    if tools and choice != "none":
        options["tools"] = list(tools)
        if choice is not None:
            options["tool_choice"] = choice
    response_format = body.get("response_format")
    json_mode = openai_params.is_json_mode(response_format)
    if json_mode:
        assert isinstance(response_format, dict)
        openai_inputs = openai_params.takes_openai_inputs(model)
        options["response_format"] = (
            response_format
            if openai_inputs
            else openai_params.native_response_format(response_format)
        )
    facts = catalog.info(model)
    conversation = parse_conversation(
        body.get("messages"), ctx.settings, dialect=OPENAI, model=model, facts=facts
    )
    return CompletionRequest(
        model=model,
        messages=conversation.messages,
        stop=parse_stop("stop", body.get("stop")),
        max_tokens=max_tokens,
        options=tuple(options.items()),
        stream=stream,
        include_usage=include_usage,
        json_mode=json_mode,
        cache_keys=tuple(
            v if isinstance(v, str) else None
            for v in (body.get("prompt_cache_key"), body.get("user"))
        ),
    )


def openai_usage(usage: dict[str, int]) -> dict[str, Any]:
    """Our usage in OpenAI's shape: cached prompt tokens in prompt_tokens_details."""
    out: dict[str, Any] = {k: v for k, v in usage.items() if k != "cached_tokens"}
    if "cached_tokens" in usage:
        out["prompt_tokens_details"] = {"cached_tokens": usage["cached_tokens"]}
    return out


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
        # No [DONE] after a failure: [DONE] means the answer is complete.
        error = {
            "error": {
                "message": failure.message,
                "type": "server_error",
                "param": None,
                "code": failure.code,
            }
        }
        return b"data: " + _dumps(error).encode() + b"\n\n"


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
        return b""  # how it ended is the relay's ending (app.answer_whole reads it)

    def failed(self, failure: Failed) -> bytes:
        return b""


async def completions(ctx: Context) -> WebResponse:
    request = parse_completion(await parse_body(ctx), ctx)
    conversation = affinity.key(
        [ctx.request.headers.get(affinity.HEADER), *request.cache_keys], request.messages
    )
    opened = await open_answer(ctx, request.model, request.ai_inputs(), conversation=conversation)
    source, model = opened.source, opened.model  # model: the one that answers (a fallback, maybe)
    id, created = "chatcmpl-" + os.urandom(12).hex(), int(time.time())
    if request.stream:
        # A one-shot result (JSON mode) goes out as the same chunks: the shell runs relay_whole.
        encoder = CompletionEncoder(
            id=id, created=created, model=model, include_usage=request.include_usage
        )
        relay = new_relay(ctx, encoder, request.max_tokens, model, request.stop)
        return WebResponse(
            status=200, headers=SSE_HEADERS, body=Relayed(source=source, relay=relay)
        )
    collector = Collector(id=id)
    relay = new_relay(ctx, collector, request.max_tokens, model, request.stop)
    finished = await answer_whole(ctx, source, relay)
    completion: dict[str, Any] = {
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": collector.message(),
                "finish_reason": finished.stop_reason,
            }
        ],
    }
    if finished.usage is not None:
        completion["usage"] = openai_usage(finished.usage)
    return json_response(200, completion, usage=finished.usage)


def model_object(model: str) -> dict[str, Any]:
    """OpenAI's model object; `capabilities` is ours (clients keep unknown fields)."""
    return {
        "id": model,
        "object": "model",
        "created": RELEASED,
        "owned_by": "cloudflare",
        "capabilities": catalog.capabilities(model),
    }


async def models(ctx: Context) -> WebResponse:
    return json_response(
        200, {"object": "list", "data": [model_object(m) for m in ctx.settings.models]}
    )


MODEL_PREFIX = "/v1/models/"


async def model(ctx: Context) -> WebResponse:
    """GET /v1/models/{id}: ids have slashes (@cf/meta/...), and clients may percent-encode them."""
    wanted = unquote(ctx.request.path[len(MODEL_PREFIX) :])
    if wanted not in ctx.settings.models:
        raise ApiError(
            404,
            "model_not_found",
            f"The model {wanted!r} does not exist; GET /v1/models lists the models.",
            param="model",
        )
    return json_response(200, model_object(wanted))


OPENAI_API = Api(
    prefix="/v1/",
    routes={
        "/v1/chat/completions": Route(
            methods={"POST": completions}, render_error=openai_error, metered=True
        ),
        "/v1/models": Route(methods={"GET": models}, render_error=openai_error),
    },
    prefix_routes={MODEL_PREFIX: Route(methods={"GET": model}, render_error=openai_error)},
    render_error=openai_error,
)
