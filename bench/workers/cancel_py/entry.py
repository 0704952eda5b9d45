"""Cancel probe (bench/probes/cancel_probe.mjs): does a client's leaving reach a Python Worker's stream?

The request's ?mode= picks the response body and whether the context is held:
- ident_nowait / ident_wait: a JS identity TransformStream (made from Python, no Python per chunk)
- same_nowait / same_wait: a TransformStream whose Python transform re-enqueues each chunk
- first_nowait / first_wait: the same, with an event enqueued from start() (before the upstream's first)
*_wait: ctx.waitUntil(a promise resolved when the upstream's pipe settles), registered at once.
Each mode listens to request.signal's abort and the transformer's cancel and counts them (GET /stats);
its proxies are never destroyed (a probe).
"""

from __future__ import annotations

import json
from typing import Any

import js
from pyodide.ffi import create_proxy, to_js
from workers import Response, WorkerEntrypoint

STATS = {"requests": 0, "aborts": 0, "cancels": 0, "settled": 0}


def _obj(value: dict[str, Any]) -> Any:
    return to_js(value, dict_converter=js.Object.fromEntries)


class Default(WorkerEntrypoint):  # type: ignore[misc]
    async def fetch(self, request: Any) -> Any:
        raw = request.js_object
        url = js.URL.new(raw.url)
        if url.pathname == "/stats":
            return Response(json.dumps(STATS))
        if (
            url.pathname == "/fr"
        ):  # does this isolate have FinalizationRegistry, and does Pyodide use it?
            import pyodide_js  # type: ignore[import-not-found]

            fr = getattr(pyodide_js._module, "finalizationRegistry", None)
            info = {
                "typeof_FinalizationRegistry": str(type(getattr(js, "FinalizationRegistry", None))),
                "module_registry": str(fr),
                "module_registry_ctor": str(
                    getattr(getattr(fr, "constructor", None), "name", None)
                ),
            }
            return Response(json.dumps(info))
        mode = str(url.searchParams.get("mode") or "same_wait")
        STATS["requests"] += 1
        body = json.loads(await request.text())
        inputs = {
            "messages": body["messages"],
            "stream": True,
            "max_tokens": body.get("max_tokens", 1024),
        }
        upstream = await self.env.AI.run(body["model"], _obj(inputs))
        headers = js.Headers.new()
        headers.append("content-type", "text/event-stream; charset=utf-8")
        done = js.Promise.withResolvers()
        if mode.endswith("_wait"):
            self.ctx.waitUntil(done.promise)

        def on_abort(_event: Any = None) -> None:
            STATS["aborts"] += 1

        def on_cancel(_reason: Any = None) -> None:
            STATS["cancels"] += 1

        def settled(_value: Any = None) -> None:
            STATS["settled"] += 1
            done.resolve()

        raw.signal.addEventListener("abort", create_proxy(on_abort))
        if mode.startswith("ident"):
            stage = js.TransformStream.new(_obj({"cancel": create_proxy(on_cancel)}))
        else:
            enqueue: list[Any] = []

            def start(controller: Any) -> None:
                enqueue.append(controller.enqueue)
                if mode.startswith(
                    "first"
                ):  # bytes before the upstream's first, as the relay sends
                    controller.enqueue(to_js(b"event: message_start\ndata: {}\n\n"))

            def transform(chunk: Any, _controller: Any) -> None:
                enqueue[0](chunk)

            stage = js.TransformStream.new(
                _obj(
                    {
                        "start": create_proxy(start),
                        "transform": create_proxy(transform),
                        "cancel": create_proxy(on_cancel),
                    }
                )
            )
        on_done = create_proxy(settled)
        upstream.pipeTo(stage.writable).then(on_done, on_done)
        return Response(stage.readable, headers=headers)
