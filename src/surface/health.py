"""GET /api/v1/health: what an operator checks first, without calling the model.

Cheap and safe to expose: the version, the environment's name, the kill switch, whether the
settings load, the names (never the values) of the bindings present, and the Python and Pyodide
the isolate runs (read from the interpreter, so a deploy's runtime is seen, not assumed). It answers even with
the kill switch on or the settings broken, since that is when it is needed.
"""

from __future__ import annotations

from collections.abc import Iterable

from base import catalog
from base import settings as config
from base.settings import Lookup, SettingsError
from base.version import VERSION
from surface import access, daily_budget
from surface.routing import Api, Route, Shell, app_error
from surface.web import WebRequest, WebResponse, json_response

PATH = "/api/v1/health"


def health(env: Lookup, bindings: Iterable[str], runtime: dict[str, str | None]) -> WebResponse:
    """The GET answer (app.handle answers HEAD, OPTIONS and other methods of early routes)."""
    try:
        config.load(env)
        access.config(env)
        daily_budget.limit(env)
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
        "runtime": runtime,
    }
    return json_response(200, body)


def _route(request: WebRequest, env: Lookup, shell: Shell) -> WebResponse:
    return health(env, shell.binding_names(), shell.runtime())


# Before the kill switch: it says whether the switch is on.
HEALTH_API = Api(
    prefix=PATH,
    routes={PATH: Route(methods={}, render_error=app_error, early=_route, access=None)},
    render_error=app_error,
)
