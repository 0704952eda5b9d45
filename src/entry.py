"""The Worker shell: converts a Workers request to the core's values, and back.

Values cross here and only here: Python inputs become plain JS objects before they reach
the AI binding (workerd's Ai class JSON.stringify()s them), JS results become Python before
the core sees them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import js
from pyodide.ffi import JsException, to_js
from workers import Response, WorkerEntrypoint

import app
import gateway
import rate_limit
from errors import ApiError
from jsstream import JsByteSource, RelayPipe, iter_body, js_object, live_streams, object_types
from relay import OneShot, Upstream, relay_whole
from routes import TABLE
from settings import Lookup
from web import JSON_HEADERS, WebRequest, WebResponse

# Set by the local launcher only (no wrangler.toml environment sets it): the stats route.
STATS_VAR = "LOCAL_DEV_STATS"

log = logging.getLogger("entry")


class WorkersAi:
    def __init__(self, env: Any, signal: Any) -> None:
        self._env = env
        self._signal = signal if signal else None

    async def stream(self, model: str, inputs: dict[str, Any], *, timeout: float) -> Upstream:
        binding = getattr(self._env, "AI", None)
        if binding is None:
            raise ApiError(500, "server_misconfigured", "The AI binding is not configured.")
        try:
            options = gateway.run_options(_lookup(self._env))
            args = (js_object(inputs), js_object(options)) if options else (js_object(inputs),)
            result = await self._unless_client_leaves(binding.run(model, *args), timeout)
        except JsException as exc:
            raise app.UpstreamFailure(str(exc)) from exc
        if getattr(getattr(result, "constructor", None), "name", None) == "ReadableStream":
            return JsByteSource(result)
        return OneShot(result=result.to_py() if hasattr(result, "to_py") else result)

    async def _unless_client_leaves(self, running: Any, timeout: float) -> Any:
        """run() until it answers, the client goes away, or `timeout` seconds pass.

        The model call is cancelled by workerd when the handler returns, so returning at once
        stops an answer nobody will read. Waiting is done in JS (AbortSignal.timeout, and the
        request's signal): an asyncio timer here outlives a request whose client left and
        keeps its objects alive for good (measured on workerd). Measured locally too:
        miniflare's entry worker does not report a client that leaves before the response
        headers, so there the timeout is what ends such a call."""
        signals = [js.AbortSignal.timeout(max(1, int(timeout * 1000)))]
        if self._signal is not None:
            signals.append(self._signal)
        either = js.AbortSignal.any(to_js(signals))
        stopped = js.Promise.withResolvers()  # its resolve is a JS function: no proxy to manage
        either.addEventListener("abort", stopped.resolve)
        try:
            result = await js.Promise.race(to_js([running, stopped.promise]))
        finally:
            either.removeEventListener("abort", stopped.resolve)
        if either.aborted:
            running.catch(js.Boolean)  # nobody waits for it any more
            if self._signal is not None and self._signal.aborted:
                raise ClientGone()
            raise app.UpstreamSilent()
        return result


class ClientGone(ApiError):
    """The client left before the model answered: nobody reads this response."""

    def __init__(self) -> None:
        super().__init__(499, "client_gone", "The client closed the connection.")


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


def _lookup(env: Any) -> Lookup:
    def get(key: str) -> str | None:
        value = getattr(env, key, None)
        return value if isinstance(value, str) else None

    return get


def _stats(query: str) -> WebResponse:
    stats: dict[str, Any] = dict(live_streams())
    if "types" in query:
        stats["types"] = object_types()
    try:
        import pyodide_js  # type: ignore[import-not-found]

        stats["wasm_memory_bytes"] = int(pyodide_js._module.HEAPU8.byteLength)
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
            return _to_response(_stats(urlsplit(url).query), raw.signal, self.ctx)
        web = WebRequest(method=str(raw.method), url=url, path=path, headers=_Headers(raw.headers), body=iter_body(raw))
        response = await app.handle(web, lookup, WorkersAi(self.env, raw.signal), TABLE, limiter=_limiter(self.env))
        return _to_response(response, raw.signal, self.ctx)


def _to_response(response: WebResponse, signal: Any, ctx: Any) -> Response:
    headers = js.Headers.new()
    for name, value in response.headers:
        headers.append(name, value)
    body: Any
    if isinstance(response.body, bytes):
        body = response.body or None
    else:
        source, relay = response.body.source, response.body.relay
        if isinstance(source, OneShot):
            body = relay_whole(relay, source)
        else:
            assert isinstance(source, JsByteSource), source
            body = RelayPipe(source.stream, relay, signal, ctx).stream
    if isinstance(body, bytes):
        body = to_js(body) if body else None
    return Response(body, status=response.status, headers=headers)
