"""Routing and policy: kill switch, CORS, limits, validation, then the streamed answer."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import settings as config
import upstream_errors
from chat_events import ChatEncoder
from chat_request import check_content_type, parse_chat, parse_json, read_body
from errors import ApiError
from relay import Encoder, Relay, Timing, Upstream
from settings import Lookup, Settings, SettingsError
from version import VERSION
from web import SSE_HEADERS, Headers, Relayed, WebRequest, WebResponse, json_response

log = logging.getLogger("app")


class UpstreamFailure(Exception):
    """env.AI.run() failed before any byte of the answer was streamed."""


class ChatModel(Protocol):
    async def stream(self, model: str, inputs: dict[str, Any]) -> Upstream: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    request: WebRequest
    settings: Settings
    model: ChatModel


Handler = Callable[[Context], Awaitable[WebResponse]]
ErrorRenderer = Callable[[ApiError], WebResponse]


def app_error(error: ApiError) -> WebResponse:
    return json_response(
        error.status, {"error": error.code, "message": error.message}, error.headers
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
    limit = ctx.settings.give_up_after
    try:
        return await asyncio.wait_for(ctx.model.stream(model, inputs), timeout=limit)
    except TimeoutError:
        log.error("env.AI.run(%r) sent nothing for %gs", model, limit)
        raise ApiError(504, "upstream_timeout", f"The model sent nothing for {limit:g} seconds.") from None
    except UpstreamFailure as exc:
        error, detail = upstream_errors.classify(str(exc), model=model, now=time.time())
        log.error("%s", detail)
        raise error from exc


def new_relay(ctx: Context, encoder: Encoder, max_tokens: int) -> Relay:
    s = ctx.settings
    timing = Timing(ping_after=s.ping_after, give_up_after=s.give_up_after)
    return Relay(encoder, timing, now=time.monotonic(), max_tokens=max_tokens)


async def chat(ctx: Context) -> WebResponse:
    request = parse_chat(await parse_body(ctx), ctx.settings)
    source = await open_upstream(ctx, request.model, request.ai_inputs())
    relay = new_relay(ctx, ChatEncoder(), request.max_tokens)
    return WebResponse(status=200, headers=SSE_HEADERS, body=Relayed(source=source, relay=relay))


async def models(ctx: Context) -> WebResponse:
    s = ctx.settings
    return json_response(200, {"models": list(s.models), "default": s.default_model, "version": VERSION})


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    methods: Mapping[str, Handler]
    render_error: ErrorRenderer

    @property
    def allow(self) -> str:
        return ", ".join([*self.methods, "OPTIONS"])


@dataclass(frozen=True, slots=True, kw_only=True)
class Api:
    """One API's routes, and the error shape of any other path under its prefix."""

    prefix: str
    routes: Mapping[str, Route]
    render_error: ErrorRenderer


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteTable:
    routes: Mapping[str, Route]
    apis: tuple[Api, ...]

    @classmethod
    def of(cls, *apis: Api) -> RouteTable:
        return cls(routes={path: route for api in apis for path, route in api.routes.items()}, apis=apis)

    def not_found(self, path: str) -> WebResponse:
        render = next((api.render_error for api in self.apis if path.startswith(api.prefix)), app_error)
        return render(ApiError(404, "not_found", f"no route for {path}"))


CHAT_API = Api(
    prefix="/api/",
    routes={
        "/api/v1/chat": Route(methods={"POST": chat}, render_error=app_error),
        "/api/v1/models": Route(methods={"GET": models}, render_error=app_error),
    },
    render_error=app_error,
)


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def cors_headers(request: WebRequest, allowed: tuple[str, ...]) -> Headers | None:
    """CORS headers for an allowed (or absent) Origin; None when the origin is refused."""
    origin = request.headers.get("origin")
    if origin is None or origin == _origin_of(request.url):
        return ()
    if "*" in allowed:
        return (("access-control-allow-origin", "*"),)
    if origin in allowed:
        return (("access-control-allow-origin", origin), ("vary", "Origin"))
    return None


def preflight(request: WebRequest, route: Route, cors: Headers) -> WebResponse:
    headers = cors + (
        ("access-control-allow-methods", route.allow),
        ("access-control-max-age", "86400"),
        ("allow", route.allow),
    )
    wanted = request.headers.get("access-control-request-headers")
    if wanted:
        headers += (("access-control-allow-headers", wanted), ("vary", "Access-Control-Request-Headers"))
    return WebResponse(status=204, headers=headers)


async def handle(request: WebRequest, env: Lookup, model: ChatModel, table: RouteTable) -> WebResponse:
    route = table.routes.get(request.path)
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
            ApiError(403, "origin_not_allowed", f"Origin {origin} is not allowed")
        )
    if request.method == "OPTIONS":
        return preflight(request, route, cors)
    handler = route.methods.get(request.method)
    if handler is None:
        error = ApiError(
            405,
            "method_not_allowed",
            f"{request.method} is not allowed on {request.path}; use {route.allow}",
            headers=(("allow", route.allow),),
        )
        return route.render_error(error).with_headers(cors)
    try:
        response = await handler(Context(request=request, settings=settings, model=model))
    except ApiError as error:
        response = route.render_error(error)
    return response.with_headers(cors)
