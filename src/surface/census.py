"""The relay pipes' census, for the local stats route only (LOCAL_DEV_STATS, which only the
launcher sets): how many pipes and proxies were made and released, which are still alive, and
what Python objects the heap holds by type. The soak and the leak tests read it
(bench/notes/2026-11-24-soak.md). Counting costs a dict update per pipe; the heap walk runs
only when the route asks.
"""

from __future__ import annotations

import gc
import json
import weakref
from typing import Any

from base.settings import Lookup
from surface.routing import Api, Route, Shell, app_error
from surface.web import JSON_HEADERS, WebRequest, WebResponse

# Alive while their proxies are: a leaked proxy keeps its owner here.
_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()
_COUNTS = {
    "created": 0,
    "destroyed": 0,
    "relays": 0,
    "relays_ended": 0,
    "clients_gone": 0,
    "window_reads": 0,
    "window_waits": 0,
    "holds": 0,
}


def pipe_made(owner: Any, proxies: int) -> None:
    _COUNTS["created"] += proxies
    _COUNTS["relays"] += 1
    _LIVE.add(owner)


def proxies_destroyed(owner: Any, proxies: int) -> None:
    _COUNTS["destroyed"] += proxies
    _LIVE.discard(owner)


def pipe_ended() -> None:
    _COUNTS["relays_ended"] += 1


def window_read(waited: bool) -> None:
    """A read of the windowed reader, and whether a window follows it."""
    _COUNTS["window_reads"] += 1
    if waited:
        _COUNTS["window_waits"] += 1


def held() -> None:
    """A pipe held back for its client (its backlog full)."""
    _COUNTS["holds"] += 1


def client_gone() -> None:
    _COUNTS["clients_gone"] += 1


def live_streams() -> dict[str, Any]:
    """The census now, after a full collection."""
    # What the collection found unreachable: garbage requests left in cycles since the last one.
    collected = gc.collect()
    objects = gc.get_objects()
    # Every type, commonest first, so that a growing count says what grows, a few survivors of
    # ours included (the 40 commonest hid them: bench/notes/2026-11-24-soak.md).
    kinds: dict[str, int] = {}
    for obj in objects:
        name = type(obj).__qualname__
        kinds[name] = kinds.get(name, 0) + 1
    top = dict(sorted(kinds.items(), key=lambda kv: -kv[1]))
    # What the live pipes' bodies hold for their clients (queued in workerd, outside the JS
    # heap the inspector sees): bench/paused.mjs adds it to the isolate's figure.
    backlog = sum(owner.backlog() for owner in list(_LIVE) if hasattr(owner, "backlog"))
    return {
        "live": len(_LIVE),
        "backlog_bytes": backlog,
        **_COUNTS,
        "py_objects": len(objects),
        "gc_collected": collected,
        "py_types": top,
    }


def _route(_request: WebRequest, _env: Lookup, shell: Shell) -> WebResponse:
    return WebResponse(
        status=200, headers=JSON_HEADERS, body=json.dumps(shell.runtime_stats()).encode()
    )


STATS_PATH = "/__local/stats"
# Local runs only: the launcher sets app.LOCAL_VAR; deployed, the path is not found.
STATS_API = Api(
    prefix="/__local/",
    routes={
        STATS_PATH: Route(
            methods={}, render_error=app_error, early=_route, local_only=True, access=None
        )
    },
    render_error=app_error,
)
