"""OpenAI Chat Completions over the same relay: the request, chunk and error shapes.

What each parameter does is in openai_params.PARAMS (the README's table is made from it);
the conversation and its tools are checked in openai_messages. Nothing reaches env.AI.run
unchecked. Tool calls come back as OpenAI sends them: streamed as ``delta.tool_calls``
pieces (id, type and name first, then the arguments), whole in ``message.tool_calls``.
"""

from __future__ import annotations

import os
import time
from typing import Any
from urllib.parse import unquote

from base import catalog
from base.errors import ApiError, invalid
from base.settings import Settings
from base.version import RELEASED
from checks.chat_request import parse_max_tokens, parse_model, parse_reasoning_effort
from checks.messages import OPENAI, parse_conversation
from checks.stops import parse_stop
from common import answers, openai_params
from common.openai_events import Collector, CompletionEncoder, openai_usage
from common.openai_messages import parse_tool_choice, parse_tools
from common.openai_request import CompletionRequest, openai_error, stream_options
from surface.routing import Api, Context, Route, parse_body
from surface.web import WebResponse, json_response
from workers_ai import affinity, service

# Passed parameters the endpoint below builds itself rather than passing them as they come.
_OWN_INPUTS = frozenset(p.name for p in openai_params.PARAMS if p.built)


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


async def completions(ctx: Context) -> WebResponse:
    request = parse_completion(await parse_body(ctx), ctx)
    session = affinity.key(
        [ctx.request.headers.get(affinity.HEADER), *request.cache_keys], request.messages
    )
    asked = service.Asked.one(
        model=request.model,
        inputs=request.ai_inputs(),
        session=session,
        key_id=ctx.key_id,
        max_tokens=request.max_tokens,
        stops=request.stop,
    )
    id, created = "chatcmpl-" + os.urandom(12).hex(), int(time.time())
    if request.stream:
        # A one-shot result (JSON mode) goes out as the same chunks: the shell runs relay_whole.
        usage = request.include_usage
        return await answers.streamed(
            ctx,
            asked,
            lambda model: CompletionEncoder(
                id=id, created=created, model=model, include_usage=usage
            ),
        )
    collector = Collector(id=id)
    [answer] = await answers.whole(ctx, asked, [service.named_by_answer(collector)])
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
