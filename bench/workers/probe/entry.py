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
- py_then_identity: a default reader on the upstream, Python chaining reader.read().then(on_chunk)
  itself (no asyncio), each chunk written (not awaited) to an IdentityTransformStream's writer
- py_then_identity_bytes: the same, each chunk through Python bytes (to_bytes, then to_js)
- py_then_identity_wait: py_then_identity plus ctx.waitUntil(a promise resolved when it ends)
- py_async_identity: an asyncio task looping `await reader.read()` into the same writer
- py_async_identity_wait: the same plus ctx.waitUntil
- entries:<kind>: n top-level entries into Python from promise reactions (see _entries)
- reads:<kind>: how many bytes each read of the upstream returns (default, byob, readAtLeast)
- stats: this isolate's glue counters (proxies made/destroyed, endings), as JSON
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import js
from pyodide.ffi import create_once_callable, create_proxy, to_js
from workers import Response, WorkerEntrypoint

# Python values only (a deploy snapshots module state; no JS object may live here).
_STATS: dict[str, int] = {}


def _count(key: str, n: int = 1) -> None:
    _STATS[key] = _STATS.get(key, 0) + n


def _release(proxies: list[Any], done: Any) -> None:
    """A glue's ending, on the loop turn after it: destroy its proxies, let its waitUntil go."""
    for proxy in proxies:
        proxy.destroy()
    _count("proxies_destroyed", len(proxies))
    proxies.clear()
    if done is not None:
        done.resolve()


def _void_caller(fn: Any, this: Any) -> Any:
    """call(value): fn.call(this, value) made by JS, its result (a promise) dropped in JS.

    Measured on workerd: a JS call from Python that returns a Promise hands Python a
    PyodideFuture (pyodide 0.28 wraps every returned promise, attaching its own then()), which
    re-enters Python when the promise settles. Array.prototype.forEach drops the callback's
    result, so the promise never reaches Python. One reused 1-element array per caller."""
    box = js.Array.new(1)
    forEach = js.Reflect.get(js.Array.prototype, "forEach")
    args = to_js([fn, this])
    set_ = js.Reflect.set
    apply = js.Reflect.apply

    def call(value: Any) -> None:
        set_(box, 0, value)
        apply(forEach, box, args)

    return call


def _then_glue(
    upstream: Any, signal: Any, ctx: Any, copy: bool, wait: bool, void_write: bool = False
) -> Any:
    """Python chains reader.read().then(on_chunk) itself; chunks go to an IdentityTransformStream.

    Endings: the upstream ends (done) or fails (read rejects); the client leaves, seen as
    request.signal's abort or as writer.closed rejecting. A client leaving cancels the reader,
    whose pending read then resolves done, which is where the proxies are destroyed."""
    pair = js.IdentityTransformStream.new()
    writer = pair.writable.getWriter()
    write = writer.write
    reader = upstream.getReader()
    read = reader.read
    ignore = js.Boolean

    def then(promise: Any, ok: Any, fail: Any = None) -> Any:
        # promise is a PyodideFuture: its then/catch are pyodide's (Python-level)
        return promise.then(ok, fail) if ok is not None else promise.catch(fail)

    def quiet(promise: Any) -> None:
        promise.catch(ignore)

    if void_write:
        send = _void_caller(js.Reflect.get(writer, "write"), writer)
    else:

        def send(value: Any) -> None:
            quiet(write(value))

    state = {"ended": False, "gone": ""}
    proxies: list[Any] = []
    done = js.Promise.withResolvers() if wait else None

    def end(how: str) -> None:
        if state["ended"]:
            return
        state["ended"] = True
        _count(f"end_{how}{'_after_' + str(state['gone']) if state['gone'] else ''}")
        if signal:
            signal.removeEventListener("abort", p_gone_signal)
        # Not from inside a proxy's own call (measured: pyodide's fatal "table index is out of
        # bounds" under load when on_chunk destroyed itself): on the next turn of the loop.
        asyncio.get_event_loop().call_soon(_release, proxies, done)

    def on_chunk(result: Any) -> None:
        if result.done:
            if not state["gone"]:
                quiet(writer.close())
            end("done")
            return
        value = result.value
        if copy:
            value = to_js(value.to_bytes())
        send(value)
        then(read(), p_chunk, p_fail)

    def on_fail(_err: Any = None) -> None:
        quiet(writer.abort())
        end("read_failed")

    def gone(how: str) -> None:
        _count(f"gone_{how}")
        if state["gone"] or state["ended"]:
            return
        state["gone"] = how
        quiet(reader.cancel())  # the pending read resolves done: on_chunk ends it all
        quiet(writer.abort())

    p_chunk = create_proxy(on_chunk)
    p_fail = create_proxy(on_fail)
    p_gone_signal = create_proxy(lambda _=None: gone("signal"))
    p_gone_closed = create_proxy(lambda _=None: gone("closed"))
    proxies += [p_chunk, p_fail, p_gone_signal, p_gone_closed]
    _count("proxies_made", len(proxies))
    _count("started")
    if signal:
        signal.addEventListener("abort", p_gone_signal)
    then(writer.closed, ignore, p_gone_closed)
    if done is not None:
        ctx.waitUntil(done.promise)
    then(read(), p_chunk, p_fail)
    return pair.readable


def _sink_glue(upstream: Any, signal: Any, ctx: Any, wait: bool, watch_closed: bool = True) -> Any:
    """upstream.pipeTo(WritableStream) with a Python write(); chunks go to an IdentityTransformStream
    through _void_caller, so no promise reaches Python per chunk. A relay-ready ending:

    - the upstream ends or fails: pipeTo settles (pyodide's then, Python callables, no proxy);
    - the client leaves: request.signal aborts, or writer.closed rejects (the response body
      was cancelled): our AbortController aborts the pipe, which cancels the upstream.
    Proxies (write, the signal listener) are destroyed on the first ending, on the next loop
    turn; the pipe settling later is ignored. A write after that throws (destroyed proxy):
    the pipe then cancels the upstream."""
    pair = js.IdentityTransformStream.new()
    writer = pair.writable.getWriter()
    send = _void_caller(js.Reflect.get(writer, "write"), writer)
    stop = js.AbortController.new()
    ignore = js.Boolean
    state = {"ended": False, "gone": ""}
    proxies: list[Any] = []
    done = js.Promise.withResolvers() if wait else None

    def write(chunk: Any, _controller: Any = None) -> None:
        send(chunk)

    def end(how: str) -> None:
        if state["ended"]:
            _count(f"late_{how}")
            return
        state["ended"] = True
        _count(f"end_{how}")
        if signal:
            signal.removeEventListener("abort", p_gone)
        asyncio.get_event_loop().call_soon(_release, proxies, done)

    def settled_ok(_: Any = None) -> None:
        if not state["ended"]:
            writer.close().catch(ignore)
        end("done")

    def settled_fail(_: Any = None) -> None:
        if not state["ended"]:
            writer.abort().catch(ignore)
        end("failed" if not state["gone"] else "aborted")

    def gone(how: str) -> None:
        _count(f"gone_{how}")
        if state["gone"] or state["ended"]:
            return
        state["gone"] = how
        stop.abort()
        writer.abort().catch(ignore)
        end(f"gone_{how}")

    p_write = create_proxy(write)
    p_gone = create_proxy(lambda _=None: gone("signal"))
    proxies += [p_write, p_gone]
    _count("proxies_made", len(proxies))
    _count("started")
    if signal:
        signal.addEventListener("abort", p_gone)
    if watch_closed:
        writer.closed.then(ignore, lambda _=None: gone("closed"))
    sink = js.WritableStream.new(_obj({"write": p_write}))
    upstream.pipeTo(sink, _obj({"signal": stop.signal})).then(settled_ok, settled_fail)
    if done is not None:
        ctx.waitUntil(done.promise)
    return pair.readable


def _async_glue(upstream: Any, ctx: Any, wait: bool) -> Any:
    """An asyncio task: `while True: await reader.read()`, into an IdentityTransformStream."""
    pair = js.IdentityTransformStream.new()
    writer = pair.writable.getWriter()
    write = writer.write
    reader = upstream.getReader()
    ignore = js.Boolean
    done = js.Promise.withResolvers() if wait else None

    async def pump() -> None:
        try:
            while True:
                result = await reader.read()
                if result.done:
                    break
                write(result.value).catch(ignore)
            writer.close().catch(ignore)
            _count("end_done")
        except Exception:
            writer.abort().catch(ignore)
            _count("end_read_failed")
        finally:
            if done is not None:
                done.resolve()

    _count("started")
    task = asyncio.ensure_future(pump())
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)
    if done is not None:
        ctx.waitUntil(done.promise)
    return pair.readable


_TASKS: set[Any] = set()  # Python tasks only: keeps them from being collected mid-stream


async def _entries(kind: str, n: int) -> None:
    """n entries into Python from JS (promise reactions, microtasks, timers), or n promises
    returned to Python, for the harness to divide this process's CPU by."""
    finished = js.Promise.withResolvers()
    left = [n]

    def count(*_: Any) -> None:
        left[0] -= 1
        if left[0] <= 0:
            finished.resolve(0)

    if kind == "microtask_chain":  # pyodide's then: each reaction schedules the next

        def step(value: Any) -> None:
            count()
            if left[0] > 0:
                js.Promise.resolve(value).then(proxy)

        proxy = create_proxy(step)
        js.Promise.resolve(0).then(proxy)
    elif kind == "microtask_pythen":  # n x pyodide's JsPromise.then(proxy) at once
        proxy = create_proxy(count)
        resolve = js.Promise.resolve
        for _ in range(n):
            resolve(0).then(proxy)
    elif kind == "microtask_pycatch":  # n x resolve(0).catch(js.Boolean), as js_glue.ignore does
        proxy = None
        resolve = js.Promise.resolve
        f = js.Boolean
        for _ in range(n):
            resolve(0).catch(f)
        left[0] = 0
        finished.resolve(0)
    elif kind == "microtask_promise_return":  # n JS calls returning a promise, result dropped
        proxy = None
        resolve = js.Promise.resolve
        for _ in range(n):
            resolve(0)
        left[0] = 0
        finished.resolve(0)
    elif kind == "microtask_promise_void":  # the same calls made through _void_caller (no future)
        proxy = None
        call = _void_caller(js.Reflect.get(js.Promise, "resolve"), js.Promise)
        for _ in range(n):
            call(0)
        left[0] = 0
        finished.resolve(0)
    elif kind == "microtask_await":  # n awaits of a resolved JS promise (asyncio)
        proxy = None
        resolve = js.Promise.resolve
        for _ in range(n):
            await resolve(0)
        left[0] = 0
        finished.resolve(0)
    elif (
        kind == "microtask_queue"
    ):  # n x queueMicrotask(proxy): n top-level entries from microtasks
        proxy = create_proxy(count)
        q = js.queueMicrotask
        for _ in range(n):
            q(proxy)
    elif kind == "microtask_queue_chain":  # each microtask entry queues the next

        def qstep() -> None:
            count()
            if left[0] > 0:
                js.queueMicrotask(proxy)

        proxy = create_proxy(qstep)
        js.queueMicrotask(proxy)
    elif kind == "microtask_settimeout":  # n x setTimeout(proxy, 0): macrotask entries
        proxy = create_proxy(count)
        for _ in range(n):
            js.setTimeout(proxy, 0)
    else:
        raise ValueError(kind)
    await finished.promise
    await asyncio.sleep(0)
    if proxy is not None:
        proxy.destroy()


async def _reads(kind: str, upstream: Any) -> dict[str, Any]:
    """Bytes per read of the upstream: the default reader, BYOB with a 64 KiB buffer, readAtLeast."""
    sizes: list[int] = []
    if kind == "default":
        reader = upstream.getReader()
        while True:
            r = await reader.read()
            if r.done:
                break
            sizes.append(int(r.value.byteLength))
    else:
        reader = upstream.getReader(_obj({"mode": "byob"}))
        while True:
            buf = js.Uint8Array.new(65536)
            if kind == "byob":
                r = await reader.read(buf)
            elif kind.startswith("atleast"):  # atleast<N>: readAtLeast(N, 64 KiB view)
                r = await reader.readAtLeast(int(kind[7:]), buf)
            else:
                raise ValueError(kind)
            if r.value and r.value.byteLength:
                sizes.append(int(r.value.byteLength))
            if r.done:
                break
    ordered = sorted(sizes)
    return {
        "reads": len(sizes),
        "bytes": sum(sizes),
        "min": ordered[0] if sizes else 0,
        "median": ordered[len(sizes) // 2] if sizes else 0,
        "max": ordered[-1] if sizes else 0,
        "first": sizes[:5],
    }


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
            _ = o.PI
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
        if mode == "debug_then":  # what a promise returned to Python is
            out = []
            get = js.Reflect.get
            then = get(js.Promise.prototype, "then")
            call = get(js.Function.prototype, "call")
            bind = get(js.Function.prototype, "bind")
            out.append(
                f"then={js.String(then)[:40]} call={js.String(call)[:40]} bind={js.String(bind)[:40]}"
            )
            ts = get(js.Object.prototype, "toString")
            p0 = js.Promise.resolve(0)
            out.append(
                f"p0 type={type(p0).__name__} tostring={js.Reflect.apply(ts, p0, to_js([]))} isPromise={js.Reflect.apply(get(js.Promise, 'resolve'), js.Promise, to_js([p0])) == p0}"
            )
            out.append(
                f"js.Promise={js.String(js.Promise)[:60]} same={js.Promise == get(js.globalThis, 'Promise')}"
            )
            for label, fn in [
                ("reflect.apply(then)", lambda p: js.Reflect.apply(then, p, to_js([js.Boolean]))),
                ("bound", lambda p: js.Reflect.apply(bind, call, to_js([then]))(p, js.Boolean)),
                ("call.call", lambda p: call.call(then, p, js.Boolean)),
            ]:
                try:
                    r = fn(js.Promise.resolve(0))  # type: ignore[no-untyped-call]
                    out.append(f"{label}: ok {js.Object.prototype.toString.call(r)}")
                except Exception as exc:
                    out.append(f"{label}: {exc!r}"[:200])
            return Response("\n".join(out))
        if mode == "stats":
            return Response(json.dumps(_STATS))
        if mode.startswith("entries:"):
            await _entries(mode[8:], int(body["n"]))
            return Response("ok")
        if mode.startswith("loop:"):
            _loop(mode[5:], int(body["n"]))
            return Response("ok")
        inputs = {
            "messages": body["messages"],
            "stream": True,
            "max_tokens": body.get("max_tokens", 1024),
        }
        upstream = await self.env.AI.run(body["model"], _obj(inputs))
        headers = js.Headers.new()
        headers.append("content-type", "text/event-stream; charset=utf-8")
        if mode == "direct":
            return Response(upstream, headers=headers)
        if mode.startswith("reads:"):
            return Response(json.dumps(await _reads(mode[6:], upstream)))
        if mode.startswith("py_then_identity"):
            raw = request.js_object
            body_out = _then_glue(
                upstream,
                raw.signal,
                self.ctx,
                copy="_bytes" in mode,
                wait="_wait" in mode,
                void_write="_void" in mode,
            )
            return Response(body_out, headers=headers)
        if mode.startswith("py_sink_relay"):  # py_sink_relay[_wait][_noclosed]
            raw = request.js_object
            return Response(
                _sink_glue(
                    upstream,
                    raw.signal,
                    self.ctx,
                    wait="_wait" in mode,
                    watch_closed="_noclosed" not in mode,
                ),
                headers=headers,
            )
        if mode.startswith("py_async_identity"):
            return Response(
                _async_glue(upstream, self.ctx, wait=mode.endswith("_wait")), headers=headers
            )
        proxies: list[Any] = []

        def done(_: Any = None) -> None:
            for proxy in proxies:
                proxy.destroy()

        if mode == "py_sink_void_bound":
            # py_sink_void, but the sink's write is Function.prototype.call bound to the Python
            # proxy (capture_this: the chunk arrives as `this`): the stream calls a JS builtin,
            # which calls Python, instead of calling the PyProxy itself.
            pair = js.IdentityTransformStream.new()
            writer = pair.writable.getWriter()
            send = _void_caller(js.Reflect.get(writer, "write"), writer)

            def sink_this(chunk: Any, *_: Any) -> None:
                send(chunk)

            on_write = create_proxy(sink_this, capture_this=True)
            proxies.append(on_write)
            call = js.Reflect.get(js.Function.prototype, "call")
            bound = js.Reflect.apply(
                js.Reflect.get(js.Function.prototype, "bind"), call, to_js([on_write])
            )
            sink_stream = js.WritableStream.new(_obj({"write": bound}))

            def closed_bound(_: Any = None) -> None:
                writer.close().catch(js.Boolean)
                done()

            upstream.pipeTo(sink_stream).then(closed_bound, closed_bound)
            return Response(pair.readable, headers=headers)

        if mode in ("py_sink_void", "py_sink_void_wait"):
            # upstream.pipeTo(WritableStream) whose Python write() returns nothing and writes
            # into an IdentityTransformStream through _void_caller (no promise reaches Python)
            pair = js.IdentityTransformStream.new()
            writer = pair.writable.getWriter()
            send = _void_caller(js.Reflect.get(writer, "write"), writer)

            def sink_void(chunk: Any, _controller: Any = None) -> None:
                send(chunk)

            on_write = create_proxy(sink_void)
            proxies.append(on_write)
            sink_stream = js.WritableStream.new(_obj({"write": on_write}))
            ended = js.Promise.withResolvers()

            def closed_void(_: Any = None) -> None:
                writer.close().catch(js.Boolean)
                done()
                ended.resolve(0)

            on_done = create_once_callable(closed_void)
            upstream.pipeTo(sink_stream).then(on_done, on_done)
            if mode.endswith("_wait"):
                self.ctx.waitUntil(ended.promise)
            return Response(pair.readable, headers=headers)

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
        elif mode == "py_transform_noop":  # the entry alone: nothing enqueued (an empty answer)

            def transform(chunk: Any, _controller: Any) -> None:
                pass
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
        source = (
            upstream.pipeThrough(js.TextDecoderStream.new())
            if mode == "py_transform_text"
            else upstream
        )
        on_done = create_proxy(lambda _=None: done())  # itself never destroyed: a probe
        source.pipeTo(stage.writable).then(on_done, on_done)
        out = (
            stage.readable.pipeThrough(js.TextEncoderStream.new())
            if mode == "py_transform_text"
            else stage.readable
        )
        return Response(out, headers=headers)
