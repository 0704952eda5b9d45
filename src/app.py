"""Routing and policy: kill switch, CORS, limits, validation, then the streamed answer."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import settings as config
from chat_events import ChatEncoder
from chat_request import check_content_type, parse_chat, parse_json, read_body
from errors import ApiError, clip
from relay import ByteSource, Encoder, Relay, Timing
from settings import Lookup, Settings, SettingsError
from web import API_HEADERS, SSE_HEADERS, Headers, Relayed, WebRequest, WebResponse, json_response

log = logging.getLogger("app")


class UpstreamFailure(Exception):
    """env.AI.run() failed before any byte of the answer was streamed."""


class ChatModel(Protocol):
    async def stream(self, model: str, inputs: dict[str, Any]) -> ByteSource: ...


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


async def open_upstream(ctx: Context, model: str, inputs: dict[str, Any]) -> ByteSource:
    try:
        return await ctx.model.stream(model, inputs)
    except UpstreamFailure as exc:
        log.error("env.AI.run(%r) failed: %s", model, exc)
        raise ApiError(502, "upstream_error", "The model could not be reached.") from exc


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
    return json_response(200, {"models": list(s.models), "default": s.default_model})


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    methods: Mapping[str, Handler]
    render_error: ErrorRenderer

    @property
    def allow(self) -> str:
        return ", ".join([*self.methods, "OPTIONS"])


ROUTES: dict[str, Route] = {
    "/api/v1/chat": Route(methods={"POST": chat}, render_error=app_error),
    "/api/v1/models": Route(methods={"GET": models}, render_error=app_error),
}


# Unknown paths under a prefix answer in that API's error shape.
PREFIX_ERRORS: dict[str, ErrorRenderer] = {}


def add_routes(routes: Mapping[str, Route], *, prefix: str, render_error: ErrorRenderer) -> None:
    ROUTES.update(routes)
    PREFIX_ERRORS[prefix] = render_error


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
        return (("access-control-allow-origin", origin),)
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


def not_found(path: str) -> WebResponse:
    render = next((r for p, r in PREFIX_ERRORS.items() if path.startswith(p)), app_error)
    return render(ApiError(404, "not_found", f"no route for {clip(path)}"))


async def handle(request: WebRequest, env: Lookup, model: ChatModel) -> WebResponse:
    """Every answer, error or not, leaves through here with API_HEADERS."""
    return (await _answer(request, env, model)).with_headers(API_HEADERS)


async def _answer(request: WebRequest, env: Lookup, model: ChatModel) -> WebResponse:
    route = ROUTES.get(request.path)
    if route is None:
        return not_found(request.path)
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
    handler = route.methods.get(request.method)
    if handler is None:
        error = ApiError(
            405,
            "method_not_allowed",
            f"{clip(request.method)} is not allowed on {request.path}; use {route.allow}",
            headers=(("allow", route.allow),),
        )
        return route.render_error(error).with_headers(cors)
    try:
        response = await handler(Context(request=request, settings=settings, model=model))
    except ApiError as error:
        response = route.render_error(error)
    except Exception:
        # A bug, not the client's fault; still an answer in the API's shape, not a traceback page.
        log.exception("%s %s failed", request.method, request.path)
        response = route.render_error(
            ApiError(500, "internal_error", "The request could not be handled.")
        )
    return response.with_headers(cors)
