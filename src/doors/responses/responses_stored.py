"""Stored Responses, the Worker's side: which responses a request continues from
(``previous_response_id``, ``item_reference`` items), the record written when the answer
ends, and the routes that read it (GET, DELETE, input_items).

Each stored response is its own Durable Object (shell/response_object.py), named by its id:
``resp_`` and 128 random bits. It belongs to whoever made it, as a durable conversation does
(owners.request_owner: the API key's id, else the owner token's keyed hash; with neither, to
no one, and then the id is the capability). Another owner reads a 404, the same as for an id
never made, on GET, DELETE, input_items, previous_response_id and item_reference alike. An
item id names its response (``msg_<32 hex>_<n>``), so an item_reference finds the object that
holds it.

What a stored response keeps: the Response object, its input items (ids given to those that
had none, item references resolved), the ids of the responses it continues (``chain``, oldest
first) and the size of the whole conversation through it (``size``): never a copy of what it
continues, which a continuation reads link by link, each once, after the size in the last link
has been counted against the request's budget (expansion.py). Records written before this kept
``context``, a copy of the items before them; they still read. The conversation's size is
bounded as a durable conversation's (MAX_CONVERSATION_BYTES, MAX_CONVERSATION_IMAGES), checked
before the model is called.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from base.errors import ApiError, invalid
from doors.responses.expansion import Budget, Size, drops, measure, total
from doors.responses.responses_input import STATELESS
from surface.owners import request_owner
from surface.routing import Context, StoredResponses
from surface.web import WebResponse, json_response

_HEX = "[0-9a-f]{32}"
RESPONSE_ID = re.compile("resp_(" + _HEX + ")")
ITEM_ID = re.compile("[a-z]+_(" + _HEX + ")_i?[0-9]+")
PATTERN = "/v1/responses/resp_" + _HEX
ITEMS_PATTERN = PATTERN + "/input_items"
_PREFIXES = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "reasoning": "rs",
}
# Room kept for the answer when a history is checked against MAX_CONVERSATION_BYTES.
ANSWER_RESERVE = 256 * 1024


def new_id() -> str:
    return "resp_" + secrets.token_hex(16)


def owner(ctx: Context) -> str:
    """The request's owner as a stored response keeps it: "" for none."""
    return request_owner(ctx) or ""


def store_of(ctx: Context) -> StoredResponses | None:
    return ctx.responses


def wants_store(body: dict[str, Any], ctx: Context) -> bool:
    """store defaults to true, as OpenAI's does, where there is storage; else to false."""
    value = body.get("store")
    if value is not None and not isinstance(value, bool):
        raise invalid("store", "must be a boolean")
    if store_of(ctx) is None:
        if value is True:
            raise _refuse("store", f"true is not supported: {STATELESS} (store: false)")
        return False
    return value is not False


def _refuse(name: str, why: str) -> ApiError:
    return ApiError(400, "unsupported_parameter", f"{name}: {why}", param=name)


@dataclass(frozen=True, slots=True, kw_only=True)
class History:
    """The items the model sees before this request's own (`context`: read from the chain of
    responses it continues) and the request's input items as stored (`input`: ids given,
    references resolved); `chain`, the ids of the responses it continues, oldest first;
    `size`, what the conversation holds through `input` (expansion.py)."""

    context: list[dict[str, Any]]
    input: list[dict[str, Any]]
    previous_response_id: str | None
    chain: list[str] = field(default_factory=list)
    size: Size = field(default_factory=Size)


def _not_found(param: str, what: str) -> ApiError:
    return ApiError(
        404,
        "not_found",
        f"{param}: {what} not found (never stored, deleted, expired, or stored by another API key or owner token)",
        param=param,
    )


def _refers(value: object) -> bool:
    return isinstance(value, list) and any(
        isinstance(item, dict) and item.get("type") == "item_reference" for item in value
    )


def _own_items(record: dict[str, Any]) -> list[Any]:
    return [*record["input"], *record["response"]["output"]]


def _record_size(record: dict[str, Any]) -> Size:
    """What a stored conversation holds through this response: its own count, or (a record
    written before responses referred to what they continue) a count of what it copied."""
    size = Size.from_json(record.get("size"))
    if size is not None:
        return size
    return total([*record.get("context", []), *_own_items(record)])


# Links of a chain read at once (a chain is at most MAX_MESSAGES links).
_LINKS_AT_ONCE = 32


async def _chain(
    storage: StoredResponses, head: dict[str, Any], who: str, keep_until: float | None
) -> list[Any]:
    """The items of a chain, oldest first: each link read once. A record written before
    responses referred holds its own copy of everything before it (`context`)."""
    ids = head.get("chain", [])
    links: list[dict[str, Any] | None] = []
    for start in range(0, len(ids), _LINKS_AT_ONCE):
        batch = ids[start : start + _LINKS_AT_ONCE]
        links += await asyncio.gather(
            *(storage.link(i, who, keep_until, deleted_too=True) for i in batch)
        )
    items: list[Any] = []
    for link in [*links, head]:
        if link is None:
            raise ApiError(
                404,
                "not_found",
                "previous_response_id: a response this one continues is no longer stored "
                "(expired); start again from its items",
                param="previous_response_id",
            )
        if "context" in link:
            items = list(link["context"])
        items += _own_items(link)
    return items


async def history(
    body: dict[str, Any], ctx: Context, id: str, *, store: bool, budget: Budget
) -> History | None:
    """The stored items a request continues from, read before the model is called and counted
    as they are read (`budget` refuses before anything is joined); None when nothing is stored
    or read (store: false and no reference: the stateless path, untouched; no storage at all:
    parse_responses refuses references as before)."""
    storage = store_of(ctx)
    previous = body.get("previous_response_id")
    if storage is None:
        if previous is not None:
            raise _refuse("previous_response_id", f"not supported: {STATELESS}")
        return None
    if not store and previous is None and not _refers(body.get("input")):
        return None
    value = body.get("input")
    if isinstance(value, str):
        value = [{"role": "user", "content": value}]
    if value is None:
        raise invalid("input", "is required")
    if not isinstance(value, list) or not value:
        raise invalid("input", "must be a string or a non-empty array of input items")
    who = owner(ctx)
    expires_at = time.time() + ctx.settings.responses_ttl_days * 86400
    # What this response continues stays as long as this one may (it is read from there).
    keep_until = expires_at if store else None
    context: list[dict[str, Any]] = []
    chain: list[str] = []
    before = Size()
    if previous is not None:
        if not isinstance(previous, str) or not RESPONSE_ID.fullmatch(previous):
            raise invalid("previous_response_id", "must be a response id: resp_ and 32 hex digits")
        head = await storage.link(previous, who, keep_until)
        if head is None:
            raise _not_found("previous_response_id", "the previous response was")
        # The whole chain's size is in its last link: counted before any other link is read.
        before = _record_size(head)
        links = len(head.get("chain", [])) + 1
        if links > ctx.settings.max_messages:  # each link a read: bounded even if its items are not
            budget.refuse_links(links)
        budget.add("previous_response_id", budget.seen(before))
        context = [
            item
            for item in await _chain(storage, head, who, keep_until)
            if not drops(item, reasons=budget.reasons)
        ]
        chain = [*head.get("chain", []), previous]
    records: dict[str, dict[str, Any] | None] = {}
    sizes: dict[str, Size] = {}

    async def record(response_id: str) -> dict[str, Any] | None:
        if response_id not in records:
            records[response_id] = await storage.load(response_id, who)
        return records[response_id]

    out: list[dict[str, Any]] = []
    hexid = id.removeprefix("resp_")
    for i, item in enumerate(value):
        where = f"input[{i}]"
        if isinstance(item, dict) and item.get("type") == "item_reference":
            ref, item = await _referenced(where, item, record)
            size = sizes.get(ref)
            if size is None:
                size = sizes[ref] = measure(item)
            # Counted every time it appears, before it joins anything.
            budget.add(where, size, dropped=drops(item, reasons=budget.reasons))
        else:
            budget.add(where, measure(item), dropped=drops(item, reasons=budget.reasons))
            if isinstance(item, dict):
                kind = item.get("type", "message" if "role" in item else None)
                item = dict(item)
                if kind == "message":
                    item["type"] = "message"  # as OpenAI lists it (an easy message has none)
                if kind == "message" and isinstance(item.get("content"), str):
                    part = "output_text" if item.get("role") == "assistant" else "input_text"
                    item["content"] = [{"type": part, "text": item["content"]}]
                if (
                    isinstance(kind, str)
                    and kind in _PREFIXES
                    and not isinstance(item.get("id"), str)
                ):
                    item["id"] = f"{_PREFIXES[kind]}_{hexid}_i{i}"
        out.append(item)
    return History(
        context=context,
        input=out,
        previous_response_id=previous,
        chain=chain,
        size=before + total(out),
    )


async def _referenced(
    where: str, item: dict[str, Any], record: Callable[[str], Any]
) -> tuple[str, dict[str, Any]]:
    if set(item) - {"type", "id"}:
        raise invalid(where, 'an item_reference has only "type" and "id"')
    ref = item.get("id")
    match = ITEM_ID.fullmatch(ref) if isinstance(ref, str) else None
    if match is None or not isinstance(ref, str):
        raise invalid(f"{where}.id", "must be the id of a stored item, e.g. msg_<32 hex>_0")
    found = await record("resp_" + match.group(1))
    if found is not None:
        for stored in (*found["response"]["output"], *found["input"], *found.get("context", [])):
            if isinstance(stored, dict) and stored.get("id") == ref:
                return ref, dict(stored)
    raise _not_found(f"{where}.id", "the item")


def check_size(history: History, ctx: Context) -> None:
    """What would be stored, against the durable conversations' limits: before the model."""
    size = history.size.bytes
    limit = ctx.settings.max_conversation_bytes
    param = "input" if history.previous_response_id is None else "previous_response_id"
    if size + ANSWER_RESERVE > limit:
        raise ApiError(
            413,
            "stored_response_too_large",
            f"{param}: these items ({size} bytes) and room for the answer would pass the limit of "
            f"{limit} bytes a stored response may hold (MAX_CONVERSATION_BYTES); send store: false, "
            "or start again with fewer items",
            param=param,
        )
    images = history.size.images
    if images > ctx.settings.max_conversation_images:
        raise ApiError(
            413,
            "stored_response_too_large",
            f"{param}: these items hold {images} images, more than the "
            f"{ctx.settings.max_conversation_images} a stored response may hold "
            "(MAX_CONVERSATION_IMAGES); send store: false, or start again with fewer images",
            param=param,
        )


class Saver:
    """The record of one response, written when its answer has ended: `after(gone)` for a
    stream (started in the pipe's last turn, not awaited), `await put()` for a whole answer
    (stored before it is sent, so the client's next request finds it)."""

    def __init__(
        self,
        ctx: Context,
        id: str,
        created_at: int,
        history: History,
        response: Callable[[bool], Any],
    ) -> None:
        store = store_of(ctx)
        assert store is not None
        self._store, self._id, self._owner = store, id, owner(ctx)
        self._expires_at = created_at + ctx.settings.responses_ttl_days * 86400
        self._history, self._response = history, response

    def _record(self, gone: bool) -> dict[str, Any]:
        """Its own items and the ids of what it continues: never a copy of them."""
        response = self._response(gone)
        output = response.get("output") if isinstance(response, dict) else None
        size = self._history.size + total(output if isinstance(output, list) else [])
        return {
            "response": response,
            "input": self._history.input,
            "previous": self._history.previous_response_id,
            "chain": self._history.chain,
            "size": size.as_json(),
        }

    def after(self, gone: bool) -> None:
        self._store.save(self._id, self._owner, self._record(gone), self._expires_at)

    async def put(self) -> None:
        await self._store.put(self._id, self._owner, self._record(False), self._expires_at)


def _target(ctx: Context) -> tuple[StoredResponses, str]:
    store = store_of(ctx)
    match = RESPONSE_ID.search(ctx.request.path)
    if store is None or match is None:
        raise ApiError(404, "not_found", "No such response: this deployment stores none.")
    return store, match.group(0)


async def read(ctx: Context) -> WebResponse:
    store, id = _target(ctx)
    found = await store.load(id, owner(ctx))
    if found is None:
        raise _not_found("response_id", "the response was")
    return json_response(200, found["response"])


async def delete(ctx: Context) -> WebResponse:
    store, id = _target(ctx)
    who = owner(ctx)
    if not await store.delete(id, who):
        raise _not_found("response_id", "the response was")
    if who and ctx.owner_indexes is not None:
        await ctx.owner_indexes.call(who, "responses_release", {"id": id})
    return json_response(200, {"id": id, "object": "response.deleted", "deleted": True})


def _query(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}


def page(items: list[dict[str, Any]], query: dict[str, str]) -> dict[str, Any]:
    """OpenAI's list of input items: `order` (desc by default), `limit` 1-100 (20), `after`."""
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise invalid("order", 'must be "asc" or "desc"')
    raw = query.get("limit", "20")
    if not raw.isdigit() or not 1 <= int(raw) <= 100:
        raise invalid("limit", "must be an integer from 1 to 100")
    ordered = items if order == "asc" else items[::-1]
    after = query.get("after")
    if after is not None:
        ids = [item.get("id") for item in ordered]
        if after not in ids:
            raise invalid("after", "must be the id of an item of this list")
        ordered = ordered[ids.index(after) + 1 :]
    data = ordered[: int(raw)]
    return {
        "object": "list",
        "data": data,
        "first_id": data[0].get("id") if data else None,
        "last_id": data[-1].get("id") if data else None,
        "has_more": len(ordered) > len(data),
    }


async def input_items(ctx: Context) -> WebResponse:
    store, id = _target(ctx)
    query = _query(ctx.request.url)
    found = await store.load(id, owner(ctx))
    if found is None:
        raise _not_found("response_id", "the response was")
    return json_response(200, page(found["input"], query))
