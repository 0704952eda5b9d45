"""The Durable Object that holds one conversation: the JS wiring of conversation_turn's Room.

Its SQLite storage (transactionSync for what must be written together), JS timers, each
reader's IdentityTransformStream and its request's signal, and the model call (env.AI.run
through service.open_answer, aborted by a JS AbortController while it opens; then RelayPipe) are
here; what the object does with them is in conversation_turn.py, tested on the host.

Measured on workerd: when the outer client leaves, the object's response stream is not
cancelled, its request's signal is: a reader detaches when its signal aborts (or at once, when
it had aborted before the reader was attached).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import traceback
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import js
from pyodide.ffi import create_proxy, to_js
from workers import DurableObject, Response

from base import settings as config
from base.errors import ApiError
from common.conversation_store import Store, parse_event_id
from doors.conversations.conversation_room import Room
from doors.conversations.conversation_turn import Reply, Turn
from shell.bindings import (
    BUDGET_OWNER_HEADER,
    ERROR_CODE_HEADER,
    ID_HEADER,
    LOGGED_HEADER,
    MODEL_HEADER,
    OWNER_HASH_HEADER,
    OWNER_HEADER,
    WorkersAi,
    js_env,
)
from shell.budget_object import DurableBudgets
from shell.js_glue import DurableSql, js_headers, void_caller
from shell.jssource import JsByteSource
from shell.jsstream import RelayPipe
from streaming.relay import Relay, Source
from surface import daily_budget
from surface.owners import OWNED_HEADER, same_owner
from surface.request_log import HASH_KEY_VAR, RequestLog, id_hash, redacted
from surface.web import JSON_HEADERS, SSE_HEADERS
from workers_ai import service

log = logging.getLogger("conversation")


class _Timer:
    """conversation_turn's Timer: one proxy for its life, a JS timeout per start."""

    def __init__(self, then: Callable[[], None]) -> None:
        self._proxy = create_proxy(lambda *_: self._fire(then))
        self._handle: Any = None

    def _fire(self, then: Callable[[], None]) -> None:
        self._handle = None
        then()

    def start(self, ms: float) -> None:
        self.cancel()
        if self._proxy is not None:
            self._handle = js.setTimeout(self._proxy, ms)

    def cancel(self) -> None:
        if self._handle is not None:
            js.clearTimeout(self._handle)
            self._handle = None

    def release(self) -> None:
        self.cancel()
        if self._proxy is not None:
            # Not from inside its own call (a timer's callback may end the turn).
            asyncio.get_event_loop().call_soon(self._proxy.destroy)
            self._proxy = None


class _Reader:
    """One attached client: an IdentityTransformStream whose readable is its response body,
    detached when its request's signal aborts."""

    def __init__(self) -> None:
        pair = js.IdentityTransformStream.new()
        self.body = pair.readable
        self._writer = pair.writable.getWriter()
        self._write = void_caller(js.Reflect.get(self._writer, "write"), self._writer)
        self._signal: Any = None
        self._gone: Any = None
        self._closed = False

    def watch(self, signal: Any, detach: Callable[[], None]) -> None:
        if signal is None or self._closed:
            return
        if signal.aborted:  # it left while the model call was opening
            detach()
            return
        self._signal = signal
        self._gone = create_proxy(lambda *_: detach())
        signal.addEventListener("abort", self._gone)

    def send(self, data: bytes) -> None:
        if not self._closed:
            self._write(to_js(data))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        void_caller(js.Reflect.get(self._writer, "close"), self._writer)(None)
        if self._gone is not None:
            self._signal.removeEventListener("abort", self._gone)
            asyncio.get_event_loop().call_soon(self._gone.destroy)
            self._gone = None


class _Abort:
    def __init__(self) -> None:
        self._controller = js.AbortController.new()
        self.signal = self._controller.signal

    def abort(self) -> None:
        self._controller.abort()


class _Wiring:
    """conversation_turn's Wiring: the object's env and settings, for one request."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self.settings: config.Settings | None = None  # the current request's
        self.owner_hash: str | None = None  # the current message's, for the AI Gateway

    def timer(self, then: Callable[[], None]) -> _Timer:
        return _Timer(then)

    def reader(self) -> _Reader:
        return _Reader()

    def abort(self) -> _Abort:
        return _Abort()

    async def open(
        self, model: str, inputs: dict[str, Any], *, affinity: str, abort: Any
    ) -> service.Opened:
        assert self.settings is not None
        # The abort's signal stands for the client's: aborted, run() stops (ClientGone).
        return await service.open_answer(
            WorkersAi(self._env, abort.signal, owner=self.owner_hash),
            self.settings,
            model,
            inputs,
            session=affinity,
            key_id=None,
        )

    def pipe(
        self,
        source: Source,
        relay: Relay,
        on_end: Callable[[bool], None],
        out: Callable[[bytes], None],
    ) -> RelayPipe:
        assert isinstance(source, JsByteSource), source
        assert self.settings is not None
        return RelayPipe(
            source.stream, relay, None, None, on_end, out=out, window=self.settings.stream_window
        )


def _response(reply: Reply, signal: Any) -> Response:
    if reply.reader is not None:
        reader = reply.reader
        assert isinstance(reader, _Reader), reader
        if reply.detach is not None:
            reader.watch(signal, reply.detach)
        return Response(reader.body, status=200, headers=js_headers(SSE_HEADERS))
    if reply.sse is not None:
        return Response(to_js(reply.sse), status=200, headers=js_headers(SSE_HEADERS))
    body = json.dumps(reply.json, ensure_ascii=False)
    return Response(body, status=reply.status, headers=js_headers(JSON_HEADERS))


def _error(error: ApiError, model: str | None = None) -> Response:
    response = _response(
        Reply(status=error.status, json={"error": error.code, "message": error.message}), None
    )
    # The Worker's request line names the code (and the model asked) from these.
    response.js_object.headers.set(ERROR_CODE_HEADER, error.code)
    if model:
        response.js_object.headers.set(MODEL_HEADER, model)
    return response


class Conversation(DurableObject):  # type: ignore[misc]  # the SDK has no stubs
    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self._wiring = _Wiring(env)
        self._room = Room(Store(DurableSql(ctx.storage)), self._wiring)

    def _lookup(self, key: str) -> str | None:
        value = getattr(self.env, key, None)
        return value if isinstance(value, str) else None

    def _turn_logger(self, raw: Any, id: str, owner: str | None) -> Callable[[Turn], None]:
        """What writes a turn's request line when it ends (the Worker leaves it to the object,
        the one that knows the answer's model, tokens and real outcome), and adds its tokens
        to the owner's daily count when OWNER_DAILY_TOKENS is set."""
        record = RequestLog(
            request_id=str(raw.headers.get("x-request-id") or "") or "unknown",
            method="POST",
            route="/api/v1/conversations/{id}/messages",
            started=time.monotonic(),
            conversation=id_hash(id, self._lookup(HASH_KEY_VAR)),
        )
        record.status = 200
        cap = daily_budget.limit(self._lookup)
        namespace = getattr(js_env(self.env), daily_budget.BINDING, None)
        if cap is not None and namespace is not None:
            budgets = DurableBudgets(namespace, self.ctx)
            # Whose count the Worker checked (the conversation's owner, else the address).
            spender = str(raw.headers.get(BUDGET_OWNER_HEADER) or "")
            if spender:
                record.spend = lambda tokens: budgets.spend(spender, tokens)

        def ended(turn: Turn) -> None:
            record.model = turn.model
            if turn.relay is not None:
                record.relay_ended(turn.relay, client_gone=False, now=time.monotonic())
            record.write(print)

        return ended

    async def on_fetch(self, request: Any) -> Response:
        raw = request.js_object
        op = urlsplit(str(raw.url)).path.strip("/")
        id = str(raw.headers.get(ID_HEADER) or "")
        owner = str(raw.headers.get(OWNER_HEADER) or "") or None
        room = self._room
        model = None
        try:
            settings = self._wiring.settings = config.load(self._lookup)
            # The body first: after it, nothing awaits until the storage has been written, so a
            # delete cannot come in between.
            payload = json.loads(str(await raw.text())) if raw.method == "POST" else None
            if op == "create":
                history = (payload or {}).get("messages", [])
                return _response(room.create(id, history, settings, owner), None)
            # Another owner's conversation is not there for this caller: the same answer.
            if not room.exists() or not same_owner(room.store.owner, owner):
                raise ApiError(404, "not_found", "No such conversation.")
            room.recover()
            if op == "get":
                return _response(room.get(id), None)
            if op == "delete":
                room.forget()
                await self.ctx.storage.deleteAll()
                return Response(None, status=204)
            if op == "stop":
                return _response(room.stop(), None)
            if op == "branches":
                assert payload is not None
                return _response(room.keep_branches(payload.get("branches")), None)
            if op == "stream":
                return _response(
                    room.resume(parse_event_id(raw.headers.get("x-after"))), raw.signal
                )
            if op == "messages":
                assert payload is not None
                model = str(payload.get("model") or "") or None
                room.on_turn = self._turn_logger(raw, id, owner)
                # The asker's own (checked above): listed. Read before the turn, since a delete
                # may empty the storage while it opens.
                owned = room.store.owner is not None
                # The AI Gateway's metadata.owner, as the Worker made it (policy._tag_owner).
                self._wiring.owner_hash = str(raw.headers.get(OWNER_HASH_HEADER) or "") or None
                answer = _response(await room.message(id, payload, settings), raw.signal)
                answer.js_object.headers.set(LOGGED_HEADER, "1")
                if owned:
                    answer.js_object.headers.set(OWNED_HEADER, "1")
                return answer
            raise ApiError(404, "not_found", "No such operation.")
        except ApiError as error:
            return _error(error, model)
        except Exception:
            # A bug: an answer in the API's shape, and a log line with no id in it.
            hashed = id_hash(id, self._lookup(HASH_KEY_VAR))
            log.error(
                "conversation %s: %s failed: %s", hashed, op, redacted(traceback.format_exc())
            )
            return _error(ApiError(500, "internal_error", "The request could not be handled."))
