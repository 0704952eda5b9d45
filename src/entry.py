"""The Worker shell: converts a Workers request to the core's values, and back.

Values cross here and only here: Python inputs become plain JS objects before they reach
the AI binding (workerd's Ai class JSON.stringify()s them), JS results become Python before
the core sees them.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import js
from pyodide.ffi import JsException, to_js
from workers import Response, WorkerEntrypoint

import app
import gateway
import health
import rate_limit
from errors import ApiError, ClientGone
from jsstream import JsByteSource, RelayPipe, iter_body, js_bind, js_object, live_streams
from relay import OneShot, Relay, Upstream, relay_whole
from request_log import CURRENT, JsonLines, RequestLog, detail_line, request_id
from routes import TABLE
from settings import Lookup
from web import JSON_HEADERS, WebRequest, WebResponse

# Set by the local launcher only (no wrangler.toml environment sets it): the stats route.
STATS_VAR = "LOCAL_DEV_STATS"

log = logging.getLogger("entry")


def _emit(line: str) -> None:
    # print() is console.log on workerd: one line each in `wrangler tail` and Workers Logs,
    # which parse a JSON line into fields.
    print(line)


# What the core logs (an upstream error's internal detail) becomes a JSON line carrying
# the request id. INFO and below stay off: the request line says what they would.
logging.getLogger().addHandler(JsonLines(_emit))


class WorkersAi:
    def __init__(self, env: Any, signal: Any, record: RequestLog | None = None) -> None:
        self._env = env
        self._signal = signal if signal else None
        self._record = record

    async def stream(self, model: str, inputs: dict[str, Any], *, timeout: float) -> Upstream:
        binding = getattr(self._env, "AI", None)
        if binding is None:
            raise ApiError(500, "server_misconfigured", "The AI binding is not configured.")
        if self._record is not None:
            self._record.model = model
        if self._signal is not None and self._signal.aborted:
            raise ClientGone()
        stop = _RunStop(self._signal, timeout)
        try:
            options = {**gateway.run_options(_lookup(self._env)), "signal": stop.signal}
            result = await binding.run(model, js_object(inputs), js_object(options))
        except JsException as exc:
            if stop.signal.aborted:
                if self._signal is not None and self._signal.aborted:
                    raise ClientGone() from exc
                raise app.UpstreamSilent() from exc
            raise app.UpstreamFailure(str(exc)) from exc
        finally:
            stop.release()
            if self._record is not None:
                self._record.upstream_request_id = _last_request_id(binding)
        if getattr(getattr(result, "constructor", None), "name", None) == "ReadableStream":
            return JsByteSource(result)
        return OneShot(result=result.to_py() if hasattr(result, "to_py") else result)


class _RunStop:
    """The signal env.AI.run() is given (workerd's Ai class hands it to its fetch): it aborts
    when `timeout` seconds pass or the client goes away, until run() answers; then it is let go,
    so neither can cut the answer's stream later (a 60 s limit on run() is not one on the answer).

    All in JS: an asyncio timer here outlived a request whose client left and kept its objects
    alive for good (measured on workerd), and a race of run() against a promise handed Python
    three promises per request (~35 us each to wrap, measured). Measured locally too: miniflare's
    entry worker does not report a client that leaves before the response headers, so there
    the timeout is what ends such a call."""

    def __init__(self, client: Any, timeout: float) -> None:
        controller = js.AbortController.new()
        self.signal = controller.signal
        self._abort = js_bind(js.Reflect.get(controller, "abort"), controller)
        self._sources = [js.AbortSignal.timeout(max(1, int(timeout * 1000)))]
        if client is not None:
            self._sources.append(client)
        for source in self._sources:
            source.addEventListener("abort", self._abort)

    def release(self) -> None:
        for source in self._sources:
            source.removeEventListener("abort", self._abort)
        self._sources = []


class RateLimiter:
    """The Rate Limiting binding as the core's Limiter: binding.limit({key}) -> {success}."""

    def __init__(self, binding: Any) -> None:
        self._binding = binding

    async def allow(self, key: str) -> bool:
        try:
            result = await self._binding.limit(js_object({"key": key}))
        except JsException as exc:  # counted nowhere, so refused: a limiter fault never opens the door
            log.error("%s.limit() failed: %s", rate_limit.BINDING, exc)
            return False
        success = result.get("success") if isinstance(result, dict) else getattr(result, "success", None)
        return success is True


def _limiter(env: Any) -> RateLimiter | None:
    binding = getattr(env, rate_limit.BINDING, None)
    return None if binding is None else RateLimiter(binding)


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
        return (str(name) for name in self._headers.keys())

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _last_request_id(binding: Any) -> str | None:
    """workerd's Ai class keeps the cf-ai-req-id header of its last run() here. Read by
    item: the SDK's binding wrapper caches what is read as an attribute. One Ai object
    serves the isolate's concurrent requests, so under load this may be a neighbour's id."""
    try:
        value = binding["lastRequestId"]
    except Exception:
        value = getattr(binding, "lastRequestId", None)
    return value if isinstance(value, str) and value else None


def _binding_names(env: Any) -> list[str]:
    """Names of the env entries that are not vars (vars are strings): the bindings."""
    raw = getattr(env, "_env", env)  # the JS env behind the SDK's wrapper
    names = [str(name) for name in js.Object.keys(raw)]
    return [name for name in names if not isinstance(getattr(raw, name, None), str)]


def _lookup(env: Any) -> Lookup:
    def get(key: str) -> str | None:
        value = getattr(env, key, None)
        return value if isinstance(value, str) else None

    return get


def _stats() -> WebResponse:
    stats: dict[str, Any] = dict(live_streams())
    try:
        import pyodide_js  # type: ignore[import-not-found]

        stats["wasm_memory_bytes"] = int(pyodide_js._module.HEAPU8.byteLength)
        # Where the Wasm stack pointer is while this route runs: a constant depth below the
        # stack's top, so a value that creeps down across requests is a stack leak (issue 22).
        stats["wasm_stack_pointer"] = int(pyodide_js._module.stackSave())
    except Exception as exc:  # the figure is a nicety; the counts are what the tests read
        stats["wasm_memory_error"] = repr(exc)
    return WebResponse(status=200, headers=JSON_HEADERS, body=json.dumps(stats).encode())


class Default(WorkerEntrypoint):  # type: ignore[misc]  # the SDK has no stubs
    async def fetch(self, request: Any) -> Response:
        raw = request.js_object
        url = str(raw.url)
        path = urlsplit(url).path
        lookup = _lookup(self.env)
        if path == "/__local/stats" and lookup(STATS_VAR) == "1":
            return _to_response(_stats(), raw.signal, self.ctx)
        headers = _Headers(raw.headers)
        record = RequestLog(request_id=request_id(headers), method=str(raw.method), route=path, started=time.monotonic())
        CURRENT.set(record)
        if path == health.PATH:
            response = health.health(record.method, lookup, _binding_names(self.env))
        else:
            web = WebRequest(method=record.method, url=url, path=path, headers=headers, body=iter_body(raw))
            model = WorkersAi(self.env, raw.signal, record)
            try:
                response = await app.handle(web, lookup, model, TABLE, limiter=_limiter(self.env))
            except Exception:
                _emit(detail_line(record.request_id, "error", "entry", traceback.format_exc()))
                response = app.app_error(ApiError(500, "internal_error", "The request could not be completed."))
        response = response.with_headers((("x-request-id", record.request_id),))
        return _to_response(response, raw.signal, self.ctx, record)


def _relay_ended(record: RequestLog, relay: Relay, client_gone: bool) -> None:
    record.relay_ended(relay, client_gone=client_gone, now=time.monotonic())
    record.write(_emit)


def _to_response(response: WebResponse, signal: Any, ctx: Any, record: RequestLog | None = None) -> Response:
    headers = js.Headers.new()
    for name, value in response.headers:
        headers.append(name, value)
    body: Any
    if isinstance(response.body, bytes):
        body = response.body or None
        if record is not None:
            record.responded(response.status, response.body, time.monotonic())
            record.write(_emit)
    else:
        source, relay = response.body.source, response.body.relay
        if record is not None:
            record.responded(response.status, None, time.monotonic())
        if isinstance(source, OneShot):
            body = relay_whole(relay, source)
            if record is not None:
                _relay_ended(record, relay, False)
        else:
            assert isinstance(source, JsByteSource), source
            on_end = None if record is None else (lambda gone: _relay_ended(record, relay, gone))
            body = RelayPipe(source.stream, relay, signal, ctx, on_end).stream
    if isinstance(body, bytes):
        body = to_js(body) if body else None
    return Response(body, status=response.status, headers=headers)
