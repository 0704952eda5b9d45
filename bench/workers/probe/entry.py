"""What each JS-Python crossing costs on workerd, per upstream chunk, for Python glue made
without code from strings. The same answer goes through different glue, chosen by the
request's "mode"; the harness reads this workerd process's CPU.

- direct: the native stream returned (the Python floor)
- py_transform_same: TransformStream whose Python transform re-enqueues the JS chunk it got
  (one JS->Python call and one Python->JS call per chunk, no copy)
- py_transform_bytes: the same, through Python bytes (to_bytes, then to_js: two copies)
- py_transform_text: TextDecoderStream in, a Python str enqueued, TextEncoderStream out
- py_sink_identity: a WritableStream with a Python write() writing the chunk to an
  IdentityTransformStream, whose readable is the response (no JS-backed readable)
"""

from __future__ import annotations

import json
from typing import Any

import js
from pyodide.ffi import create_proxy, to_js
from workers import Response, WorkerEntrypoint


def _obj(value: dict[str, Any]) -> Any:
    return to_js(value, dict_converter=js.Object.fromEntries)


def _loop(kind: str, n: int) -> None:
    """n crossings of one kind, for the harness to divide this process's CPU by."""
    if kind == "js_to_py":  # JS calls a Python function n times (Array.prototype.forEach)
        hits = [0]

        def count(*_: Any) -> None:
            hits[0] += 1

        proxy = create_proxy(count)
        js.Array.new(n).fill(0).forEach(proxy)
        proxy.destroy()
    elif kind == "js_to_py_2args":  # the same, the callee taking two JS objects as a transform does
        objects = js.Array.new(n).fill(js.Object.new())
        proxy = create_proxy(lambda value, *_: None)
        objects.forEach(proxy)
        proxy.destroy()
    elif kind == "py_to_js":  # Python calls a JS function n times
        f = js.Math.abs
        for _ in range(n):
            f(1)
    elif kind == "py_attr":  # Python reads a JS object's attribute n times
        o = js.Math
        for _ in range(n):
            o.PI
    elif kind == "to_js_bytes":  # 100 bytes to a Uint8Array
        b = b"x" * 100
        for _ in range(n):
            to_js(b)
    elif kind == "to_bytes":  # a 100-byte Uint8Array to bytes
        u = to_js(b"x" * 100)
        for _ in range(n):
            u.to_bytes()
    elif kind == "str_to_js":  # a 100-char str handed to JS (String.prototype has no side effect)
        f = js.String
        t = "x" * 100
        for _ in range(n):
            f(t)
    elif kind == "py_loop":  # the empty Python loop itself
        for _ in range(n):
            pass
    else:
        raise ValueError(kind)


class Default(WorkerEntrypoint):  # type: ignore[misc]  # the SDK has no stubs
    async def fetch(self, request: Any) -> Any:
        body = json.loads(await request.text())
        mode = body["mode"]
        if mode == "hello":  # the floor of any Python request: read the body, answer 200
            return Response("ok")
        if mode == "loop:env_getattr":  # a var read through the SDK's env, n times
            env = self.env
            for _ in range(int(body["n"])):
                getattr(env, "SOME_VAR", None)
            return Response("ok")
        if mode.startswith("loop:"):
            _loop(mode[5:], int(body["n"]))
            return Response("ok")
        inputs = {"messages": body["messages"], "stream": True, "max_tokens": body.get("max_tokens", 1024)}
        upstream = await self.env.AI.run(body["model"], _obj(inputs))
        headers = js.Headers.new()
        headers.append("content-type", "text/event-stream; charset=utf-8")
        if mode == "direct":
            return Response(upstream, headers=headers)
        proxies: list[Any] = []

        def done(_: Any = None) -> None:
            for proxy in proxies:
                proxy.destroy()

        if mode == "py_sink_identity":
            pair = js.IdentityTransformStream.new()
            writer = pair.writable.getWriter()
            write = writer.write

            def sink(chunk: Any, _controller: Any = None) -> Any:
                return write(chunk)

            on_write = create_proxy(sink)
            proxies.append(on_write)
            sink_stream = js.WritableStream.new(_obj({"write": on_write}))
            def closed(_: Any = None) -> None:
                writer.close()
                done()

            on_done = create_proxy(closed)  # itself never destroyed: a probe
            upstream.pipeTo(sink_stream).then(on_done, on_done)
            return Response(pair.readable, headers=headers)

        enqueue: list[Any] = []

        def start(controller: Any) -> None:
            enqueue.append(controller.enqueue)

        if mode == "py_transform_same":
            def transform(chunk: Any, _controller: Any) -> None:
                enqueue[0](chunk)
        elif mode == "py_transform_bytes":
            def transform(chunk: Any, _controller: Any) -> None:
                enqueue[0](to_js(chunk.to_bytes()))
        elif mode == "py_transform_text":
            def transform(chunk: Any, _controller: Any) -> None:
                enqueue[0](str(chunk))
        else:
            raise ValueError(mode)
        on_start = create_proxy(start)
        on_chunk = create_proxy(transform)
        proxies += [on_start, on_chunk]
        stage = js.TransformStream.new(_obj({"start": on_start, "transform": on_chunk}))
        source = upstream.pipeThrough(js.TextDecoderStream.new()) if mode == "py_transform_text" else upstream
        on_done = create_proxy(lambda _=None: done())  # itself never destroyed: a probe
        source.pipeTo(stage.writable).then(on_done, on_done)
        out = stage.readable.pipeThrough(js.TextEncoderStream.new()) if mode == "py_transform_text" else stage.readable
        return Response(out, headers=headers)
