"""The Worker's side of its Durable Objects: conversations, stored responses and owners'
indexes as the core's protocols, each call a request to the object (raw JS namespaces, see
bindings.py)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import js

from base.errors import ApiError
from shell.bindings import (
    BUDGET_OWNER_HEADER,
    DELETED_TOO_HEADER,
    ERROR_CODE_HEADER,
    EXPIRES_HEADER,
    ID_HEADER,
    LOGGED_HEADER,
    MODEL_HEADER,
    OWNER_HASH_HEADER,
    OWNER_HEADER,
    REQUEST_ID_HEADER,
)
from shell.js_glue import js_object
from surface.owners import OWNED_HEADER
from surface.request_log import CURRENT
from surface.web import Forwarded, Headers, WebResponse

log = logging.getLogger("bindings")


class DurableConversations:
    """conversation_api's Conversations: each call is a request to the conversation's own
    Durable Object (its name is the id), carrying the client's signal so the object learns
    when a reader leaves; its response is sent on as it is."""

    def __init__(self, namespace: Any, signal: Any) -> None:
        self._namespace = namespace
        self._signal = signal

    async def call(
        self,
        id: str,
        op: str,
        payload: dict[str, Any] | None = None,
        *,
        after: str | None = None,
        owner: str | None = None,
    ) -> WebResponse:
        stub = self._namespace.get(self._namespace.idFromName(id))
        init: dict[str, Any] = {
            "method": "POST" if payload is not None else "GET",
            "signal": self._signal,
        }
        # The id goes in a header, not the URL: a URL can end up in an error's text, and the id
        # must never reach a log line (request_log).
        headers = js.Headers.new()
        headers.append(ID_HEADER, id)
        if payload is not None:
            init["body"] = json.dumps(payload, ensure_ascii=False)
            headers.append("content-type", "application/json")
        if after is not None:
            headers.append("x-after", after)
        if owner is not None:
            headers.append(OWNER_HEADER, owner)
        record = CURRENT.get()
        if record is not None:
            headers.append(REQUEST_ID_HEADER, record.request_id)
            if record.budget_owner is not None:
                headers.append(BUDGET_OWNER_HEADER, record.budget_owner)
            if record.owner_hash is not None:
                headers.append(OWNER_HASH_HEADER, record.owner_hash)
        init["headers"] = headers
        response = await stub.fetch(js.Request.new(f"https://conversation/{op}", js_object(init)))
        content_type = response.headers.get("content-type")
        kept: Headers = (("content-type", content_type),) if isinstance(content_type, str) else ()
        if response.headers.get(OWNED_HEADER) == "1":
            kept += ((OWNED_HEADER, "1"),)
        code = response.headers.get(ERROR_CODE_HEADER)
        model = response.headers.get(MODEL_HEADER)
        if record is not None and isinstance(model, str):
            record.model = model
        return WebResponse(
            status=int(response.status),
            headers=kept,
            body=Forwarded(response=response, logged=response.headers.get(LOGGED_HEADER) == "1"),
            code=code if isinstance(code, str) else None,
        )


class DurableResponses:
    """routing's StoredResponses: each stored response is its own Durable Object
    (response_object.py), named by its id. The id is only the object's name: never in a URL or
    a header, so it cannot reach a log line or an error's text."""

    def __init__(self, namespace: Any, ctx: Any) -> None:
        self._namespace = namespace
        self._ctx = ctx
        self._writes: set[asyncio.Future[None]] = set()

    def _fetch(
        self,
        id: str,
        op: str,
        owner: str,
        body: str | None = None,
        expires_at: float | None = None,
        deleted_too: bool = False,
    ) -> Any:
        """The object's fetch() promise, as a JS promise."""
        stub = self._namespace.get(self._namespace.idFromName(id))
        headers = js.Headers.new()
        headers.append(OWNER_HEADER, owner)
        init: dict[str, Any] = {"method": "GET" if body is None else "POST", "headers": headers}
        if body is not None:
            init["body"] = body
        if expires_at is not None:
            headers.append(EXPIRES_HEADER, repr(float(expires_at)))
        if deleted_too:
            headers.append(DELETED_TOO_HEADER, "1")
        return stub.fetch(js.Request.new(f"https://response/{op}", js_object(init)))

    async def load(self, id: str, owner: str) -> dict[str, Any] | None:
        return await self._read(self._fetch(id, "get", owner))

    async def link(
        self, id: str, owner: str, keep_until: float | None, *, deleted_too: bool = False
    ) -> dict[str, Any] | None:
        return await self._read(self._fetch(id, "link", owner, None, keep_until, deleted_too))

    async def _read(self, fetched: Any) -> dict[str, Any] | None:
        response = await fetched
        if int(response.status) == 404:
            return None
        if int(response.status) != 200:
            raise ApiError(500, "storage_failed", "The stored response could not be read.")
        return json.loads(str(await response.text()))  # type: ignore[no-any-return]

    async def delete(self, id: str, owner: str) -> bool:
        response = await self._fetch(id, "delete", owner)
        if int(response.status) not in (204, 404):
            raise ApiError(500, "storage_failed", "The stored response could not be deleted.")
        return int(response.status) == 204

    def save(self, id: str, owner: str, record: dict[str, Any], expires_at: float) -> None:
        """Started at once, in the same turn as the answer's last bytes: the object has the
        request before the client can send its next turn (a JS timer of even 1 ms lost that
        race on workerd: bench/notes/2026-11-26-stored-responses.md). waitUntil() keeps the
        request's context alive until it is written; a failure is logged, with no id."""
        body = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        promise = self._fetch(id, "put", owner, body, expires_at)
        done = js.Promise.withResolvers()
        self._ctx.waitUntil(done.promise)

        async def written() -> None:
            try:
                response = await promise
                if int(response.status) != 204:
                    log.error("a stored response was not written: %s", int(response.status))
            except Exception as exc:
                log.error("a stored response was not written: %s", exc)
            finally:
                done.resolve()

        task = asyncio.ensure_future(written())
        self._writes.add(task)  # a task nothing holds may be collected before it ends
        task.add_done_callback(self._writes.discard)

    async def put(self, id: str, owner: str, record: dict[str, Any], expires_at: float) -> None:
        body = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        response = await self._fetch(id, "put", owner, body, expires_at)
        if int(response.status) != 204:
            raise ApiError(500, "storage_failed", "The response could not be stored.")


class DurableOwnerIndexes:
    """routing.OwnerIndexes: one Durable Object per owner (its name is the owner), whose JSON
    answer comes back as Python; anything but a 200 raises."""

    def __init__(self, namespace: Any) -> None:
        self._namespace = namespace

    async def call(self, owner: str, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        stub = self._namespace.get(self._namespace.idFromName(owner))
        init = {"method": "POST", "body": json.dumps(payload, ensure_ascii=False)}
        response = await stub.fetch(js.Request.new(f"https://owner/{op}", js_object(init)))
        text = str(await response.text())
        if int(response.status) != 200:
            raise RuntimeError(f"the owner index answered {int(response.status)}")
        answer = json.loads(text)
        assert isinstance(answer, dict), answer
        return answer
