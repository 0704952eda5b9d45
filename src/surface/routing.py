"""Routes: the route table every request is looked up in, each API's routes and error shape, the
request context a handler gets, and what only the Worker shell knows (early routes)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from base.errors import ApiError, clip
from base.settings import Lookup, Settings
from surface.access import Identity
from surface.body import check_content_type, parse_json, read_body
from surface.daily_budget import Budgets
from surface.guard import KEY_ONLY, Access
from surface.web import WebRequest, WebResponse, json_response
from workers_ai.service import ChatModel


class Conversations(Protocol):
    async def call(
        self,
        id: str,
        op: str,
        payload: dict[str, Any] | None = None,
        *,
        after: str | None = None,
        owner: str | None = None,
    ) -> WebResponse:
        """One operation on the durable conversation `id` (its Durable Object), whose answer is
        sent on as it is: create, get, delete, messages, stream, stop. `owner`: who asks (the
        object refuses an owned conversation to anyone else), or None."""
        ...


class OwnerIndexes(Protocol):
    async def call(self, owner: str, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        """One operation on the owner's index of conversations (its Durable Object): touch,
        remove, list; its JSON answer. Raises when the index cannot be reached or fails."""
        ...


class StoredResponses(Protocol):
    """Stored Responses (doors/responses/responses_stored.py): one Durable Object each."""

    async def load(self, id: str, owner: str) -> dict[str, Any] | None:
        """The record of response `id` if it is `owner`'s and has not expired, else None."""
        ...

    async def link(
        self, id: str, owner: str, keep_until: float | None, *, deleted_too: bool = False
    ) -> dict[str, Any] | None:
        """Response `id` as a link of a chain another response continues: as load(), and
        (deleted_too) also when it was deleted but is kept for what continues it; keep_until:
        keep it at least until then, for a response about to be stored that refers to it."""
        ...

    async def delete(self, id: str, owner: str) -> bool:
        """Deletes response `id` if it is `owner`'s; whether it did (one that others continue
        is no longer read, continued or listed, and its items stay for them until they go)."""
        ...

    def save(self, id: str, owner: str, record: dict[str, Any], expires_at: float) -> None:
        """Starts the write; the request's context is kept alive until it is done."""
        ...

    async def put(self, id: str, owner: str, record: dict[str, Any], expires_at: float) -> None:
        """Writes it, and returns once it is written (a whole answer: stored before it is sent)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    request: WebRequest
    settings: Settings
    model: ChatModel
    conversations: Conversations | None = None  # None: no CONVERSATIONS binding
    key_id: str | None = None  # the id of the valid API key the request presented
    responses: StoredResponses | None = None  # None: no RESPONSES binding (nothing stored)
    owner_indexes: OwnerIndexes | None = None  # None: no OWNERS binding
    env: Lookup | None = None  # the vars and secrets, for what Settings does not hold
    identity: Identity | None = None  # the Cloudflare Access identity, when Access is on
    budgets: Budgets | None = None  # None: no BUDGETS binding (daily_budget.py)


Handler = Callable[[Context], Awaitable[WebResponse]]


class Shell(Protocol):
    """What only the Worker shell knows, for the routes that answer before any policy."""

    def binding_names(self) -> list[str]:
        """The names (never the values) of the bindings present."""
        ...

    def runtime_stats(self) -> dict[str, object]:
        """The relay census and the Wasm figures (the local stats route)."""
        ...

    def runtime(self) -> dict[str, str | None]:
        """The running interpreter: {"python": "3.14.2", "pyodide": "314.0.4"}."""
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    methods: Mapping[str, Handler]
    render_error: ErrorRenderer
    access: Access | None = KEY_ONLY  # who may call it when API_KEYS is set (None: anyone)
    metered: bool = False  # it calls the model, so it costs neurons: rate limited
    reads: bool = False  # it reads a Durable Object: rate limited on a limit of its own
    # Methods of a metered route that only read (GET a list): counted as reads instead.
    read_methods: tuple[str, ...] = ()
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
        return self.error_at(path, ApiError(404, "not_found", f"no route for {clip(path)}"))

    def error_at(self, path: str, error: ApiError) -> WebResponse:
        """An error on a path no route takes, in the shape of the first API it is under."""
        render = next(
            (api.render_error for api in self.apis if path.startswith(api.prefix)), app_error
        )
        return render(error)


def not_allowed(request: WebRequest, allow: str) -> ApiError:
    """405 for a method the route does not take, with its Allow header."""
    return ApiError(
        405,
        "method_not_allowed",
        f"{clip(request.method)} is not allowed on {clip(request.path)}; use {allow}",
        headers=(("allow", allow),),
    )
