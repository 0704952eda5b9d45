"""Routing and policy: kill switch, CORS, limits, validation, then the streamed answer."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import affinity
import budget
import catalog
import fallback
import settings as config
import upstream_errors
from api_keys import SECRET, Keys, bearer, key_id
from chat_events import ChatEncoder
from chat_request import check_content_type, parse_chat, parse_json, read_body, well_formed_json
from errors import ApiError, ClientGone, clip
from guard import KEY_ONLY, PAGE_OR_KEY, Access, guard
from rate_limit import Limiter
from relay import (
    ByteSource,
    Encoder,
    Failed,
    Finished,
    OneShot,
    Relay,
    Timing,
    Upstream,
    relay_whole,
)
from settings import Lookup, Settings, SettingsError
from version import VERSION
from web import (
    API_HEADERS,
    SSE_HEADERS,
    Headers,
    Relayed,
    WebRequest,
    WebResponse,
    json_response,
    origin_of,
    without_body,
)

log = logging.getLogger("app")


class UpstreamFailure(Exception):
    """env.AI.run() failed before any byte of the answer was streamed."""


class UpstreamSilent(Exception):
    """env.AI.run() gave nothing (no stream, no result) within the time it was allowed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """What the core asks of one env.AI.run() beyond model and inputs; the shell adds the
    AI Gateway's options (tagged with key_id) and the abort signal."""

    reject_if_busy: bool = False  # a busy model fails at once (3040) instead of queueing
    affinity: str | None = None  # the conversation key (affinity.py)
    key_id: str | None = None  # the API key's id (never the key), for the gateway's metadata

    def binding_options(self) -> dict[str, Any]:
        """The options the Ai class reads itself (extraHeaders) or sends on (rejectIfBusy)."""
        options: dict[str, Any] = {}
        if self.reject_if_busy:
            options["rejectIfBusy"] = True
        if self.affinity:
            options["extraHeaders"] = {affinity.HEADER: self.affinity}
        return options


class ChatModel(Protocol):
    async def stream(
        self,
        model: str,
        inputs: dict[str, Any],
        *,
        timeout: float,
        options: RunOptions | None = None,
    ) -> Upstream:
        """Raises UpstreamFailure, or UpstreamSilent after `timeout` seconds.

        The timeout is the model's to keep: in the Worker a Python (asyncio) timer would
        outlive a request whose client left, holding its objects for good (measured on
        workerd), so the shell waits with a JS AbortSignal.timeout instead."""
        ...

    async def drain(self, source: ByteSource, relay: Relay) -> None:
        """Runs the relay over a streamed answer to its end, for a client that wants it whole:
        the relay's idle limit applies (silence times out, not length), and a client that
        leaves stops the read. The relay's encoder collects; nothing is written anywhere."""
        ...


class Conversations(Protocol):
    async def call(
        self, id: str, op: str, payload: dict[str, Any] | None = None, *, after: str | None = None
    ) -> WebResponse:
        """One operation on the durable conversation `id` (its Durable Object), whose answer is
        sent on as it is: create, get, delete, messages, stream, stop."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    request: WebRequest
    settings: Settings
    model: ChatModel
    conversations: Conversations | None = None  # None: no CONVERSATIONS binding
    key_id: str | None = None  # the id of the valid API key the request presented


Handler = Callable[[Context], Awaitable[WebResponse]]


class Shell(Protocol):
    """What only the Worker shell knows, for the routes that answer before any policy."""

    def binding_names(self) -> list[str]:
        """The names (never the values) of the bindings present."""
        ...

    def runtime_stats(self) -> dict[str, object]:
        """The relay census and the Wasm figures (the local stats route)."""
        ...


# A route that answers before the kill switch, the settings, CORS and keys: it handles every
# method itself.
EarlyHandler = Callable[[WebRequest, Lookup, Shell], WebResponse]
# Set by the local launcher only (no wrangler.toml environment sets it): turns on the
# local-only routes. Deployed, they are not found.
LOCAL_VAR = "LOCAL_DEV_STATS"
# An early route answers GET (and HEAD, its headers); OPTIONS is 204 with Allow and no CORS: a
# page of another origin has no business with it.
EARLY_ALLOW = "GET, HEAD, OPTIONS"
ErrorRenderer = Callable[[ApiError], WebResponse]


def app_error(error: ApiError) -> WebResponse:
    return json_response(
        error.status,
        {"error": error.code, "message": error.message},
        error.headers,
        code=error.code,
    )


async def parse_body(ctx: Context) -> dict[str, Any]:
    request = ctx.request
    check_content_type(request.headers.get("content-type"))
    body = await read_body(
        request.body, request.headers.get("content-length"), ctx.settings.max_body_bytes
    )
    return parse_json(body)


async def open_upstream(ctx: Context, model: str, inputs: dict[str, Any]) -> Upstream:
    """env.AI.run(): bounded by the idle limit too, since a model that never answers is silent."""
    return (await open_answer(ctx, model, inputs)).source


@dataclass(frozen=True, slots=True, kw_only=True)
class Opened:
    source: Upstream
    model: str  # the model that answers: the one asked, or a fallback


async def open_answer(
    ctx: Context, model: str, inputs: dict[str, Any], *, conversation: str | None = None
) -> Opened:
    """The first model of the asked one and AI_FALLBACK_MODELS that answers. A fallback is
    tried only when the model before it is busy (3040) or needs a paid plan (5035), and only
    before the first byte: once run() has answered, the answer is that model's. Every call
    but the last is made with rejectIfBusy, so a busy model fails at once instead of queueing;
    the last one queues, as a call without fallbacks does. `conversation`: the session key."""
    plan = []
    for name in fallback.candidates(model, ctx.settings.fallback_models):
        sent = fallback.inputs_for(name, inputs, model)
        if sent is None:
            continue
        if name == model:
            budget.check(model, sent)  # the asked model's window: the client's to fix
        elif not budget.fits(name, sent):
            continue
        plan.append((name, sent))
    limit = ctx.settings.give_up_after
    for i, (name, sent) in enumerate(plan):
        last = i == len(plan) - 1
        options = RunOptions(reject_if_busy=not last, affinity=conversation, key_id=ctx.key_id)
        try:
            # Whatever field carried it (a tool's arguments, say), no lone surrogate goes upstream.
            source = await ctx.model.stream(
                name, well_formed_json(sent), timeout=limit, options=options
            )
        except UpstreamSilent:
            log.error("env.AI.run(%r) sent nothing for %gs", name, limit)
            raise ApiError(
                504, "upstream_timeout", f"The model sent nothing for {limit:g} seconds."
            ) from None
        except UpstreamFailure as exc:
            code, _ = upstream_errors.parse(str(exc))
            error, detail = upstream_errors.classify(str(exc), model=name, now=time.time())
            if not last and code in upstream_errors.FALLBACK_CODES:
                log.warning("%s; trying %s", detail, plan[i + 1][0])
                continue
            log.error("%s", detail)
            raise error from exc
        return Opened(source=source, model=name)
    raise AssertionError(
        "the asked model is always in the plan"
    )  # budget.check raised, or it was called


async def answer_whole(ctx: Context, source: Upstream, relay: Relay) -> Finished:
    """A non-streamed answer: the relay run to its end (its encoder keeps what it needs), a
    one-shot result at once, a stream through the model's drain, so silence times out, not
    length. A failure is the client's error (504 for silence, else 502); no ending at all means
    the client went away."""
    if isinstance(source, OneShot):
        relay_whole(relay, source)
    else:
        await ctx.model.drain(source, relay)
    ending = relay.ending
    if isinstance(ending, Failed):
        raise ApiError(
            504 if ending.code == "upstream_timeout" else 502, ending.code, ending.message
        )
    if ending is None:
        raise ClientGone()
    return ending


def new_relay(
    ctx: Context, encoder: Encoder, max_tokens: int, model: str, stops: tuple[str, ...] = ()
) -> Relay:
    s = ctx.settings
    timing = Timing(ping_after=s.ping_after, give_up_after=s.give_up_after)
    opens = catalog.info(model).opens_thinking
    return Relay(
        encoder,
        timing,
        now=time.monotonic(),
        max_tokens=max_tokens,
        opens_thinking=opens,
        stops=stops,
    )


async def chat(ctx: Context) -> WebResponse:
    request = parse_chat(await parse_body(ctx), ctx.settings)
    conversation = affinity.key([ctx.request.headers.get(affinity.HEADER)], request.messages)
    opened = await open_answer(ctx, request.model, request.ai_inputs(), conversation=conversation)
    # message_stop names the model only when a fallback answered instead of the one asked.
    encoder = ChatEncoder(model=None if opened.model == request.model else opened.model)
    relay = new_relay(ctx, encoder, request.max_tokens, opened.model, request.stop)
    return WebResponse(
        status=200, headers=SSE_HEADERS, body=Relayed(source=opened.source, relay=relay)
    )


async def models(ctx: Context) -> WebResponse:
    s = ctx.settings
    limits = {
        "max_messages": s.max_messages,
        "max_message_chars": s.max_message_chars,
        "max_body_bytes": s.max_body_bytes,
        "max_images": s.max_images,
        "max_image_bytes": s.max_image_bytes,
        "max_tokens_limit": s.max_tokens_limit,
        "default_max_tokens": s.default_max_tokens,
    }
    reasoning = [m for m in s.models if catalog.info(m).reasons]
    capabilities = {m: catalog.capabilities(m) for m in s.models}
    body = {
        "models": list(s.models),
        "default": s.default_model,
        "reasoning": reasoning,
        "capabilities": capabilities,
        "limits": limits,
        # The page keeps its chats as durable conversations when this deployment has them.
        "conversations": ctx.conversations is not None,
        "version": VERSION,
    }
    return json_response(200, body)


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    methods: Mapping[str, Handler]
    render_error: ErrorRenderer
    access: Access | None = KEY_ONLY  # who may call it when API_KEYS is set (None: anyone)
    metered: bool = False  # it calls the model, so it costs neurons: rate limited
    # Answers before the kill switch and every policy (health: needed exactly when those are
    # off or broken); `methods` is then empty.
    early: EarlyHandler | None = None
    local_only: bool = False  # a route of local runs only (LOCAL_VAR); deployed, not found

    @property
    def allow(self) -> str:
        if self.early is not None:
            return EARLY_ALLOW
        head = ["HEAD"] if "GET" in self.methods and "HEAD" not in self.methods else []
        return ", ".join([*self.methods, *head, "OPTIONS"])

    def handler(self, method: str) -> Handler | None:
        """HEAD is GET without the body (handle() drops it)."""
        return self.methods.get("GET" if method == "HEAD" else method)


@dataclass(frozen=True, slots=True, kw_only=True)
class Api:
    """One API's routes, and the error shape of any other path under its prefix.

    ``prefix_routes`` serve every path that starts with their key (``/v1/models/`` + an id
    that has slashes of its own); the handler reads the rest of the path. ``pattern_routes``
    serve the paths their regular expression matches whole (``/api/v1/conversations/[^/]+``).
    """

    prefix: str
    routes: Mapping[str, Route]
    render_error: ErrorRenderer
    prefix_routes: Mapping[str, Route] = field(default_factory=dict)
    pattern_routes: Mapping[str, Route] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteTable:
    routes: Mapping[str, Route]
    apis: tuple[Api, ...]
    prefix_routes: tuple[tuple[str, Route], ...] = ()
    pattern_routes: tuple[tuple[re.Pattern[str], Route], ...] = ()

    @classmethod
    def of(cls, *apis: Api) -> RouteTable:
        return cls(
            routes={path: route for api in apis for path, route in api.routes.items()},
            apis=apis,
            prefix_routes=tuple(item for api in apis for item in api.prefix_routes.items()),
            pattern_routes=tuple(
                (re.compile(p), r) for api in apis for p, r in api.pattern_routes.items()
            ),
        )

    def find(self, path: str) -> Route | None:
        """An exact route first; then a pattern that matches the whole path; then the first
        prefix route whose prefix leaves something."""
        route = self.routes.get(path)
        if route is not None:
            return route
        for pattern, candidate in self.pattern_routes:
            if pattern.fullmatch(path):
                return candidate
        for prefix, candidate in self.prefix_routes:
            if path.startswith(prefix) and len(path) > len(prefix):
                return candidate
        return None

    def not_found(self, path: str) -> WebResponse:
        render = next(
            (api.render_error for api in self.apis if path.startswith(api.prefix)), app_error
        )
        return render(ApiError(404, "not_found", f"no route for {clip(path)}"))


CHAT_API = Api(
    prefix="/api/",
    routes={
        "/api/v1/chat": Route(
            methods={"POST": chat}, render_error=app_error, access=PAGE_OR_KEY, metered=True
        ),
        "/api/v1/models": Route(
            methods={"GET": models}, render_error=app_error, access=PAGE_OR_KEY
        ),
    },
    render_error=app_error,
)


def cors_headers(request: WebRequest, allowed: tuple[str, ...]) -> Headers | None:
    """CORS headers for an allowed (or absent) Origin; None when the origin is refused."""
    origin = request.headers.get("origin")
    if origin is None or origin == origin_of(request.url):
        return ()
    if "*" in allowed:
        return (("access-control-allow-origin", "*"),)
    if origin in allowed:
        return (("access-control-allow-origin", origin),)
    return None


def preflight(request: WebRequest, route: Route, cors: Headers) -> WebResponse:
    """OPTIONS: 204 with Allow; a CORS preflight from an allowed origin also gets what the
    browser asked about."""
    headers: Headers = (("allow", route.allow),)
    if not cors or request.headers.get("access-control-request-method") is None:
        return WebResponse(status=204, headers=headers)
    headers = (
        *cors,
        ("access-control-allow-methods", route.allow),
        ("access-control-max-age", "86400"),
        *headers,
    )
    wanted = request.headers.get("access-control-request-headers")
    if wanted:
        headers += (
            ("access-control-allow-headers", wanted),
            ("vary", "Access-Control-Request-Headers"),
        )
    return WebResponse(status=204, headers=headers)


async def handle(
    request: WebRequest,
    env: Lookup,
    model: ChatModel,
    table: RouteTable,
    *,
    limiter: Limiter | None,
    key_limiter: Limiter | None = None,
    conversations: Conversations | None = None,
    shell: Shell | None = None,
) -> WebResponse:
    """Every answer, error or not, leaves through here with API_HEADERS."""
    route = table.find(request.path)
    if route is not None and route.early is not None and shell is not None:
        return _early(request, env, table, route.early, route.local_only, shell)
    answer = (
        await _answer(request, env, model, table, limiter, key_limiter, conversations)
    ).with_headers(API_HEADERS)
    return without_body(answer) if request.method == "HEAD" else answer


def not_allowed(request: WebRequest, allow: str) -> ApiError:
    """405 for a method the route does not take, with its Allow header."""
    return ApiError(
        405,
        "method_not_allowed",
        f"{clip(request.method)} is not allowed on {request.path}; use {allow}",
        headers=(("allow", allow),),
    )


def _early(
    request: WebRequest,
    env: Lookup,
    table: RouteTable,
    early: EarlyHandler,
    local_only: bool,
    shell: Shell,
) -> WebResponse:
    """A route that answers before the kill switch and every policy (health, local stats)."""
    if local_only and env(LOCAL_VAR) != "1":
        return table.not_found(request.path).with_headers(API_HEADERS)
    allow = (("allow", EARLY_ALLOW),)
    if request.method == "OPTIONS":
        return WebResponse(status=204, headers=allow + API_HEADERS)
    if request.method not in ("GET", "HEAD"):
        return app_error(not_allowed(request, EARLY_ALLOW)).with_headers(API_HEADERS)
    answer = early(request, env, shell).with_headers(API_HEADERS)
    return without_body(answer) if request.method == "HEAD" else answer


async def _answer(
    request: WebRequest,
    env: Lookup,
    model: ChatModel,
    table: RouteTable,
    limiter: Limiter | None,
    key_limiter: Limiter | None,
    conversations: Conversations | None,
) -> WebResponse:
    route = table.find(request.path)
    if route is None:
        return table.not_found(request.path)
    if config.chat_disabled(env):
        return route.render_error(
            ApiError(503, "ai_unavailable", "The AI chat service is turned off; try again later.")
        )
    try:
        settings = config.load(env)
    except SettingsError as exc:
        log.error("misconfigured: %s", exc)
        return route.render_error(
            ApiError(500, "server_misconfigured", "The service is misconfigured.")
        )
    cors = cors_headers(request, settings.allowed_origins)
    if cors is None:
        origin = request.headers.get("origin")
        return route.render_error(
            ApiError(403, "origin_not_allowed", f"Origin {clip(origin or '')} is not allowed")
        )
    if request.method == "OPTIONS":
        return preflight(request, route, cors)
    handler = route.handler(request.method)
    if handler is None:
        return route.render_error(not_allowed(request, route.allow)).with_headers(cors)
    refusal = await guard(
        request,
        access=route.access,
        metered=route.metered,
        env=env,
        limiter=limiter,
        key_limiter=key_limiter,
    )
    if refusal is not None:
        return route.render_error(refusal).with_headers(cors)
    presented = (
        bearer(request.headers) if Keys.parse(env(SECRET)) else None
    )  # guard() found it valid
    context = Context(
        request=request,
        settings=settings,
        model=model,
        conversations=conversations,
        key_id=key_id(presented) if presented else None,
    )
    try:
        response = await handler(context)
    except ApiError as error:
        response = route.render_error(error)
    except Exception:
        # A bug, not the client's fault; still an answer in the API's shape, not a traceback page.
        log.exception("%s %s failed", request.method, request.path)
        response = route.render_error(
            ApiError(500, "internal_error", "The request could not be handled.")
        )
    return response.with_headers(cors)
