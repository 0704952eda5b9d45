"""The Durable Object that holds one conversation: its messages and each turn's events in its
SQLite storage, and the turn being generated, with the readers attached to it.

A turn runs here, not in the request that asked for it: env.AI.run from the object, re-framed
by the same relay (RelayPipe, its bytes handed to _Turn.out instead of a body of its own),
every event numbered, then held for a short batch: the batch is stored in one INSERT, then
written to each attached reader, so no reader ever holds an event that is not stored (and one
that resumes is attached before the next batch goes out). A reader that leaves (its
request's signal aborts: measured on workerd, the object's response stream is not cancelled
when the outer client leaves, its request signal is) detaches; when none has been attached
for RESUME_GRACE_SECONDS the turn is stopped. A reader that comes back gets the stored events
after its Last-Event-ID and is attached in the same synchronous step, so none is missed or
sent twice.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

import js
from pyodide.ffi import create_proxy, to_js
from workers import DurableObject, Response

import app
import catalog
import settings as config
from bindings import WorkersAi
from chat_events import ChatEncoder
from chat_request import ChatRequest
from conversation import CHAT, parse_conversation
from conversation_store import Event, Store, parse_event_id, split_events
from errors import ApiError
from js_glue import void_caller
from jsstream import JsByteSource, RelayPipe
from relay import Failed, Finished, OneShot, relay_whole
from think_tags import TEXT, Part
from web import JSON_HEADERS, SSE_HEADERS, WebRequest

log = logging.getLogger("conversation")

# A turn's events are stored and sent in batches: at most FLUSH_EVENTS at once, none held
# longer than FLUSH_MS, the first after a quiet spell not at all
# (bench/notes/2026-11-24-durable-conversations.md).
FLUSH_EVENTS = 64
FLUSH_MS = 20


class _Sql:
    """ctx.storage.sql as conversation_store's Sql: values in and rows out as Python."""

    def __init__(self, sql: Any) -> None:
        self._sql = sql

    def rows(self, query: str, *params: object) -> list[dict[str, Any]]:
        cursor = self._sql.exec(query, *params)
        rows = cursor.toArray().to_py()
        return [dict(row) for row in rows]

    def run(self, query: str, *params: object) -> None:
        self._sql.exec(query, *params)


class _Recorder(ChatEncoder):
    """Our SSE events, and the answer kept whole for the conversation's history."""

    __slots__ = ("ending", "reasoning", "text")

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.ending: Finished | Failed | None = None

    def parts(self, parts: list[Part]) -> bytes:
        for kind, text in parts:
            (self.text if kind == TEXT else self.reasoning).append(text)
        return super().parts(parts)

    def finished(self, stop: Finished) -> bytes:
        self.ending = stop
        return super().finished(stop)

    def failed(self, failure: Failed) -> bytes:
        self.ending = failure
        return super().failed(failure)


class _Reader:
    """One attached client: an IdentityTransformStream whose readable is its response body."""

    def __init__(self) -> None:
        pair = js.IdentityTransformStream.new()
        self.body = pair.readable
        self._writer = pair.writable.getWriter()
        self._write = void_caller(js.Reflect.get(self._writer, "write"), self._writer)

    def send(self, data: bytes) -> None:
        self._write(to_js(data))

    def close(self) -> None:
        void_caller(js.Reflect.get(self._writer, "close"), self._writer)(None)


class _Turn:
    def __init__(
        self, store: Store, number: int, grace: float, on_done: Callable[[_Turn], None]
    ) -> None:
        self.store = store
        self.number = number
        self.seq = 0
        self.grace = grace
        self.readers: dict[int, _Reader] = {}
        self.pipe: RelayPipe | None = None
        self.encoder = _Recorder()
        self._on_done = on_done
        self._next_reader = 0
        self._timer: Any = None
        self._expire = create_proxy(self._grace_over)
        # Events held for one batch: stored by one INSERT, then sent, never sent unstored.
        self._pending: list[Event] = []
        self._wire: list[bytes] = []
        self._flush_timer: Any = None
        self._flush_later = create_proxy(self._flush_due)
        self._proxies: list[Any] = [self._expire, self._flush_later]
        self.deleted = False  # the conversation is being deleted: nothing more is stored

    def out(self, data: bytes) -> None:
        """The relay's bytes: each event numbered and held for a batch, which is stored in one
        INSERT and then sent to every reader. The first events after a quiet spell go at once
        and open a window of FLUSH_MS; what comes within it waits for the window's end."""
        for part in split_events(data):
            if part.startswith(b":"):  # a keep-alive comment: for whoever is attached then
                self._wire.append(part)
            else:
                self.seq += 1
                event = Event(turn=self.number, seq=self.seq, data=part)
                self._pending.append(event)
                self._wire.append(event.wire())
        if self._flush_timer is None:
            self.flush()
            self._flush_timer = js.setTimeout(self._flush_later, FLUSH_MS)
        elif len(self._pending) >= FLUSH_EVENTS:
            self.flush()

    def flush(self) -> None:
        """Stores the held events, then sends them: a reader is never sent an event that is
        not stored (one that resumes flushes first, so its replay has everything at once)."""
        if self._pending:
            if not self.deleted:
                self.store.append_all(self._pending)
            self._pending = []
        if self._wire:
            wire = b"".join(self._wire)
            self._wire = []
            for reader in self.readers.values():
                reader.send(wire)

    def _flush_due(self, *_: Any) -> None:
        """The window's end: what came within it goes, and opens the next; else it is quiet."""
        self._flush_timer = None
        if self._wire:
            self.flush()
            self._flush_timer = js.setTimeout(self._flush_later, FLUSH_MS)

    def attach(self, reader: _Reader, signal: Any) -> None:
        self._next_reader += 1
        key = self._next_reader
        self.readers[key] = reader
        if self._timer is not None:
            js.clearTimeout(self._timer)
            self._timer = None
        if signal is not None:
            gone = create_proxy(lambda *_: self.detach(key))
            self._proxies.append(gone)
            signal.addEventListener("abort", gone)

    def detach(self, key: int) -> None:
        reader = self.readers.pop(key, None)
        if reader is None:
            return
        reader.close()
        if not self.readers and self.pipe is not None and self._timer is None:
            if self.grace <= 0:
                self.pipe.stop()
            else:
                self._timer = js.setTimeout(self._expire, self.grace * 1000)

    def _grace_over(self, *_: Any) -> None:
        self._timer = None
        if not self.readers and self.pipe is not None:
            log.info("no reader for %gs: turn %d stopped", self.grace, self.number)
            self.pipe.stop()

    def ended(self, _gone: bool) -> None:
        if self._flush_timer is not None:
            js.clearTimeout(self._flush_timer)
            self._flush_timer = None
        self.flush()
        if self._timer is not None:
            js.clearTimeout(self._timer)
            self._timer = None
        for reader in self.readers.values():
            reader.close()
        self.readers.clear()
        for proxy in self._proxies:
            proxy.destroy()
        self._proxies = []
        self._on_done(self)


def _json(status: int, value: object) -> Response:
    headers = js.Headers.new()
    for name, header in JSON_HEADERS:
        headers.append(name, header)
    return Response(json.dumps(value, ensure_ascii=False), status=status, headers=headers)


def _error(error: ApiError) -> Response:
    return _json(error.status, {"error": error.code, "message": error.message})


def _sse(body: Any) -> Response:
    headers = js.Headers.new()
    for name, value in SSE_HEADERS:
        headers.append(name, value)
    return Response(body, status=200, headers=headers)


class Conversation(DurableObject):  # type: ignore[misc]  # the SDK has no stubs
    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self._store = Store(_Sql(ctx.storage.sql))
        self._turn: _Turn | None = None

    def _lookup(self, key: str) -> str | None:
        value = getattr(self.env, key, None)
        return value if isinstance(value, str) else None

    async def fetch(self, request: Any) -> Response:
        raw = request.js_object
        url = urlsplit(str(raw.url))
        op = url.path.strip("/")
        try:
            settings = config.load(self._lookup)
            if op == "create":
                history = json.loads(str(await raw.text())) if raw.method == "POST" else {}
                self._store.create(time.time())
                for message in history.get("messages", ()):
                    self._store.add_message(
                        message["role"], message["content"], message.get("reasoning")
                    )
                return _json(201, {"id": url.netloc})
            if not self._store.exists():
                raise ApiError(404, "not_found", "No such conversation.")
            self._recover()
            if op == "get":
                return _json(
                    200,
                    {
                        "id": url.netloc,
                        "messages": self._store.messages(),
                        "streaming": self._turn is not None,
                    },
                )
            if op == "delete":
                if self._turn is not None:  # its readers still get its end; storage does not
                    self._turn.deleted = True
                    if self._turn.pipe is not None:
                        self._turn.pipe.stop()
                await self.ctx.storage.deleteAll()
                return Response(None, status=204)
            if op == "stop":
                stopped = self._turn is not None and self._turn.pipe is not None
                if stopped:
                    assert self._turn is not None and self._turn.pipe is not None
                    self._turn.pipe.stop()
                return _json(200, {"stopped": stopped})
            if op == "stream":
                return self._resume(raw.headers.get("x-after"), raw.signal)
            if op == "messages":
                payload = json.loads(str(await raw.text()))
                return await self._message(url.netloc, payload, settings, raw.signal)
            raise ApiError(404, "not_found", "No such operation.")
        except ApiError as error:
            return _error(error)

    def _recover(self) -> None:
        """A turn marked streaming with none running here: the object was restarted mid-turn
        (evicted, redeployed). Its readers get an error ending, not a stream that never ends."""
        if self._turn is None and self._store.streaming:
            turn = self._store.turn
            last = self._store.events_after(turn, 0)
            seq = last[-1].seq if last else 0
            encoder = ChatEncoder()
            for i, part in enumerate(
                split_events(
                    encoder.failed(
                        Failed(
                            code="upstream_incomplete",
                            message="The answer was cut off when the conversation restarted.",
                        )
                    )
                )
            ):
                self._store.append(turn, seq + 1 + i, part)
            self._store.end_turn()

    def _resume(self, after: str | None, signal: Any) -> Response:
        turn = self._store.turn
        if turn == 0:
            raise ApiError(404, "no_turn", "This conversation has no answer yet.")
        mark = parse_event_id(after)
        seq = mark[1] if mark is not None and mark[0] == turn else 0
        live = self._turn
        if live is not None and live.number == turn:
            live.flush()  # what the turn holds is stored first: the replay below has it all
        missed: list[Event] = self._store.events_after(turn, seq)
        if live is None or live.number != turn:
            return _sse(to_js(b"".join(e.wire() for e in missed)) if missed else None)
        reader = _Reader()
        if missed:  # then attached, with no await in between: nothing in the gap
            reader.send(b"".join(e.wire() for e in missed))
        live.attach(reader, signal)
        return _sse(reader.body)

    async def _message(
        self, id: str, payload: dict[str, Any], settings: config.Settings, signal: Any
    ) -> Response:
        if self._turn is not None:
            raise ApiError(
                409,
                "turn_in_progress",
                "An answer is still being written in this conversation; wait for it or stop it.",
            )
        if self._store.count() + 2 > settings.max_messages:
            raise ApiError(
                400,
                "too_many_messages",
                f"This conversation has reached the limit of {settings.max_messages} messages; start a new one.",
            )
        if self._store.size > settings.max_conversation_bytes:
            raise ApiError(
                413,
                "conversation_too_large",
                f"This conversation has reached the limit of {settings.max_conversation_bytes} bytes; start a new one.",
            )
        model = str(payload["model"])
        history = [*self._store.messages(), {"role": "user", "content": payload["content"]}]
        conversation = parse_conversation(
            history, settings, dialect=CHAT, model=model, facts=catalog.info(model)
        )
        request = ChatRequest(
            model=model,
            messages=conversation.messages,
            max_tokens=int(payload["max_tokens"]),
            temperature=payload.get("temperature"),
            reasoning_effort=payload.get("reasoning_effort"),
            stop=tuple(payload.get("stop") or ()),
        )

        web = WebRequest(
            method="POST",
            url="https://conversation/messages",
            path="/messages",
            headers={},
            body=_nothing(),
        )
        ctx = app.Context(request=web, settings=settings, model=WorkersAi(self.env, None))
        # The conversation's id is its session key: every turn reaches the replica with its cache.
        opened = await app.open_answer(ctx, model, request.ai_inputs(), conversation=id)
        source = opened.source
        if self._turn is not None:  # another message won the race while run() was answering
            if not isinstance(source, OneShot):
                source.cancel()
            raise ApiError(
                409, "turn_in_progress", "An answer is still being written in this conversation."
            )
        self._store.add_message("user", payload["content"])
        turn = _Turn(self._store, self._store.start_turn(), settings.resume_grace, self._turn_done)
        self._turn = turn
        relay = app.new_relay(ctx, turn.encoder, request.max_tokens, opened.model, request.stop)
        reader = _Reader()
        turn.attach(reader, signal)
        if isinstance(source, OneShot):  # a one-shot answer: relayed whole at once
            turn.out(relay_whole(relay, source))
            turn.ended(False)
            return _sse(reader.body)
        assert isinstance(source, JsByteSource), source
        turn.pipe = RelayPipe(source.stream, relay, None, None, turn.ended, out=turn.out)
        return _sse(reader.body)

    def _turn_done(self, turn: _Turn) -> None:
        if turn.deleted:
            if self._turn is turn:
                self._turn = None
            return
        encoder = turn.encoder
        text = "".join(encoder.text)
        if text or encoder.reasoning or isinstance(encoder.ending, Finished):
            self._store.add_message("assistant", text, "".join(encoder.reasoning) or None)
        self._store.end_turn()
        if self._turn is turn:
            self._turn = None


async def _nothing() -> AsyncIterator[bytes]:
    yield b""
