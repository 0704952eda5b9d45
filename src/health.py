"""GET /api/v1/health: what an operator checks first, without calling the model.

Cheap and safe to expose: the version, the environment's name, the kill switch, whether the
settings load, and the names (never the values) of the bindings present. It answers even with
the kill switch on or the settings broken, since that is when it is needed.
"""

from __future__ import annotations

from collections.abc import Iterable

import catalog
import settings as config
from app import Api, Route, Shell, app_error
from errors import ApiError, clip
from settings import Lookup, SettingsError
from version import VERSION
from web import API_HEADERS, WebRequest, WebResponse, json_response, without_body

PATH = "/api/v1/health"
ALLOW = "GET, HEAD, OPTIONS"


def health(method: str, env: Lookup, bindings: Iterable[str]) -> WebResponse:
    """GET, HEAD (its headers), OPTIONS (204 with Allow: no CORS here, a browser page of
    another origin has no business with it); anything else is 405."""
    allow = (("allow", ALLOW),)
    if method == "OPTIONS":
        return WebResponse(status=204, headers=allow + API_HEADERS)
    if method == "HEAD":
        return without_body(health("GET", env, bindings))
    if method != "GET":
        return app_error(
            ApiError(
                405,
                "method_not_allowed",
                f"{clip(method)} is not allowed on {PATH}; use {ALLOW}",
                headers=allow,
            )
        ).with_headers(API_HEADERS)
    try:
        config.load(env)
        settings_ok = True
    except SettingsError:
        settings_ok = False
    disabled = config.chat_disabled(env)
    body = {
        "status": "disabled" if disabled else "ok" if settings_ok else "misconfigured",
        "version": VERSION,
        "environment": env("ENVIRONMENT") or "unknown",
        "kill_switch": "on" if disabled else "off",
        "settings": "ok" if settings_ok else "invalid",
        "bindings": sorted(bindings),
        "catalog": catalog.source(),  # "live": this isolate has env.AI.models()'s facts
    }
    return json_response(200, body, API_HEADERS)


def _route(request: WebRequest, env: Lookup, shell: Shell) -> WebResponse:
    return health(request.method, env, shell.binding_names())


# Before the kill switch: it says whether the switch is on.
HEALTH_API = Api(
    prefix=PATH,
    routes={PATH: Route(methods={}, render_error=app_error, early=_route, access=None)},
    render_error=app_error,
)
