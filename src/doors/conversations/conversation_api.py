"""Durable conversations, the Worker's side: the routes, their checks, and the call to the
conversation's own Durable Object (conversation_object.py), whose answer is sent on as it is.

The id is 128 random bits: knowing it is the capability to read the conversation. A message
is checked here with the same rules as /api/v1/chat before it reaches the object.
"""

from __future__ import annotations

import re
import secrets
from typing import Any
from urllib.parse import parse_qs, urlsplit

from checks.chat_request import (
    CHAT_FIELDS,
    check_content_type,
    parse_chat,
    parse_json,
    parse_model,
    read_body,
    reject_unknown,
    well_formed_json,
)
from checks.messages import CHAT, parse_conversation
from doors.conversations.conversation_store import parse_event_id
from surface.errors import ApiError
from surface.guard import PAGE_OR_KEY
from surface.routing import Api, Context, Conversations, Route, app_error, parse_body
from surface.web import WebResponse
from workers_ai import catalog

PREFIX = "/api/v1/conversations"
_ID = "[0-9a-f]{32}"
_PATH = re.compile(PREFIX + r"/(" + _ID + r")(?:/(messages|stream|stop))?")
MESSAGE_FIELDS = ("content", *(f for f in CHAT_FIELDS if f != "messages"))
HISTORY_FIELDS = ("messages", "model")


def new_id() -> str:
    return secrets.token_hex(16)


def _target(ctx: Context) -> tuple[Conversations, str]:
    if ctx.conversations is None:
        raise ApiError(
            501,
            "conversations_unavailable",
            "Durable conversations are not configured on this deployment (no CONVERSATIONS binding).",
        )
    match = _PATH.fullmatch(ctx.request.path)
    if match is None:  # the route patterns only let well-formed ids through
        raise ApiError(404, "not_found", "No such conversation.")
    return ctx.conversations, match.group(1)


def parse_message(body: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """{"content", "model"?, "max_tokens"?, ...}: checked as /api/v1/chat checks a turn."""
    reject_unknown(body, MESSAGE_FIELDS)
    if "content" not in body:
        raise ApiError(400, "invalid_field", "content: is required", param="content")
    turn = {k: v for k, v in body.items() if k != "content"}
    try:
        request = parse_chat(
            {**turn, "messages": [{"role": "user", "content": body["content"]}]}, ctx.settings
        )
    except ApiError as error:  # the message is ours; name the field the client sent
        if error.param and error.param.startswith("messages[0].content"):
            where = "content" + error.param.removeprefix("messages[0].content")
            raise ApiError(
                error.status,
                error.code,
                where + error.message.removeprefix(error.param),
                param=where,
            ) from None
        raise
    payload: dict[str, Any] = {
        "content": request.messages[0]["content"],
        "model": request.model,
        "max_tokens": request.max_tokens,
    }
    for key in ("temperature", "reasoning_effort"):
        if getattr(request, key) is not None:
            payload[key] = getattr(request, key)
    if request.stop:
        payload["stop"] = list(request.stop)
    # What the object stores is what the model is sent: no lone surrogate (UTF-8 has none).
    return well_formed_json(payload)  # type: ignore[no-any-return]


def parse_history(body: dict[str, Any], ctx: Context) -> dict[str, Any] | None:
    """{"messages"?, "model"?}: the history a new conversation starts from (a fork of another,
    edited or trimmed by the client), checked as /api/v1/chat checks its messages, for `model`
    (images only for a model that reads them). No messages (or an empty list): an empty
    conversation, as `{}` and `{"model"}` from clients that create one first (issue 34); the
    model is checked, and each message still names its own."""
    reject_unknown(body, HISTORY_FIELDS)
    model = parse_model(body.get("model"), ctx.settings)
    if body.get("messages") in (None, []):
        return None
    conversation = parse_conversation(
        body.get("messages"), ctx.settings, dialect=CHAT, model=model, facts=catalog.info(model)
    )
    return {"messages": well_formed_json(list(conversation.messages))}


async def create(ctx: Context) -> WebResponse:
    if ctx.conversations is None:
        raise ApiError(
            501,
            "conversations_unavailable",
            "Durable conversations are not configured on this deployment (no CONVERSATIONS binding).",
        )
    # An empty body: an empty conversation, as before; else it starts from a history.
    request = ctx.request
    body = await read_body(
        request.body, request.headers.get("content-length"), ctx.settings.max_body_bytes
    )
    history = None
    if body:
        check_content_type(request.headers.get("content-type"))
        history = parse_history(parse_json(body), ctx)
    return await ctx.conversations.call(new_id(), "create", history)


async def read(ctx: Context) -> WebResponse:
    conversations, id = _target(ctx)
    return await conversations.call(id, "get")


async def delete(ctx: Context) -> WebResponse:
    conversations, id = _target(ctx)
    return await conversations.call(id, "delete")


async def message(ctx: Context) -> WebResponse:
    conversations, id = _target(ctx)
    return await conversations.call(id, "messages", parse_message(await parse_body(ctx), ctx))


async def stream(ctx: Context) -> WebResponse:
    conversations, id = _target(ctx)
    request = ctx.request
    header = request.headers.get("last-event-id")
    query = None if header else _query(request.url, "after")
    after: str | None = None
    if header:
        after = _event_id("Last-Event-ID", header)
    elif query is not None:
        after = _event_id("after", query)
    return await conversations.call(id, "stream", after=after)


def _event_id(field: str, value: str) -> str:
    """The event id a reader resumes after, checked here: only `<turn>:<seq>` goes on to the
    conversation's object (in a header), never what the client sent."""
    mark = parse_event_id(value)
    if mark is None:
        raise ApiError(
            400,
            "invalid_field",
            f"{field}: must be the id of an event of this conversation, <turn>:<seq> (e.g. 2:17)",
            param=field,
        )
    return f"{mark[0]}:{mark[1]}"


async def stop(ctx: Context) -> WebResponse:
    conversations, id = _target(ctx)
    return await conversations.call(id, "stop")


def _query(url: str, name: str) -> str | None:
    values = parse_qs(urlsplit(url).query).get(name)
    return values[0] if values else None


CONVERSATIONS_API = Api(
    prefix=PREFIX,
    routes={
        PREFIX: Route(
            methods={"POST": create}, render_error=app_error, access=PAGE_OR_KEY, metered=True
        )
    },
    pattern_routes={
        # Reads reach the conversation's Durable Object: rate limited on READ_RATE_LIMITER.
        f"{PREFIX}/{_ID}": Route(
            methods={"GET": read, "DELETE": delete},
            render_error=app_error,
            access=PAGE_OR_KEY,
            reads=True,
        ),
        # It calls the model: rate limited like /api/v1/chat.
        f"{PREFIX}/{_ID}/messages": Route(
            methods={"POST": message}, render_error=app_error, access=PAGE_OR_KEY, metered=True
        ),
        f"{PREFIX}/{_ID}/stream": Route(
            methods={"GET": stream}, render_error=app_error, access=PAGE_OR_KEY, reads=True
        ),
        f"{PREFIX}/{_ID}/stop": Route(
            methods={"POST": stop}, render_error=app_error, access=PAGE_OR_KEY, reads=True
        ),
    },
    render_error=app_error,
)
