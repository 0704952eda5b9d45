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
from functools import partial
from typing import Any, Protocol
from urllib.parse import unquote

from base import catalog
from base.errors import ApiError, clip, invalid
from base.settings import Settings
from base.version import RELEASED
from checks.chat_request import parse_max_tokens, parse_model, parse_reasoning_effort
from checks.messages import OPENAI, parse_conversation
from common import openai_params
from common.openai_events import Collector, CompletionEncoder, openai_usage
from common.openai_messages import parse_tool_choice, parse_tools
from streaming.relay import Encoder
from streaming.stop import parse_stop
from surface.routing import Api, Context, Route, parse_body
from surface.web import WebResponse, json_response
from workers_ai import affinity, service

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


def stream_options(body: dict[str, Any], stream: bool) -> bool:
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
    include_usage = stream_options(body, stream)
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


class ChunkEncoder(Protocol):
    """An OpenAI door's encoder of chunks, made once the model that answers is known."""

    def __call__(self, *, model: str, include_usage: bool) -> Encoder: ...


async def streamed(
    ctx: Context, asked: service.Asked, chunks: ChunkEncoder, *, include_usage: bool
) -> WebResponse:
    """The streamed answer of an OpenAI door (chat and legacy completions): `chunks` names the
    model that answers (the one asked, or a fallback)."""
    return await service.streamed(
        ctx.model,
        ctx.settings,
        asked,
        lambda model: chunks(model=model, include_usage=include_usage),
    )


async def completions(ctx: Context) -> WebResponse:
    request = parse_completion(await parse_body(ctx), ctx)
    session = affinity.key(
        [ctx.request.headers.get(affinity.HEADER), *request.cache_keys], request.messages
    )
    asked = service.Asked(
        model=request.model,
        calls=(service.Call(inputs=request.ai_inputs(), session=session),),
        key_id=ctx.key_id,
        max_tokens=request.max_tokens,
        stops=request.stop,
    )
    id, created = "chatcmpl-" + os.urandom(12).hex(), int(time.time())
    if request.stream:
        # A one-shot result (JSON mode) goes out as the same chunks: the shell runs relay_whole.
        chunks = partial(CompletionEncoder, id=id, created=created)
        return await streamed(ctx, asked, chunks, include_usage=request.include_usage)
    collector = Collector(id=id)
    [answer] = await service.answers_whole(ctx.model, ctx.settings, asked, [collector])
    finished = answer.finished
    completion: dict[str, Any] = {
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": answer.model,  # the model that answered: a fallback, maybe
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


def embedding_model_object(model: str) -> dict[str, Any]:
    """An embedding model (POST /v1/embeddings): `capabilities.task` says so."""
    return {**model_object(model), "capabilities": catalog.embedding_capabilities(model)}


def listed(settings: Settings) -> dict[str, dict[str, Any]]:
    """Every model /v1/models lists by id: the chat models, then the embedding models."""
    out = {m: model_object(m) for m in settings.models}
    out.update((m, embedding_model_object(m)) for m in settings.embedding_models)
    return out


async def models(ctx: Context) -> WebResponse:
    return json_response(200, {"object": "list", "data": list(listed(ctx.settings).values())})


MODEL_PREFIX = "/v1/models/"


async def model(ctx: Context) -> WebResponse:
    """GET /v1/models/{id}: ids have slashes (@cf/meta/...), and clients may percent-encode them."""
    wanted = unquote(ctx.request.path[len(MODEL_PREFIX) :])
    found = listed(ctx.settings).get(wanted)
    if found is None:
        raise ApiError(
            404,
            "model_not_found",
            f"The model {wanted!r} does not exist; GET /v1/models lists the models.",
            param="model",
        )
    return json_response(200, found)


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
