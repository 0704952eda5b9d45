"""Durable conversations, the Worker's side: the routes, their checks, and the call to the
conversation's own Durable Object (conversation_object.py), whose answer is sent on as it is.

The id is 128 random bits. A conversation made by an owner (an API key, or an owner token:
owners.py) is that owner's alone: its object answers anyone else 404, as for an id that does
not exist, and the owner's index lists it. One made by nobody is found by its id alone, as
before. A message is checked here with the same rules as /api/v1/chat before it reaches the
object.

The index is written after the conversation's object has answered, and a failure to write it
is logged and goes no further: the conversation, and a turn's model call, are the object's
alone; a later turn puts a conversation the index missed back on its list.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from base import catalog
from base.errors import ApiError, invalid
from base.text import well_formed_json
from checks.chat_request import CHAT_FIELDS, parse_chat, parse_model, reject_unknown
from checks.messages import CHAT, parse_conversation
from common.answer_details import DETAILS_FIELD, with_details
from common.conversation_store import parse_event_id
from surface import owners
from surface.body import check_content_type, parse_json, read_body
from surface.guard import PAGE_OR_KEY
from surface.routing import Api, Context, Conversations, Route, app_error, parse_body
from surface.web import WebResponse, json_response

PREFIX = "/api/v1/conversations"
_ID = "[0-9a-f]{32}"
_PATH = re.compile(PREFIX + r"/(" + _ID + r")(?:/(messages|stream|stop|branches))?")
# A client's versions of a conversation (edits and regenerations it keeps), as JSON.
MAX_BRANCHES_BYTES = 1024 * 1024
MESSAGE_FIELDS = ("content", *(f for f in CHAT_FIELDS if f != "messages"))
HISTORY_FIELDS = ("messages", "model", DETAILS_FIELD)
_NO_INDEX = "Listing conversations is not configured on this deployment (no OWNERS binding)."

log = logging.getLogger("conversations")


def new_id() -> str:
    return secrets.token_hex(16)


def _target(ctx: Context) -> tuple[Conversations, str, str | None]:
    """The binding, the conversation's id and who asks for it."""
    if ctx.conversations is None:
        raise ApiError(
            501,
            "conversations_unavailable",
            "Durable conversations are not configured on this deployment (no CONVERSATIONS binding).",
        )
    match = _PATH.fullmatch(ctx.request.path)
    if match is None:  # the route patterns only let well-formed ids through
        raise ApiError(404, "not_found", "No such conversation.")
    return ctx.conversations, match.group(1), owners.request_owner(ctx)


async def _index(ctx: Context, owner: str | None, op: str, payload: dict[str, Any]) -> None:
    """Best effort: the conversation's object is the truth (see the module's doc)."""
    if owner is None or ctx.owner_indexes is None:
        return
    try:
        await ctx.owner_indexes.call(owner, op, payload)
    except Exception as exc:  # logged without the owner or the id
        log.error("conversation index: %s failed: %s", op, type(exc).__name__)


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
    messages = with_details(list(conversation.messages), body.get(DETAILS_FIELD))
    return {"messages": well_formed_json(messages)}


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
    owner = owners.request_owner(ctx)
    if body:
        check_content_type(request.headers.get("content-type"))
        history = parse_history(parse_json(body), ctx)
    id = new_id()
    response = await ctx.conversations.call(id, "create", history, owner=owner)
    if response.status == 201:
        title = owners.first_title(history["messages"]) if history else None
        await _index(ctx, owner, "touch", {"id": id, "now": time.time(), "title": title})
    return response


async def listing(ctx: Context) -> WebResponse:
    """GET /api/v1/conversations: the owner's, newest first (the latest turn), by pages."""
    if ctx.conversations is None or ctx.owner_indexes is None:
        raise ApiError(501, "conversations_unavailable", _NO_INDEX)
    query = owners.list_query(parse_qs(urlsplit(ctx.request.url).query))
    owner = owners.request_owner(ctx)
    if owner is None:
        raise ApiError(
            401,
            "owner_required",
            "Only an owner's conversations are listed: send an API key"
            " (Authorization: Bearer <key>) or an owner token (X-Owner-Token).",
        )
    try:
        page = await ctx.owner_indexes.call(owner, "list", query)
    except Exception as exc:
        log.error("conversation index: list failed: %s", type(exc).__name__)
        raise ApiError(
            503, "index_unavailable", "The list of conversations could not be read; try again."
        ) from None
    return json_response(200, page)


async def read(ctx: Context) -> WebResponse:
    conversations, id, owner = _target(ctx)
    return await conversations.call(id, "get", owner=owner)


async def delete(ctx: Context) -> WebResponse:
    conversations, id, owner = _target(ctx)
    response = await conversations.call(id, "delete", owner=owner)
    if response.status in (204, 404):  # 404: gone already, or a stale entry of the list
        await _index(ctx, owner, "remove", {"id": id})
    return response


async def message(ctx: Context) -> WebResponse:
    conversations, id, owner = _target(ctx)
    payload = parse_message(await parse_body(ctx), ctx)
    owned, response = owners.owned_answer(
        await conversations.call(id, "messages", payload, owner=owner)
    )
    # The turn has begun: the conversation moves to the top of its owner's list. One that has
    # no owner is answered to anyone with its id, and listed nowhere.
    if response.status == 200 and owned:
        title = owners.title_of(payload["content"])
        await _index(ctx, owner, "touch", {"id": id, "now": time.time(), "title": title})
    return response


async def stream(ctx: Context) -> WebResponse:
    conversations, id, owner = _target(ctx)
    request = ctx.request
    header = request.headers.get("last-event-id")
    query = None if header else _query(request.url, "after")
    after: str | None = None
    if header:
        after = _event_id("Last-Event-ID", header)
    elif query is not None:
        after = _event_id("after", query)
    return await conversations.call(id, "stream", after=after, owner=owner)


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


async def branches(ctx: Context) -> WebResponse:
    """POST .../branches {"branches": object|null}: the client's versions of the conversation,
    kept beside its history and given back by GET (docs/API.md, "Branches"); null removes them."""
    conversations, id, owner = _target(ctx)
    body = await parse_body(ctx)
    reject_unknown(body, ("branches",))
    value = body.get("branches")
    if value is not None and not isinstance(value, dict):
        raise invalid("branches", "must be an object or null")
    size = len(json.dumps(value, ensure_ascii=False).encode())
    if size > MAX_BRANCHES_BYTES:
        raise ApiError(
            413,
            "branches_too_large",
            f"branches: {size} bytes of JSON exceed the limit of {MAX_BRANCHES_BYTES}",
            param="branches",
        )
    return await conversations.call(id, "branches", {"branches": value}, owner=owner)


async def stop(ctx: Context) -> WebResponse:
    conversations, id, owner = _target(ctx)
    return await conversations.call(id, "stop", owner=owner)


def _query(url: str, name: str) -> str | None:
    values = parse_qs(urlsplit(url).query).get(name)
    return values[0] if values else None


CONVERSATIONS_API = Api(
    prefix=PREFIX,
    routes={
        # A create is rate limited like a chat; the list is a read (READ_RATE_LIMITER).
        PREFIX: Route(
            methods={"POST": create, "GET": listing},
            render_error=app_error,
            access=PAGE_OR_KEY,
            metered=True,
            read_methods=("GET",),
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
        f"{PREFIX}/{_ID}/branches": Route(
            methods={"POST": branches}, render_error=app_error, access=PAGE_OR_KEY, reads=True
        ),
    },
    render_error=app_error,
)
