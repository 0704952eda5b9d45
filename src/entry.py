"""The Worker shell: converts a Workers request to the core's values, and back.

Values cross here and only here: Python inputs become plain JS objects before they reach
the AI binding (workerd's Ai class JSON.stringify()s them), JS results become Python before
the core sees them.

The entry is a module-level `on_fetch(request, env, ctx)` (compatibility flag
`disable_python_no_global_handlers`): the runtime calls it once a request with the JS request,
env and ctx as they are. A `WorkerEntrypoint` class costs two calls into Python a request (its
constructor, then fetch) and the SDK's wrappers of every argument and result
(bench/notes/2026-11-29-entry.md). Under the flag a Durable Object's handlers are `on_fetch`
and `on_alarm`.
"""

from __future__ import annotations

import asyncio
import logging
import platform
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import js
from pyodide.ffi import to_js

from base.errors import ApiError
from base.settings import (
    BODY_TIMEOUT_DEFAULT,
    Lookup,
    SettingsError,
    body_timeout,
    shell_stream_window,
)
from routes import TABLE
from shell.access_keys import WebCryptoVerifier
from shell.bindings import Bindings, WorkersAi, refresh_catalog

# Durable Object classes are found in the main module.
from shell.budget_object import DurableBudgets, OwnerBudget  # noqa: F401
from shell.conversation_object import Conversation  # noqa: F401
from shell.durable_stubs import DurableConversations, DurableOwnerIndexes, DurableResponses
from shell.js_glue import js_headers
from shell.jsbody import RequestBody
from shell.jspieces import PiecesStream
from shell.jssource import JsByteSource
from shell.jsstream import RelayPipe
from shell.late_body import HeadTimer, LateBody
from shell.owner_index_object import ConversationIndex  # noqa: F401
from shell.response_object import StoredResponse  # noqa: F401
from streaming.relay import OneShot, Relay, Relayed, relay_whole
from surface import early_head, policy, routing
from surface.census import live_streams
from surface.request_log import (
    CURRENT,
    HASH_KEY_VAR,
    JsonLines,
    RequestLog,
    detail_line,
    redacted,
    request_id,
    route_of,
)
from surface.web import Forwarded, Pieces, WebRequest, WebResponse

log = logging.getLogger("entry")


def _emit(line: str) -> None:
    # print() is console.log on workerd: one line each in `wrangler tail` and Workers Logs,
    # which parse a JSON line into fields.
    print(line)


# What the core logs (an upstream error's internal detail) becomes a JSON line carrying
# the request id. INFO and below stay off: the request line says what they would.
logging.getLogger().addHandler(JsonLines(_emit))


class _Headers(Mapping[str, str]):
    """The request's JS Headers, read one name at a time: the core asks for a few of them,
    and copying them all costs two or three JS crossings per header on every request."""

    def __init__(self, headers: Any) -> None:
        self._headers = headers

    def __getitem__(self, name: str) -> str:
        value = self._headers.get(name)
        if not isinstance(value, str):  # a missing header is JS null (pyodide.ffi.jsnull)
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return (str(name) for name in self._headers)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _Shell:
    """routing.Shell: what the routes that answer before policy (health, local stats) ask of
    the Worker itself."""

    def __init__(self, env: Any) -> None:
        self._env = env  # the JS env

    def binding_names(self) -> list[str]:
        """Names of the env entries that are not vars (vars are strings): the bindings."""
        raw = self._env
        names = [str(name) for name in js.Object.keys(raw)]
        return [name for name in names if not isinstance(getattr(raw, name, None), str)]

    def runtime(self) -> dict[str, str | None]:
        try:
            import pyodide

            pyodide_version: str | None = str(pyodide.__version__)
        except (ImportError, AttributeError):
            pyodide_version = None
        return {"python": platform.python_version(), "pyodide": pyodide_version}

    def runtime_stats(self) -> dict[str, object]:
        stats: dict[str, object] = dict(live_streams())
        try:
            import pyodide_js  # type: ignore[import-not-found]

            stats["wasm_memory_bytes"] = int(pyodide_js._module.HEAPU8.byteLength)
            # Where the Wasm stack pointer is while this route runs: a constant depth below the
            # stack's top, so a value that creeps down across requests is a stack leak (issue 22).
            stats["wasm_stack_pointer"] = int(pyodide_js._module.stackSave())
        except Exception as exc:  # the figure is a nicety; the counts are what the tests read
            stats["wasm_memory_error"] = repr(exc)
        return stats


def _body_timeout(lookup: Lookup) -> float:
    try:
        return body_timeout(lookup)
    except SettingsError:  # the core answers 500 server_misconfigured before it reads a body
        return BODY_TIMEOUT_DEFAULT


# The requests being answered (Python tasks: empty whenever a deploy snapshots the module).
_SERVING: set[asyncio.Future[None]] = set()


def on_fetch(request: Any, env: Any, ctx: Any) -> Any:
    """Every request: the JS Request, the JS env and ctx in, a promise of the JS Response out.
    One coroutine makes the answer and resolves the promise, with the answer's Response or,
    for a whole answer that is late, an early head's (the coroutine goes on to its body): no
    second task and no wait for the streamed answers (measured: bench/notes/
    2026-11-29-floors.md)."""
    answered = js.Promise.withResolvers()
    task = asyncio.ensure_future(_serve(request, env, ctx, answered))
    _SERVING.add(task)  # the loop keeps only a weak reference
    task.add_done_callback(_SERVING.discard)
    return answered.promise


async def _serve(request: Any, env: Any, ctx: Any, answered: Any) -> None:
    try:
        response = await _fetch(request, env, ctx, answered.resolve)
    except Exception:
        # A fault of the shell's own (the core's are answered 500 in _answer): the runtime
        # answers a rejection 500, as it did an exception of on_fetch.
        _emit(detail_line("-", "error", "entry", redacted(traceback.format_exc())))
        answered.reject(js.Error.new("The request could not be completed."))
        return
    if response is not None:
        answered.resolve(response)


async def _fetch(request: Any, env: Any, ctx: Any, send: Callable[[Any], None]) -> Any:
    """The answer's JS Response; None when the early head went out through `send`."""
    raw = request
    bindings = Bindings.of(env)
    url = str(raw.url)
    path = urlsplit(url).path
    lookup = bindings.lookup
    headers = _Headers(raw.headers)
    logged, conversation = route_of(path, lookup(HASH_KEY_VAR))
    record = RequestLog(
        request_id=request_id(headers),
        method=str(raw.method),
        route=logged,
        started=time.monotonic(),
        conversation=conversation,
    )
    CURRENT.set(record)
    body = RequestBody(raw, timeout=_body_timeout(lookup), started=record.started)
    web = WebRequest(method=record.method, url=url, path=path, headers=headers, body=body.chunks())
    signal = raw.signal
    model = WorkersAi(bindings.env, signal, record)
    window = shell_stream_window(lookup)
    route = TABLE.find(path)
    if route is None or not route.metered or record.method != "POST":
        response = await _answer(web, bindings, model, signal, ctx, record, body)
        return _to_response(response, signal, ctx, record, window)
    # The request's context lives until the answer is made: a client that resets before the
    # head may have workerd drop it, and no callback of ours would run again (measured).
    kept = js.Promise.withResolvers()
    ctx.waitUntil(kept.promise)

    def due(late: asyncio.Future[WebResponse]) -> bool:
        # A whole answer still being made: its head goes out now (surface/early_head.py).
        head = early_head.head_headers(web, lookup, record.request_id)
        if head is None:
            return False
        late_body = LateBody(late, ctx, early_head.heartbeat_every(lookup), _finish(record))
        send(_js_response(late_body.stream, 200, js_headers(head)))
        return True

    # Armed only when the model starts answering whole: a streamed answer has no head timer.
    def head_at() -> float | None:
        after = early_head.head_after(lookup)  # 0: never
        return record.started + after if after > 0 else None

    timer = HeadTimer(head_at, due)
    model.on_whole = timer.arm
    try:
        response = await _answer(web, bindings, model, signal, ctx, record, body)
    except BaseException as exc:
        if timer.settle(error=exc):
            return None
        raise
    finally:
        model.on_whole = None
        kept.resolve()
    if timer.settle(response):
        return None  # the late body writes it
    return _to_response(response, signal, ctx, record, window)


async def _answer(
    web: WebRequest,
    bindings: Bindings,
    model: WorkersAi,
    signal: Any,
    ctx: Any,
    record: RequestLog,
    body: RequestBody,
) -> WebResponse:
    try:
        route = TABLE.find(web.path)
        if route is not None and route.early is None:
            await refresh_catalog(bindings.env, bindings.lookup)
        response = await policy.handle(
            web,
            bindings.lookup,
            model,
            TABLE,
            limiter=bindings.limiter,
            key_limiter=bindings.key_limiter,
            read_limiter=bindings.read_limiter,
            conversations=(
                None
                if bindings.conversations is None
                else DurableConversations(bindings.conversations, signal)
            ),
            shell=_Shell(bindings.env),
            # The JS namespace: a stored response's write is a promise that stays in JS.
            responses=(
                None if bindings.responses is None else DurableResponses(bindings.responses, ctx)
            ),
            owner_indexes=(
                None if bindings.owners is None else DurableOwnerIndexes(bindings.owners)
            ),
            verifier=WebCryptoVerifier(),
            budgets=None if bindings.budgets is None else DurableBudgets(bindings.budgets, ctx),
        )
    except Exception:
        trace = redacted(traceback.format_exc())
        _emit(detail_line(record.request_id, "error", "entry", trace))
        response = routing.app_error(
            ApiError(500, "internal_error", "The request could not be completed.")
        )
    # An answer given before the body was read: the rest is read first, or the runtime may
    # reset the connection before a client that sends all before it reads sees the answer.
    await body.drain()
    return response.with_headers((("x-request-id", record.request_id),))


def _finish(record: RequestLog) -> Callable[[asyncio.Future[WebResponse]], bytes]:
    """What a late body ends with: the answer's body, logged as the request's end."""

    def finish(task: asyncio.Future[WebResponse]) -> bytes:
        try:
            response = task.result()
        except BaseException:
            trace = redacted(traceback.format_exc())
            _emit(detail_line(record.request_id, "error", "entry", trace))
            response = routing.app_error(
                ApiError(500, "internal_error", "The request could not be completed.")
            )
        if isinstance(response.body, Relayed) and isinstance(response.body.source, JsByteSource):
            response.body.source.cancel()  # a stream nobody will run: its upstream stops
        record.responded(response, time.monotonic())
        record.early_head = True
        record.write(_emit)
        return early_head.late_body(response)

    return finish


def _relay_ended(record: RequestLog, relay: Relay, client_gone: bool) -> None:
    record.relay_ended(relay, client_gone=client_gone, now=time.monotonic())
    record.write(_emit)


def _to_response(
    response: WebResponse,
    signal: Any,
    ctx: Any,
    record: RequestLog | None = None,
    window: float = 0.0,
) -> Any:
    headers = js_headers(response.headers)
    body: Any
    if isinstance(response.body, bytes):
        body = response.body or None
        if record is not None:
            record.responded(response, time.monotonic())
            record.write(_emit)
    elif isinstance(response.body, Forwarded):
        if record is not None:
            record.responded(response, time.monotonic())
            record.write(_emit)
        body = getattr(response.body.response, "body", None)
    elif isinstance(response.body, Pieces):
        if record is not None:
            record.responded(response, time.monotonic())
            record.write(_emit)
        body = PiecesStream(response.body.chunks).stream
    else:
        source, relay, after = response.body.source, response.body.relay, response.body.after
        if record is not None:
            record.responded(response, time.monotonic())
        if isinstance(source, OneShot):
            body = relay_whole(relay, source)
            if record is not None:
                _relay_ended(record, relay, False)
            if after is not None:
                after(False)
        else:
            assert isinstance(source, JsByteSource), source

            def on_end(gone: bool) -> None:
                if record is not None:
                    _relay_ended(record, relay, gone)
                if after is not None:
                    after(gone)

            body = RelayPipe(source.stream, relay, signal, ctx, on_end, window=window).stream
    if isinstance(body, bytes):
        body = to_js(body) if body else None
    return _js_response(body, response.status, headers)


def _js_response(body: Any, status: int, headers: Any) -> Any:
    init = js.Object.new()
    init.status = status
    init.headers = headers
    return js.Response.new(body, init)
