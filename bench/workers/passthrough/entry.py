"""The floor for a Python Worker: env.AI.run()'s stream returned untouched.

It does what the relay does before the first byte (read the JSON body, call the binding with
a plain JS object) and nothing after it, so the relay's cost over it is the relay's own.
"""

from __future__ import annotations

import json
from typing import Any

import js
from pyodide.ffi import to_js
from workers import Response, WorkerEntrypoint


class Default(WorkerEntrypoint):  # type: ignore[misc]  # the SDK has no stubs
    async def fetch(self, request: Any) -> Any:
        body = json.loads(await request.text())
        inputs = {
            "messages": body["messages"],
            "stream": True,
            "max_tokens": body.get("max_tokens", 1024),
        }
        stream = await self.env.AI.run(
            body.get("model", "@cf/google/gemma-4-26b-a4b-it"),
            to_js(inputs, dict_converter=js.Object.fromEntries),
        )
        headers = js.Headers.new()
        headers.append("content-type", "text/event-stream; charset=utf-8")
        return Response(stream, headers=headers)
