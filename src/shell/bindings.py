"""The Worker's bindings as the core's protocols: Workers AI (run, models), the Durable Object
namespaces (conversations, their owners' indexes, stored responses), the rate limiters, and the
vars. Python values become JS objects before they reach a binding; what a binding answers
becomes Python before the core sees it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import js
from pyodide.ffi import JsException, to_js

from base import catalog
from base import settings as config
from base.errors import ApiError, ClientGone
from base.settings import Lookup
from shell.js_glue import js_bind, js_object
from shell.jsstream import JsByteSource, RelayPipe
from shell.jsvectors import embedding_result
from streaming.relay import OneShot, Relay, Source, Upstream
from surface import rate_limit
from surface.request_log import CURRENT, RequestLog
from surface.web import Forwarded, WebResponse
from workers_ai import gateway, service, upstream_errors

# The header that tells a conversation's Durable Object its own id.
ID_HEADER = "x-conversation-id"
# The headers a Durable Object is told who asks in (owners.owner_of: a key's id or a token's
# keyed hash, never a token), and a stored response its expiry in.
OWNER_HEADER = "x-owner"
EXPIRES_HEADER = "x-expires-at"
# A durable turn's request line is the object's (it knows the answer's model, tokens and real
# outcome): the request id and whose budget it spends go to the object; a turn it logs comes
# back marked, and an error it answers names its code and the model asked.
REQUEST_ID_HEADER = "x-request-id"
BUDGET_OWNER_HEADER = "x-budget-owner"
LOGGED_HEADER = "x-turn-logged"
ERROR_CODE_HEADER = "x-error-code"
MODEL_HEADER = "x-model"
DELETED_TOO_HEADER = "x-deleted-too"
# How long a request waits for env.AI.models() before going on with the facts it has.
CATALOG_WAIT_MS = 2000

log = logging.getLogger("bindings")


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
        options: service.RunOptions | None = None,
    ) -> Upstream:
        binding = getattr(self._env, "AI", None)
        if binding is None:
            raise ApiError(500, "server_misconfigured", "The AI binding is not configured.")
        if self._record is not None:
            self._record.model = model
        if self._signal is not None and self._signal.aborted:
            raise ClientGone()
        asked = options or service.RunOptions()
        stop = _RunStop(self._signal, timeout)
        try:
            run_options = {
                **gateway.run_options(env_lookup(self._env), asked.key_id),
                **asked.binding_options(),
                "signal": stop.signal,
            }
            result = await binding.run(model, js_object(inputs), js_object(run_options))
        except JsException as exc:
            if stop.signal.aborted:
                if self._signal is not None and self._signal.aborted:
                    raise ClientGone() from exc
                raise service.UpstreamSilent() from exc
            if self._record is not None:
                self._record.attempts.append((model, upstream_errors.parse(str(exc))[0]))
            raise service.UpstreamFailure(str(exc)) from exc
        finally:
            stop.release()
            if self._record is not None:
                self._record.upstream_request_id = last_request_id(binding)
        if self._record is not None:
            self._record.attempts.append((model, None))
        if getattr(getattr(result, "constructor", None), "name", None) == "ReadableStream":
            return JsByteSource(result)
        if "text" in inputs and hasattr(result, "to_py"):  # an embedding call
            return OneShot(result=embedding_result(result))
        return OneShot(result=result.to_py() if hasattr(result, "to_py") else result)

    async def drain(self, source: Source, relay: Relay) -> None:
        """The same pipe as a streamed answer (JS timers for the idle limit, the client's
        signal to stop it), with no reader: the relay's encoder collects the answer."""
        assert isinstance(source, JsByteSource), source
        window = config.shell_stream_window(env_lookup(self._env))
        await RelayPipe(source.stream, relay, self._signal, window=window, whole=True).to_end()


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
        init["headers"] = headers
        response = await stub.fetch(js.Request.new(f"https://conversation/{op}", js_object(init)))
        content_type = response.headers.get("content-type")
        kept = (("content-type", content_type),) if isinstance(content_type, str) else ()
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


def limiter(env: Any, name: str = rate_limit.BINDING) -> RateLimiter | None:
    binding = getattr(env, name, None)
    return None if binding is None else RateLimiter(binding)


def last_request_id(binding: Any) -> str | None:
    """workerd's Ai class keeps the cf-ai-req-id header of its last run() here. Read by
    item: the SDK's binding wrapper caches what is read as an attribute. One Ai object
    serves the isolate's concurrent requests, so under load this may be a neighbour's id."""
    try:
        value = binding["lastRequestId"]
    except Exception:
        value = getattr(binding, "lastRequestId", None)
    return value if isinstance(value, str) and value else None


def js_env(env: Any) -> Any:
    """The JS env behind the SDK's wrapper (`_EnvWrapper`), or `env` when it is not wrapped."""
    return getattr(env, "_env", env)


def env_lookup(env: Any) -> Lookup:
    # The JS env itself, not the SDK's wrapper: a var is a string either way, and the wrapper
    # asks three instanceof questions of every name first (~25 names a request).
    raw = js_env(env)

    def get(key: str) -> str | None:
        value = getattr(raw, key, None)
        return value if isinstance(value, str) else None

    return get
