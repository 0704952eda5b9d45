"""The Worker shell: converts a Workers request to the core's values, and back.

Values cross here and only here: Python inputs become plain JS objects before they reach
the AI binding (workerd's Ai class JSON.stringify()s them), JS results become Python before
the core sees them.
"""

from __future__ import annotations

import logging
import platform
import time
import traceback
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import js
from pyodide.ffi import to_js
from workers import Response, WorkerEntrypoint

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
from shell.bindings import (
    DurableConversations,
    DurableOwnerIndexes,
    DurableResponses,
    WorkersAi,
    env_lookup,
    js_env,
    limiter,
    refresh_catalog,
)
from shell.budget_object import DurableBudgets, OwnerBudget  # noqa: F401

# Durable Object classes are found in the main module.
from shell.conversation_object import Conversation  # noqa: F401
from shell.js_glue import js_headers
from shell.jsbody import RequestBody
from shell.jspieces import PiecesStream
from shell.jsstream import JsByteSource, RelayPipe
from shell.owner_index_object import ConversationIndex  # noqa: F401
from shell.response_object import StoredResponse  # noqa: F401
from streaming.relay import OneShot, Relay, relay_whole
from surface import policy, rate_limit, routing
from surface.census import live_streams
from surface.daily_budget import BINDING as BUDGET_BINDING
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
        self._env = env

    def binding_names(self) -> list[str]:
        """Names of the env entries that are not vars (vars are strings): the bindings."""
        raw = js_env(self._env)
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


class Default(WorkerEntrypoint):  # type: ignore[misc]  # the SDK has no stubs
    async def fetch(self, request: Any) -> Response:
        raw = request.js_object
        url = str(raw.url)
        path = urlsplit(url).path
        lookup = env_lookup(self.env)
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
        web = WebRequest(
            method=record.method, url=url, path=path, headers=headers, body=body.chunks()
        )
        model = WorkersAi(self.env, raw.signal, record)
        try:
            route = TABLE.find(path)
            if route is not None and route.early is None:
                await refresh_catalog(self.env, lookup)
            namespace = getattr(self.env, "CONVERSATIONS", None)
            # The JS namespace, not the SDK's wrapper, whose stubs' fetch() is a coroutine: a
            # stored response's write is a promise that stays in JS (bindings.DurableResponses).
            stored = getattr(js_env(self.env), "RESPONSES", None)
            conversations = (
                None if namespace is None else DurableConversations(namespace, raw.signal)
            )
            index_namespace = getattr(self.env, "OWNERS", None)
            indexes = None if index_namespace is None else DurableOwnerIndexes(index_namespace)
            budget_namespace = getattr(js_env(self.env), BUDGET_BINDING, None)
            budgets = (
                None if budget_namespace is None else DurableBudgets(budget_namespace, self.ctx)
            )
            response = await policy.handle(
                web,
                lookup,
                model,
                TABLE,
                limiter=limiter(self.env),
                key_limiter=limiter(self.env, rate_limit.KEY_BINDING),
                read_limiter=limiter(self.env, rate_limit.READ_BINDING),
                conversations=conversations,
                shell=_Shell(self.env),
                responses=None if stored is None else DurableResponses(stored, self.ctx),
                owner_indexes=indexes,
                verifier=WebCryptoVerifier(),
                budgets=budgets,
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
        response = response.with_headers((("x-request-id", record.request_id),))
        return _to_response(response, raw.signal, self.ctx, record, shell_stream_window(lookup))


def _relay_ended(record: RequestLog, relay: Relay, client_gone: bool) -> None:
    record.relay_ended(relay, client_gone=client_gone, now=time.monotonic())
    record.write(_emit)


def _to_response(
    response: WebResponse,
    signal: Any,
    ctx: Any,
    record: RequestLog | None = None,
    window: float = 0.0,
) -> Response:
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
    return Response(body, status=response.status, headers=headers)
