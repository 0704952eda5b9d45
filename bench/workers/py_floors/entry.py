"""The floors under a Python re-framer (bench/notes/2026-11-29-floors.md), one Worker: the
module entry (`on_fetch`, flag disable_python_no_global_handlers), the JSON body read, env.AI.run()
with a plain JS object, then the model's stream answered as the path says:

- /direct     untouched (no pipe at all);
- /native     through an IdentityTransformStream (workerd's own, pumped natively);
- /identity   through a JS TransformStream with no transformer (pumped in JS);
- /transform  through a TransformStream whose transform() is Python, once a chunk;
- /reader     read by Python (an awaited read() a chunk), written into an
              IdentityTransformStream.

None of them re-frames: each is what any Python Worker that puts that much between the model
and the client pays at least, whatever it does with the bytes.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import js
from pyodide.ffi import create_proxy, to_js

MODEL = "@cf/google/gemma-4-26b-a4b-it"
_PUMPS: set[asyncio.Future[None]] = set()


def _object(value: dict[str, Any]) -> Any:
    return to_js(value, dict_converter=js.Object.fromEntries)


class _Transform:
    def __init__(self) -> None:
        self.proxies = [create_proxy(self.transform), create_proxy(self.flush)]

    def transform(self, chunk: Any, controller: Any) -> None:
        controller.enqueue(chunk)

    def flush(self, _controller: Any) -> None:
        for proxy in self.proxies:
            asyncio.get_event_loop().call_soon(proxy.destroy)


async def _pump(reader: Any, writer: Any) -> None:
    while True:
        result = await reader.read()
        if result.done:
            break
        writer.write(to_js(result.value.to_bytes()))
    writer.close()


async def on_fetch(request: Any, env: Any, ctx: Any) -> Any:
    body = (await request.json()).to_py()
    inputs = {
        "messages": body["messages"],
        "stream": True,
        "max_tokens": body.get("max_tokens", 1024),
    }
    stream = await env.AI.run(body.get("model", MODEL), _object(inputs))
    how = urlsplit(str(request.url)).path
    if how == "/native":
        stream = stream.pipeThrough(js.IdentityTransformStream.new())
    elif how == "/identity":
        stream = stream.pipeThrough(js.TransformStream.new())
    elif how == "/transform":
        transform = _Transform()
        transformer = _object({"transform": transform.proxies[0], "flush": transform.proxies[1]})
        stream = stream.pipeThrough(js.TransformStream.new(transformer))
    elif how == "/reader":
        pair = js.IdentityTransformStream.new()
        pump = asyncio.ensure_future(_pump(stream.getReader(), pair.writable.getWriter()))
        _PUMPS.add(pump)
        pump.add_done_callback(_PUMPS.discard)
        stream = pair.readable
    return js.Response.new(
        stream, _object({"headers": {"content-type": "text/event-stream; charset=utf-8"}})
    )
