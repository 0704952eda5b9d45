"""What one Python<->JS step of the windowed reader costs on Pyodide 314 (issue 35): each
request runs n steps of one kind; bench/probes/ffi_costs.mjs divides this workerd process's CPU
by n. Kinds are the steps the relay takes per window of tokens."""

from __future__ import annotations

import json
from typing import Any

import js
from pyodide.ffi import create_proxy, to_js
from workers import Response, WorkerEntrypoint


def _steps(kind: str, n: int) -> None:
    get = js.Reflect.get
    if kind == "empty":
        for _ in range(n):
            pass
    elif kind == "global_attr":  # js.Reflect: an attribute of the js module
        for _ in range(n):
            _ = js.Reflect
    elif kind == "global_attr2":  # js.Array.prototype
        for _ in range(n):
            _ = js.Array.prototype
    elif kind == "reflect_get_fn":  # Reflect.get(prototype, name): a function comes to Python
        proto = js.Array.prototype
        for _ in range(n):
            get(proto, "map")
    elif kind == "call_number":  # a JS call that returns a number
        f = js.Math.abs
        for _ in range(n):
            f(1)
    elif kind == "call_object":  # a JS call that returns a fresh object: a new JsProxy
        f = js.Object
        for _ in range(n):
            f()
    elif kind == "new_u8_64k":
        u8 = js.Uint8Array
        for _ in range(n):
            u8.new(65536)
    elif kind == "to_js_list2":
        a, b = js.Math, js.JSON
        for _ in range(n):
            to_js([a, b])
    elif kind == "bind":  # js_bind(fn, this, arg)
        bind = get(js.Function.prototype, "bind")
        apply = js.Reflect.apply
        f, this = js.Math.abs, js.Math
        for _ in range(n):
            apply(bind, f, to_js([this, 1]))
    elif kind == "reflect_set":
        box = js.Array.new(1)
        put = js.Reflect.set
        for _ in range(n):
            put(box, 0, 1)
    elif kind == "to_js_bytes1k":
        data = b"x" * 1000
        for _ in range(n):
            to_js(data)
    elif kind == "to_bytes1k":
        u = to_js(b"x" * 1000)
        for _ in range(n):
            u.to_bytes()
    elif kind == "set_timeout":  # js.setTimeout(proxy, long) then clearTimeout
        proxy = create_proxy(lambda *_: None)
        for _ in range(n):
            js.clearTimeout(js.setTimeout(proxy, 1e9))
        proxy.destroy()
    elif kind == "set_timeout_cached":
        proxy = create_proxy(lambda *_: None)
        st, ct = js.setTimeout, js.clearTimeout
        for _ in range(n):
            ct(st(proxy, 1e9))
        proxy.destroy()
    elif kind == "attr_of_result":  # result.done and result.value of a {done, value} object
        r = js.Object.fromEntries(to_js([["done", False], ["value", js.Uint8Array.new(10)]]))
        for _ in range(n):
            _ = r.done
            _ = r.value
    elif kind == "array_of":
        of = js.Array.of
        for _ in range(n):
            of(1)
    elif kind == "identity_stream":  # IdentityTransformStream + its writer
        for _ in range(n):
            pair = js.IdentityTransformStream.new()
            pair.writable.getWriter()
    elif kind == "abort_controller":
        for _ in range(n):
            js.AbortController.new()
    elif kind == "proxy_make_destroy":
        f = lambda *_: None  # noqa: E731
        for _ in range(n):
            create_proxy(f).destroy()
    elif kind == "with_resolvers":
        for _ in range(n):
            js.Promise.withResolvers()
    elif kind == "tee_compress":  # the windowed reader's plumbing on a small body, then cancel
        for _ in range(n):
            body = js.Response.new("data: x\n\n").body
            branches = body.tee()
            squeeze = js.CompressionStream.new("deflate-raw")
            options = js.Object.new()
            branches[0].pipeTo(squeeze.writable, options)
            reader = branches[1].getReader()
            reader.cancel()
    elif kind == "compression_only":
        for _ in range(n):
            js.CompressionStream.new("deflate-raw")
    elif kind == "nested_entry":  # JS calls Python inside a Python call (forEach)
        proxy = create_proxy(lambda *_: None)
        js.Array.new(n).fill(0).forEach(proxy)
        proxy.destroy()
    elif kind == "monotonic":
        import time

        for _ in range(n):
            time.monotonic()
    else:
        raise ValueError(kind)


async def _async_steps(kind: str, n: int) -> None:
    import asyncio

    if kind == "await_resolved":
        for _ in range(n):
            await js.Promise.resolve(0)
    elif kind == "sleep0":
        for _ in range(n):
            await asyncio.sleep(0)
    elif kind in ("top_entry_microtask", "top_entry_timer"):  # n top-level entries into Python
        loop = asyncio.get_event_loop()
        done = loop.create_future()
        hits = [0]

        def hit(*_: Any) -> None:
            hits[0] += 1
            if hits[0] == n and not done.done():
                done.set_result(None)

        proxy = create_proxy(hit)
        if kind == "top_entry_microtask":
            for _ in range(n):
                js.queueMicrotask(proxy)
        else:
            for _ in range(n):
                js.setTimeout(proxy, 0)
        await done
        proxy.destroy()
    elif kind == "coroutine":  # awaiting a plain Python coroutine

        async def nothing() -> None:
            return None

        for _ in range(n):
            await nothing()
    else:
        raise ValueError(kind)


class Default(WorkerEntrypoint):  # type: ignore[misc]
    async def fetch(self, request: Any) -> Any:
        body = json.loads(await request.text())
        kind = body["kind"]
        if kind in (
            "await_resolved",
            "sleep0",
            "coroutine",
            "top_entry_microtask",
            "top_entry_timer",
        ):
            await _async_steps(kind, int(body["n"]))
        else:
            _steps(kind, int(body["n"]))
        return Response("ok")
