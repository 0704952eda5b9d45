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
import catalog
import gateway
import health
import rate_limit
import settings as config
import upstream_errors

# Durable Object classes are found in the main module.
from conversation_object import Conversation  # noqa: F401
from errors import ApiError, ClientGone
from jsbody import RequestBody
from jsstream import JsByteSource, RelayPipe, js_bind, js_object, live_streams
from relay import ByteSource, OneShot, Relay, Upstream, relay_whole
from request_log import CURRENT, JsonLines, RequestLog, detail_line, request_id
from routes import TABLE
from settings import BODY_TIMEOUT_DEFAULT, Lookup, SettingsError, body_timeout
from web import JSON_HEADERS, Forwarded, WebRequest, WebResponse

# Set by the local launcher only (no wrangler.toml environment sets it): the stats route.
STATS_VAR = "LOCAL_DEV_STATS"
# How long a request waits for env.AI.models() before going on with the facts it has.
CATALOG_WAIT_MS = 2000

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

    async def stream(
        self,
        model: str,
        inputs: dict[str, Any],
        *,
        timeout: float,
        options: app.RunOptions | None = None,
    ) -> Upstream:
        binding = getattr(self._env, "AI", None)
        if binding is None:
            raise ApiError(500, "server_misconfigured", "The AI binding is not configured.")
        if self._record is not None:
            self._record.model = model
        if self._signal is not None and self._signal.aborted:
            raise ClientGone()
        asked = options or app.RunOptions()
        stop = _RunStop(self._signal, timeout)
        try:
            run_options = {
                **gateway.run_options(_lookup(self._env), asked.key_id),
                **asked.binding_options(),
                "signal": stop.signal,
            }
            result = await binding.run(model, js_object(inputs), js_object(run_options))
        except JsException as exc:
            if stop.signal.aborted:
                if self._signal is not None and self._signal.aborted:
                    raise ClientGone() from exc
                raise app.UpstreamSilent() from exc
            if self._record is not None:
                self._record.attempts.append((model, upstream_errors.parse(str(exc))[0]))
            raise app.UpstreamFailure(str(exc)) from exc
        finally:
            stop.release()
            if self._record is not None:
                self._record.upstream_request_id = _last_request_id(binding)
        if self._record is not None:
            self._record.attempts.append((model, None))
        if getattr(getattr(result, "constructor", None), "name", None) == "ReadableStream":
            return JsByteSource(result)
        return OneShot(result=result.to_py() if hasattr(result, "to_py") else result)

    async def drain(self, source: ByteSource, relay: Relay) -> None:
        """The same pipe as a streamed answer (JS timers for the idle limit, the client's
        signal to stop it), with no reader: the relay's encoder collects the answer."""
        assert isinstance(source, JsByteSource), source
        await RelayPipe(source.stream, relay, self._signal).to_end()


async def refresh_catalog(env: Any, lookup: Lookup) -> None:
    """Model facts from env.AI.models() when catalog.py says they are due, as Python values.
    Bounded by CATALOG_WAIT_MS (scheduler.wait: a JS timer, nothing of Python's left behind);
    a failure leaves the facts as they were and is logged."""
    now = time.monotonic()
    if not catalog.due(now):
        return
    every = catalog.refresh_seconds(lookup)
    catalog.begin(now, every)
    binding = getattr(env, "AI", None)
    if binding is None:
        return
    try:
        search = binding.models(js_object(dict(catalog.SEARCH)))
        result = await js.Promise.race(to_js([search, js.scheduler.wait(CATALOG_WAIT_MS)]))
        if result is None or not hasattr(result, "to_py"):
            raise TimeoutError(f"no answer within {CATALOG_WAIT_MS} ms")
        count = catalog.loaded(result.to_py(), time.monotonic(), every)
    except Exception as exc:  # whatever it is, the request goes on with the facts it has
        catalog.failed(str(exc), time.monotonic(), every)
        log.warning("env.AI.models() failed, model facts stay %s: %s", catalog.source(), exc)
        return
    if count:
        try:
            s = config.load(lookup)
        except config.SettingsError:
            return  # the request itself reports it
        if unlisted := catalog.unlisted((*s.models, *s.fallback_models)):
            log.warning(
                "not in the Workers AI catalog (retired or misspelled?): %s", ", ".join(unlisted)
            )


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


class DurableConversations:
    """conversation_api's Conversations: each call is a request to the conversation's own
    Durable Object (its name is the id), carrying the client's signal so the object learns
    when a reader leaves; its response is sent on as it is."""

    def __init__(self, namespace: Any, signal: Any) -> None:
        self._namespace = namespace
        self._signal = signal

    async def call(
        self, id: str, op: str, payload: dict[str, Any] | None = None, *, after: str | None = None
    ) -> WebResponse:
        stub = self._namespace.get(self._namespace.idFromName(id))
        init: dict[str, Any] = {
            "method": "POST" if payload is not None else "GET",
            "signal": self._signal,
        }
        headers = js.Headers.new()
        if payload is not None:
            init["body"] = json.dumps(payload, ensure_ascii=False)
            headers.append("content-type", "application/json")
        if after is not None:
            headers.append("x-after", after)
        init["headers"] = headers
        response = await stub.fetch(js.Request.new(f"https://{id}/{op}", js_object(init)))
        content_type = response.headers.get("content-type")
        kept = (("content-type", content_type),) if isinstance(content_type, str) else ()
        return WebResponse(
            status=int(response.status), headers=kept, body=Forwarded(response=response)
        )


class RateLimiter:
    """The Rate Limiting binding as the core's Limiter: binding.limit({key}) -> {success}."""

    def __init__(self, binding: Any) -> None:
        self._binding = binding

    async def allow(self, key: str) -> bool:
        try:
            result = await self._binding.limit(js_object({"key": key}))
        except (
            JsException
        ) as exc:  # counted nowhere, so refused: a limiter fault never opens the door
            log.error("%s.limit() failed: %s", rate_limit.BINDING, exc)
            return False
        success = (
            result.get("success") if isinstance(result, dict) else getattr(result, "success", None)
        )
        return success is True


def _limiter(env: Any, name: str = rate_limit.BINDING) -> RateLimiter | None:
    binding = getattr(env, name, None)
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
        return (str(name) for name in self._headers)

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


def _body_timeout(lookup: Lookup) -> float:
    try:
        return body_timeout(lookup)
    except SettingsError:  # the core answers 500 server_misconfigured before it reads a body
        return BODY_TIMEOUT_DEFAULT


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
        record = RequestLog(
            request_id=request_id(headers),
            method=str(raw.method),
            route=path,
            started=time.monotonic(),
        )
        CURRENT.set(record)
        body = RequestBody(raw, timeout=_body_timeout(lookup), started=record.started)
        if path == health.PATH:
            response = health.health(record.method, lookup, _binding_names(self.env))
        else:
            web = WebRequest(
                method=record.method, url=url, path=path, headers=headers, body=body.chunks()
            )
            model = WorkersAi(self.env, raw.signal, record)
            try:
                if TABLE.find(path) is not None:
                    await refresh_catalog(self.env, lookup)
                namespace = getattr(self.env, "CONVERSATIONS", None)
                conversations = (
                    None if namespace is None else DurableConversations(namespace, raw.signal)
                )
                response = await app.handle(
                    web,
                    lookup,
                    model,
                    TABLE,
                    limiter=_limiter(self.env),
                    key_limiter=_limiter(self.env, rate_limit.KEY_BINDING),
                    conversations=conversations,
                )
            except Exception:
                _emit(detail_line(record.request_id, "error", "entry", traceback.format_exc()))
                response = app.app_error(
                    ApiError(500, "internal_error", "The request could not be completed.")
                )
        # An answer given before the body was read: the rest is read first, or the runtime may
        # reset the connection before a client that sends all before it reads sees the answer.
        await body.drain()
        response = response.with_headers((("x-request-id", record.request_id),))
        return _to_response(response, raw.signal, self.ctx, record)


def _relay_ended(record: RequestLog, relay: Relay, client_gone: bool) -> None:
    record.relay_ended(relay, client_gone=client_gone, now=time.monotonic())
    record.write(_emit)


def _to_response(
    response: WebResponse, signal: Any, ctx: Any, record: RequestLog | None = None
) -> Response:
    headers = js.Headers.new()
    for name, value in response.headers:
        headers.append(name, value)
    body: Any
    if isinstance(response.body, bytes):
        body = response.body or None
        if record is not None:
            record.responded(response.status, response.body, time.monotonic())
            record.write(_emit)
    elif isinstance(response.body, Forwarded):
        if record is not None:
            record.responded(response.status, None, time.monotonic())
            record.write(_emit)
        body = getattr(response.body.response, "body", None)
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
