"""POST /v1/responses: the OpenAI Responses API, stateless, over the same relay.

The request becomes what /v1/chat/completions would have sent: its input items are mapped
onto Chat Completions messages (``instructions`` a system message first; a ``function_call``
an assistant tool call; a ``function_call_output`` a tool message; a ``reasoning`` item the
next assistant message's reasoning), then checked by the one conversation checker; tools
(Responses' flat shape), tool_choice, ``text.format`` and ``reasoning`` become their Chat
Completions forms and go through the same checks. A response is stored unless ``store: false``
(where the deployment has a RESPONSES binding), and ``previous_response_id`` and
``item_reference`` items continue from storage: responses_stored.py.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from base import catalog
from base.errors import ApiError, clip, invalid, json_shown
from checks.chat_request import parse_max_tokens, parse_model
from checks.messages import OPENAI, parse_conversation
from checks.stops import parse_stop
from common import answers, openai_params
from common.openai_messages import parse_tool_choice, parse_tools
from common.openai_request import CompletionRequest, openai_error
from doors.responses import response_quota
from doors.responses import responses_stored as stored
from doors.responses.expansion import Budget
from doors.responses.responses_events import ResponsesEncoder
from doors.responses.responses_input import (
    flat_tool_choice,
    flat_tools,
    input_messages,
    reasoning_effort,
    refuse,
    renamed,
    renamed_tools,
    text_format,
)
from doors.responses.responses_stored import History
from surface.routing import Api, Context, Route, parse_body
from surface.web import WebResponse, json_response
from workers_ai import affinity
from workers_ai.service import Asked

PATH = "/v1/responses"

# Accepted when they ask for nothing different from what is done anyway; the value test.
_NEUTRAL: dict[str, tuple[str, Any]] = {
    "parallel_tool_calls": ("any boolean", lambda v: isinstance(v, bool)),
    "metadata": ("any object (ignored)", lambda v: isinstance(v, dict)),
    "user": ("any string; a session key, after prompt_cache_key", lambda v: isinstance(v, str)),
    "safety_identifier": (
        "any string; a session key, after prompt_cache_key",
        lambda v: isinstance(v, str),
    ),
    "prompt_cache_key": (
        "any string; the session key (x-session-affinity)",
        lambda v: isinstance(v, str),
    ),
    "prompt_cache_retention": ("any string (ignored)", lambda v: isinstance(v, str)),
    "service_tier": ('"auto" or "default"', lambda v: v in ("auto", "default")),
    "truncation": (
        '"disabled" (a conversation too long for the model is a 400)',
        lambda v: v == "disabled",
    ),
    "include": (
        "an array of strings (nothing more is included)",
        lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
    ),
    "background": ("false", lambda v: v is False),
    "top_logprobs": ("0", lambda v: v == 0 and not isinstance(v, bool)),
    "max_tool_calls": (
        "an integer (it bounds built-in tools, which this service has none of)",
        lambda v: isinstance(v, int) and not isinstance(v, bool),
    ),
    "stream_options": (
        "an object of include_obfuscation",
        lambda v: isinstance(v, dict) and set(v) <= {"include_obfuscation"},
    ),
}
_OWN = (
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "max_output_tokens",
    "temperature",
    "top_p",
    "reasoning",
    "text",
    "stream",
    "stop",
    "store",
    "previous_response_id",
    "conversation",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponsesRequest:
    completion: CompletionRequest  # what reaches the model: the same as the other OpenAI door's
    echo: dict[str, Any]  # the request's fields a Response repeats


def parse_responses(
    body: dict[str, Any], ctx: Context, history: History | None = None, *, store: bool = False
) -> ResponsesRequest:
    """`history`: the stored items it continues from and its input as stored (None: nothing
    is stored here, and references are refused); `store`: whether the answer is kept."""
    for key, value in body.items():
        if key in _OWN or value is None:
            continue
        neutral = _NEUTRAL.get(key)
        if neutral is None:
            raise refuse(clip(key), "not supported by this service's /v1/responses")
        if not neutral[1](value):
            raise refuse(key, f"this service accepts {neutral[0]}, got {json_shown(value)}")
    if body.get("conversation") is not None:
        raise refuse("conversation", "not supported: use previous_response_id")
    model = parse_model(body.get("model"), ctx.settings)
    options: dict[str, Any] = {}
    for key in ("temperature", "top_p"):
        sent = openai_params.read(key, body.get(key), model)
        if sent is not None:
            options[key] = sent
    effort = reasoning_effort(body.get("reasoning"))
    if effort is not None:
        options["reasoning_effort"] = effort
    try:
        tools = parse_tools(flat_tools(body.get("tools")))
    except ApiError as error:  # named as the flat shape has them: tools[0].name
        raise renamed_tools(error) from None
    choice = parse_tool_choice(flat_tool_choice(body.get("tool_choice")), tools)
    if tools and choice != "none":
        options["tools"] = list(tools)
        if choice is not None:
            options["tool_choice"] = choice
    response_format = text_format(body.get("text"))
    if response_format is not None:
        openai_inputs = openai_params.takes_openai_inputs(model)
        options["response_format"] = (
            response_format
            if openai_inputs
            else openai_params.native_response_format(response_format)
        )
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise invalid("stream", "must be a boolean")
    reasons = catalog.info(model).reasons  # reasoning items for one that does not: dropped
    if history is None:
        messages, names = input_messages(
            body.get("input"), body.get("instructions"), reasons=reasons
        )
    else:
        messages, names = input_messages(
            [*history.context, *history.input],
            body.get("instructions"),
            stored=len(history.context),
            reasons=reasons,
        )
    try:
        conversation = parse_conversation(
            messages, ctx.settings, dialect=OPENAI, model=model, facts=catalog.info(model)
        )
    except ApiError as error:
        raise renamed(error, names) from None
    max_tokens = parse_max_tokens("max_output_tokens", body.get("max_output_tokens"), ctx.settings)
    completion = CompletionRequest(
        model=model,
        messages=conversation.messages,
        max_tokens=max_tokens,
        options=tuple(options.items()),
        stream=stream is True,
        include_usage=False,
        json_mode=response_format is not None,
        stop=parse_stop("stop", body.get("stop")),
        # The client's own session keys, first wins (affinity.py), as on /v1/chat/completions.
        cache_keys=tuple(
            v if isinstance(v, str) else None
            for v in (body.get("prompt_cache_key"), body.get("safety_identifier"), body.get("user"))
        ),
    )
    echo = {
        "instructions": body.get("instructions"),
        "max_output_tokens": max_tokens,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": None if history is None else history.previous_response_id,
        "reasoning": {"effort": effort, "summary": None},
        "store": store,
        "temperature": options.get("temperature"),
        "text": {
            "format": body["text"]["format"]
            if isinstance(body.get("text"), dict) and body["text"].get("format")
            else {"type": "text"}
        },
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": body.get("tools") or [],
        "top_p": options.get("top_p"),
        "truncation": "disabled",
        "metadata": body.get("metadata") or {},
    }
    return ResponsesRequest(completion=completion, echo=echo)


async def responses(ctx: Context) -> WebResponse:
    body = await parse_body(ctx)
    id = stored.new_id()
    store = stored.wants_store(body, ctx)
    # What the input expands to is counted against the model's budgets as it is read.
    budget = Budget(ctx.settings, parse_model(body.get("model"), ctx.settings))
    history = await stored.history(body, ctx, id, store=store, budget=budget)
    request = parse_responses(body, ctx, history, store=store)
    completion = request.completion
    if store:
        assert history is not None  # storage is there
        stored.check_size(history, ctx)
        await response_quota.reserve(ctx, id, history, completion.max_tokens)
    asked = Asked.one(
        model=completion.model,
        inputs=completion.ai_inputs(),
        session=affinity.key(
            [ctx.request.headers.get(affinity.HEADER), *completion.cache_keys],
            completion.messages,
        ),
        key_id=ctx.key_id,
        max_tokens=completion.max_tokens,
        stops=completion.stop,
    )
    created_at = int(time.time())
    made: list[ResponsesEncoder] = []  # the one encoder, once the model that answers is known

    def encoder(model: str) -> ResponsesEncoder:
        made.append(
            ResponsesEncoder(
                id=id,
                created_at=created_at,
                model=model,  # the model that answers: a fallback, maybe
                echo=request.echo,
                stream=completion.stream,
            )
        )
        return made[-1]

    saver = None
    if store:
        assert history is not None
        saver = stored.Saver(ctx, id, created_at, history, lambda gone: made[-1].abandoned())
    if completion.stream:
        # Written when the answer has ended, by the same pipe that relays it (no round trip
        # before the last bytes); the request's context waits for the write.
        return await answers.streamed(
            ctx, asked, encoder, after=None if saver is None else saver.after
        )
    [answer] = await answers.whole(ctx, asked, [encoder])
    response = made[-1].response
    assert response is not None  # set with every ending the relay reports
    if saver is not None:
        await saver.put()
    return json_response(200, response, usage=answer.finished.usage)


RESPONSES_API = Api(
    prefix=PATH,
    routes={PATH: Route(methods={"POST": responses}, render_error=openai_error, metered=True)},
    pattern_routes={
        # Reads of a stored response reach its Durable Object: READ_RATE_LIMITER.
        stored.PATTERN: Route(
            methods={"GET": stored.read, "DELETE": stored.delete},
            render_error=openai_error,
            reads=True,
        ),
        stored.ITEMS_PATTERN: Route(
            methods={"GET": stored.input_items}, render_error=openai_error, reads=True
        ),
    },
    render_error=openai_error,
)
