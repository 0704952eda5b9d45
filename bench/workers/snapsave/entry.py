"""What a process that has just saved a Python memory snapshot (workerd --python-save-snapshot,
then serving from the same process) does differently with `js` (issue 31).
bench/probes/snapshot_save.py drives it; GET / answers one line per check: `name => ok VALUE` or
`name => ERR MESSAGE`.
"""

from __future__ import annotations

from typing import Any

import js
from pyodide.ffi import create_proxy, to_js
from workers import Response, WorkerEntrypoint


def _bind(fn: Any, this: Any) -> Any:
    """src/shell/js_glue.py's js_bind."""
    return js.Reflect.apply(js.Reflect.get(js.Function.prototype, "bind"), fn, to_js([this]))


def _real_proto(obj: Any) -> Any:
    return js.Reflect.getPrototypeOf(obj)


async def _checks(request: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []

    def check(name: str, fn: Any) -> None:
        try:
            out.append((name, f"ok {fn()!r}"[:160]))
        except Exception as exc:  # the probe reports every failure
            out.append((name, f"ERR {type(exc).__name__}: {str(exc)[:140]}"))

    async def acheck(name: str, fn: Any) -> None:
        try:
            out.append((name, f"ok {(await fn())!r}"[:160]))
        except Exception as exc:
            out.append((name, f"ERR {type(exc).__name__}: {str(exc)[:140]}"))

    raw = request.js_object
    # A workerd-made AbortSignal (not from `js`) and its prototype: the real AbortSignal.prototype.
    real_signal_proto = _real_proto(raw.signal)
    check("js.AbortSignal.prototype is real", lambda: js.AbortSignal.prototype == real_signal_proto)
    check(
        "js.AbortSignal.timeout(1000): proto is real",
        lambda: _real_proto(js.AbortSignal.timeout(1000)) == real_signal_proto,
    )
    check("js.AbortController.new()", lambda: js.AbortController.new() is not None)
    c = js.AbortController.new()
    check("controller.abort()", lambda: c.abort())
    c2 = js.AbortController.new()
    check(
        "bound Reflect.get(controller,'abort')()", lambda: _bind(js.Reflect.get(c2, "abort"), c2)()
    )
    c3 = js.AbortController.new()
    check(
        "bound Reflect.get(AbortController.prototype,'abort')()",
        lambda: _bind(js.Reflect.get(js.AbortController.prototype, "abort"), c3)(),
    )
    check("controller.signal.aborted", lambda: js.AbortController.new().signal.aborted)
    tick = create_proxy(lambda *_: None)
    timers: list[Any] = []

    def keep(timer: Any) -> Any:
        timers.append(timer)
        return timer

    check(
        "js.setTimeout(a create_proxy, 1)",
        lambda: keep(js.setTimeout(tick, 1)),
    )
    check("js.setTimeout(js.Boolean, 1)", lambda: js.setTimeout(js.Boolean, 1))
    check("js.clearTimeout(id)", lambda: js.clearTimeout(timers[0] if timers else 0))
    check("js.clearTimeout(None)", lambda: js.clearTimeout(None))
    check("js.queueMicrotask(js.Boolean)", lambda: js.queueMicrotask(js.Boolean))
    check("js.scheduler (get)", lambda: str(js.Object.prototype.toString.call(js.scheduler)))
    await acheck("await js.scheduler.wait(1)", lambda: js.scheduler.wait(1))
    check("js.Promise.withResolvers().resolve()", lambda: js.Promise.withResolvers().resolve(1))
    check("js.Headers.new().append()", lambda: js.Headers.new().append("a", "b"))
    pair = js.IdentityTransformStream.new()
    check(
        "IdentityTransformStream.writable.getWriter()",
        lambda: pair.writable.getWriter() is not None,
    )
    check("js.Array.new(1).forEach", lambda: js.Array.new(1).forEach(js.Boolean))
    check("js.URL.new(url).pathname", lambda: js.URL.new(raw.url).pathname)
    p = create_proxy(lambda *_: None)
    check(
        "signal.addEventListener",
        lambda: js.AbortController.new().signal.addEventListener("abort", p),
    )
    check("js.Object.fromEntries", lambda: js.Object.fromEntries(to_js([["a", 1]])).a)
    # Ways around it: the global functions called with no `this` (V8 gives an API function
    # called so the global object), or through the real global object.
    apply = js.Reflect.apply
    check("setTimeout source", lambda: str(js.Function.prototype.toString.call(js.setTimeout))[:60])
    check(
        "Reflect.apply(js.setTimeout, None, [proxy, 1])",
        lambda: keep(apply(js.setTimeout, None, to_js([tick, 1]))),
    )
    check(
        "Reflect.apply(js.clearTimeout, None, [id])",
        lambda: apply(js.clearTimeout, None, to_js([timers[-1]])),
    )
    check(
        "Reflect.apply(js.queueMicrotask, None, [Boolean])",
        lambda: apply(js.queueMicrotask, None, to_js([js.Boolean])),
    )

    async def timer_promise() -> Any:
        w = js.Promise.withResolvers()
        apply(js.setTimeout, None, to_js([w.resolve, 1]))
        return await w.promise

    await acheck("await a setTimeout-resolved promise", timer_promise)
    g = js.Reflect.getOwnPropertyDescriptor(js, "globalThis").value
    check("real global: g.clearTimeout(0)", lambda: g.clearTimeout(0))
    await acheck("real global: await g.scheduler.wait(1)", lambda: g.scheduler.wait(1))
    # Is what `js.X.new()` makes a plain instance (its prototype the real X.prototype)? Only if
    # X.prototype is non-writable and non-configurable: else the Proxy hands `new` a Proxy of it.
    for name in (
        "AbortController",
        "Headers",
        "IdentityTransformStream",
        "WritableStream",
        "Request",
        "URL",
        "Array",
    ):
        d = js.Reflect.getOwnPropertyDescriptor(getattr(g, name), "prototype")
        check(f"{name}.prototype writable/configurable", lambda d=d: (d.writable, d.configurable))
        check(
            f"proto of js.{name}.new() is the real {name}.prototype",
            lambda name=name: (
                js.Reflect.getPrototypeOf(
                    getattr(js, name).new(raw.url)
                    if name in ("Request", "URL")
                    else getattr(js, name).new()
                )
                == getattr(g, name).prototype
            ),
        )
    return out


class Default(WorkerEntrypoint):  # type: ignore[misc]
    async def fetch(self, request: Any) -> Response:
        lines = [f"{name} => {result}" for name, result in await _checks(request)]
        return Response("\n".join(lines) + "\n")
