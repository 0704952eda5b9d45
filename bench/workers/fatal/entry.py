"""What the pinned workerd does with an isolate whose Pyodide died (issue 22); bench/probes/fatal_check.py
drives it.

GET /          "ok"
GET /api       what workerd's `cloudflare:workers` module offers Python (abortIsolate or not)
GET /fatal     Pyodide's own fatal error path (_pyodide_core.trigger_fatal_error(), as workerd's
               python-abort-isolate-on-fatal test does), which calls workerd's on_fatal hook
"""

from __future__ import annotations

import js
from workers import Response, WorkerEntrypoint


class Default(WorkerEntrypoint):  # type: ignore[misc]
    async def fetch(self, request: object) -> Response:
        path = str(js.URL.new(request.url).pathname)  # type: ignore[attr-defined]
        if path == "/api":
            from _pyodide_entrypoint_helper import cloudflareWorkersModule  # type: ignore[import-not-found]

            names = sorted(str(k) for k in js.Reflect.ownKeys(cloudflareWorkersModule))
            return Response(",".join(names))
        if path == "/fatal":
            from _pyodide_core import trigger_fatal_error  # type: ignore[import-not-found]

            trigger_fatal_error()
        return Response("ok")
