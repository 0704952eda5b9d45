"""The policy every request passes, in order: the early routes (health, local stats), the kill
switch, the settings, CORS, the method, Cloudflare Access (access.py, when configured), keys
and rate limits (guard.py), then the route's handler; every answer leaves with API_HEADERS."""

from __future__ import annotations

import logging
import time

from base import settings as config
from base.errors import ApiError, clip
from base.settings import Lookup, SettingsError
from surface import access, daily_budget, rate_limit
from surface.api_keys import SECRET, Keys, bearer, key_id
from surface.guard import guard
from surface.rate_limit import Limiter
from surface.request_log import CURRENT, HASH_KEY_VAR, id_hash, redacted
from surface.routing import (
    EARLY_ALLOW,
    LOCAL_VAR,
    Context,
    Conversations,
    EarlyHandler,
    OwnerIndexes,
    Route,
    RouteTable,
    Shell,
    StoredResponses,
    app_error,
    not_allowed,
)
from surface.usage_api import budget_owner
from surface.web import API_HEADERS, Headers, WebRequest, WebResponse, origin_of, without_body
from workers_ai import gateway
from workers_ai.service import ChatModel

log = logging.getLogger("policy")


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
    read_limiter: Limiter | None = None,
    conversations: Conversations | None = None,
    shell: Shell | None = None,
    responses: StoredResponses | None = None,
    owner_indexes: OwnerIndexes | None = None,
    verifier: access.Verifier | None = None,
    budgets: daily_budget.Budgets | None = None,
) -> WebResponse:
    """Every answer, error or not, leaves through here with API_HEADERS. `verifier`: the
    shell's key fetch and signature check, for Cloudflare Access; `budgets`: the owners'
    daily counts (OWNER_DAILY_TOKENS)."""
    route = table.find(request.path)
    if route is not None and route.early is not None and shell is not None:
        return _early(request, env, table, route.early, route.local_only, shell)
    answer = (
        await _answer(
            request,
            env,
            model,
            table,
            (limiter, key_limiter, read_limiter),
            (conversations, owner_indexes),
            responses,
            verifier,
            budgets,
        )
    ).with_headers(API_HEADERS)
    return without_body(answer) if request.method == "HEAD" else answer


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
    limiters: tuple[Limiter | None, Limiter | None, Limiter | None],
    durable: tuple[Conversations | None, OwnerIndexes | None],
    responses: StoredResponses | None = None,
    verifier: access.Verifier | None = None,
    budgets: daily_budget.Budgets | None = None,
) -> WebResponse:
    limiter, key_limiter, read_limiter = limiters
    conversations, owner_indexes = durable
    route = table.find(request.path)
    if route is None:
        # A path no route takes costs a request and a log line: counted as a read, per address
        # (a key counts for nothing here), so probing paths is bounded as reading is.
        bucket = rate_limit.address_key(request.headers)
        if read_limiter is not None and not await read_limiter.allow(bucket):
            return table.error_at(request.path, rate_limit.rate_limited())
        return table.not_found(request.path)
    if config.chat_disabled(env):
        return route.render_error(
            ApiError(503, "ai_unavailable", "The AI chat service is turned off; try again later.")
        )
    try:
        settings = config.load(env)
        access_settings = access.config(env)
        cap = daily_budget.limit(env)
        if cap is not None and budgets is None:
            raise SettingsError(
                f"{daily_budget.VAR} is set but the {daily_budget.BINDING} binding is not"
            )
    except SettingsError as exc:
        log.error("misconfigured: %s", exc)
        return route.render_error(ApiError(500, "server_misconfigured", exc.public_message()))
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
    reading = request.method in route.read_methods or (
        request.method == "HEAD" and "GET" in route.read_methods
    )
    identity = None
    if access_settings is not None and (
        access.HEADER in request.headers
        or bearer(request.headers) is None
        or not Keys.parse(env(SECRET))
    ):
        # A program may present one of API_KEYS instead (guard checks it); anything else needs
        # a valid Access token, and a person it names needs no key.
        try:
            identity = await access.authenticate(
                request.headers, access_settings, verifier or _NO_VERIFIER, time.time()
            )
        except ApiError as error:
            return route.render_error(error).with_headers(cors)
    refusal, key = await guard(
        request,
        access=None if identity is not None else route.access,
        metered=route.metered and not reading,
        env=env,
        limiter=limiter,
        key_limiter=key_limiter,
        reads=route.reads or reading,
        read_limiter=read_limiter,
    )
    if refusal is not None:
        return route.render_error(refusal).with_headers(cors)
    context = Context(
        request=request,
        settings=settings,
        model=model,
        conversations=conversations,
        key_id=key_id(key) if key else None,
        responses=responses,
        owner_indexes=owner_indexes,
        env=env,
        identity=identity,
        budgets=budgets,
    )
    if gateway.configured(env):
        _tag_owner(context)
    try:
        if cap is not None and budgets is not None and route.metered and not reading:
            await _within_budget(context, budgets, cap)
        response = await handler(context)
    except ApiError as error:
        response = route.render_error(error)
    except Exception:
        # A bug, not the client's fault; still an answer in the API's shape, not a traceback page.
        log.exception("%s %s failed", request.method, redacted(request.path))
        response = route.render_error(
            ApiError(500, "internal_error", "The request could not be handled.")
        )
    return response.with_headers(cors)


async def _within_budget(ctx: Context, budgets: daily_budget.Budgets, cap: int) -> None:
    """Before a model call: today's count of the request's owner under OWNER_DAILY_TOKENS (else
    429 budget_exceeded); then what the answer reports is added to it when the request's line
    is written (request_log.RequestLog.spend). A count that cannot be read refuses: never open."""
    owner = budget_owner(ctx)
    try:
        used = await budgets.used(owner)
    except Exception as exc:
        log.error("the budget could not be read: %s", exc)
        raise ApiError(
            503, "budget_unavailable", "The daily budget could not be checked; try again."
        ) from None
    if used >= cap:
        raise daily_budget.exceeded(used, cap, time.time())
    record = CURRENT.get()
    if record is not None:
        record.spend = lambda tokens: budgets.spend(owner, tokens)
        record.budget_owner = owner


def _tag_owner(ctx: Context) -> None:
    """The AI Gateway's metadata.owner for this request's calls: the owner's keyed hash."""
    record = CURRENT.get()
    if record is None or ctx.env is None:
        return
    try:
        owner = budget_owner(ctx)
    except ApiError:  # a malformed owner token: the handler refuses it
        return
    record.owner_hash = id_hash(owner, ctx.env(HASH_KEY_VAR))


class _NoVerifier:
    """Access configured with no shell to check signatures (host tests): every token fails."""

    async def fetch_keys(self, url: str) -> object:
        raise RuntimeError("no verifier")

    async def verify(self, jwk: dict[str, object], signed: bytes, signature: bytes) -> bool:
        return False


_NO_VERIFIER = _NoVerifier()
