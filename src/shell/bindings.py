"""The Worker's bindings as the core's protocols: Workers AI (run, models), the Durable Object
namespaces (conversations, their owners' indexes, stored responses), the rate limiters, and the
vars. Python values become JS objects before they reach a binding; what a binding answers
becomes Python before the core sees it.

`Bindings.of(env)` is the one place that reads the runtime's env: the raw JS env of the module
entry, or the SDK's wrapper (`_EnvWrapper`, what a Durable Object is given) whose JS env it
unwraps. Everything here is then given raw JS bindings: the SDK's wrappers convert every value
that crosses them and cost per call (bench/notes/2026-11-29-entry.md).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import js
from pyodide.ffi import JsException, to_js

from base import catalog
from base import settings as config
from base.errors import ApiError, ClientGone
from base.settings import Lookup
from shell.js_glue import js_bind, js_object
from shell.jssource import JsByteSource
from shell.jsstream import RelayPipe
from shell.jsvectors import embedding_result
from streaming.relay import OneShot, Relay, Source, Upstream
from surface import daily_budget, rate_limit
from surface.request_log import RequestLog
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
OWNER_HASH_HEADER = "x-owner-hash"  # the AI Gateway's metadata.owner
LOGGED_HEADER = "x-turn-logged"
ERROR_CODE_HEADER = "x-error-code"
MODEL_HEADER = "x-model"
DELETED_TOO_HEADER = "x-deleted-too"
# How long a request waits for env.AI.models() before going on with the facts it has.
CATALOG_WAIT_MS = 2000

log = logging.getLogger("bindings")


@dataclass(frozen=True, slots=True, kw_only=True)
class Bindings:
    """What a request's handler reads of the env, read once: the JS env, its vars as a Lookup,
    and each binding (None when the environment has no such binding)."""

    env: Any
    lookup: Lookup
    ai: Any
    limiter: RateLimiter | None
    key_limiter: RateLimiter | None
    read_limiter: RateLimiter | None
    conversations: Any
    responses: Any
    owners: Any
    budgets: Any  # OWNER_DAILY_TOKENS' Durable Objects (surface/daily_budget.py)

    @classmethod
    def of(cls, env: Any) -> Bindings:
        raw = js_env(env)
        return cls(
            env=raw,
            lookup=env_lookup(raw),
            ai=getattr(raw, "AI", None),
            limiter=limiter(raw),
            key_limiter=limiter(raw, rate_limit.KEY_BINDING),
            read_limiter=limiter(raw, rate_limit.READ_BINDING),
            conversations=getattr(raw, "CONVERSATIONS", None),
            responses=getattr(raw, "RESPONSES", None),
            owners=getattr(raw, "OWNERS", None),
            budgets=getattr(raw, daily_budget.BINDING, None),
        )


class WorkersAi:
    def __init__(
        self, env: Any, signal: Any, record: RequestLog | None = None, owner: str | None = None
    ) -> None:
        self._env = env
        self._signal = signal if signal else None
        self._record = record
        # A call of this request answers whole (drained, or asked for no stream and answered):
        # the shell may send its head early (surface/early_head.py); `on_whole` is called once
        # when that starts (the shell's wait for it).
        self.answers_whole = False
        self.on_whole: Callable[[], None] | None = None
        self._owner = owner  # the owner's keyed hash, for the gateway (else the record's)

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
                **gateway.run_options(
                    env_lookup(self._env),
                    asked.key_id,
                    self._owner or (self._record.owner_hash if self._record else None),
                ),
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
        if inputs.get("stream") is not True:
            # Answered (an embedding batch): the next failure may come after the early head, the
            # ones before it keep their status.
            self._answering_whole()
        if getattr(getattr(result, "constructor", None), "name", None) == "ReadableStream":
            return JsByteSource(result)
        if "text" in inputs and hasattr(result, "to_py"):  # an embedding call
            return OneShot(result=embedding_result(result))
        return OneShot(result=result.to_py() if hasattr(result, "to_py") else result)

    def _answering_whole(self) -> None:
        if not self.answers_whole:
            self.answers_whole = True
            if self.on_whole is not None:
                self.on_whole()

    async def to_markdown(self, name: str, mime: str, data: bytes) -> dict[str, Any]:
        """env.AI.toMarkdown({name, blob}) (doors/files/markdown_api.py), as Python values."""
        binding = getattr(self._env, "AI", None)
        if binding is None:
            raise ApiError(500, "server_misconfigured", "The AI binding is not configured.")
        blob = js.Blob.new(to_js([to_js(data)]), js_object({"type": mime}))
        try:
            result = await binding.toMarkdown(js_object({"name": name, "blob": blob}))
        except JsException as exc:
            log.error("env.AI.toMarkdown(%r) failed: %s", name, exc)
            raise ApiError(
                502, "conversion_failed", f"Workers AI could not convert the file: {exc}"
            ) from exc
        converted = result.to_py() if hasattr(result, "to_py") else {}
        return converted if isinstance(converted, dict) else {}

    async def drain(self, source: Source, relay: Relay) -> None:
        """The same pipe as a streamed answer (JS timers for the idle limit, the client's
        signal to stop it), with no reader: the relay's encoder collects the answer."""
        assert isinstance(source, JsByteSource), source
        self._answering_whole()
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
