"""A Worker whose requests suspend the Wasm stack (JSPI) in the middle of C frames, for the
stack-pointer fix of issue 22 (bench/probes/suspend_check.py drives it).

GET /sp             the Wasm stack pointer now
GET /run/<ms>/<n>   sort n numbers whose key suspends the whole Wasm stack for <ms> ms
                    (run_sync inside sorted(), a C frame): with many requests at once, tasks
                    suspend and resume in every order; the answer must still be exact.
"""

from __future__ import annotations

import js
import pyodide_js  # type: ignore[import-not-found]
from pyodide.ffi import run_sync
from workers import Response, WorkerEntrypoint


class Default(WorkerEntrypoint):  # type: ignore[misc]
    async def fetch(self, request: object) -> Response:
        parts = str(js.URL.new(request.url).pathname).strip("/").split("/")  # type: ignore[attr-defined]
        if parts[0] == "sp":
            return Response(str(int(pyodide_js._module.stackSave())))
        wait_ms, n = int(parts[1]), int(parts[2])

        def key(i: int) -> int:
            run_sync(js.scheduler.wait((wait_ms * (i + 1)) % 13))
            return -i

        got = sorted(range(n), key=key)
        want = list(range(n))[::-1]
        return Response("ok" if got == want else f"WRONG {got}", status=200 if got == want else 500)
