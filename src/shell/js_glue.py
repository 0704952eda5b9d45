"""The JS glue every shell module shares: plain JS objects and Headers from Python values, bound
JS functions, calls whose promises stay in JS, and a Durable Object's SQLite as Python. Built from built-ins only: workerd makes no
code from strings. Nothing here is kept in a module global but Python values (a deploy
snapshots the module state, and a JS object there fails it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import js
from pyodide.ffi import to_js

from shell.js_values import js_numbers


def js_object(value: dict[str, Any]) -> Any:
    """A plain JS object (not a Map, not a PyProxy): what JS APIs and bindings expect."""
    return to_js(js_numbers(value), dict_converter=js.Object.fromEntries)


def ignore(promise: Any) -> None:
    """Drop a promise's rejection. Boolean is a JS function that accepts anything and has no
    effect: a rejection handler that needs no proxy."""
    promise.catch(js.Boolean)


def bytes_of(value: Any) -> bytes:
    """A chunk of a JS byte stream (a Uint8Array, or a string) as Python bytes."""
    if isinstance(value, str):
        return value.encode()
    data: bytes = value.to_bytes()
    return data


def queued(writer: Any, mark: int) -> int:
    """The bytes waiting in a writer's stream whose highWaterMark is `mark` (0: none queued, or
    no writer, or the stream errored: its desiredSize is null)."""
    room = None if writer is None else writer.desiredSize
    return 0 if room is None else max(0, int(mark - room))


def js_bind(fn: Any, this: Any, *bound: Any) -> Any:
    """`fn.bind(this, *bound)`: a JS function, so no proxy to manage."""
    return js.Reflect.apply(
        js.Reflect.get(js.Function.prototype, "bind"), fn, to_js([this, *bound])
    )


def void_caller(fn: Any, this: Any, *bound: Any) -> Callable[[Any], None]:
    """call(value): `fn.call(this, *bound, value)`, made by JS, its result dropped in JS.

    Measured on workerd (bench/notes/GLUE-NOTES.md): a JS call from Python that returns a promise
    hands Python a PyodideFuture, with Pyodide's own then() attached: ~35 us to make, and it
    enters Python again when it settles; a .catch() on it costs ~190 us. Per chunk that was
    most of the relay's CPU, and under load promise traffic through Pyodide ended in fatal
    errors. Array.prototype.forEach calls its callback and drops what it returns, so a writer's
    write() promise never reaches Python (~1.5 us a call). Built from built-ins only: workerd
    makes no code from strings. (forEach also passes the index and the array: every function
    called here ignores arguments past the ones it takes.)"""
    box = js.Array.new(1)
    for_each = js.Reflect.get(js.Array.prototype, "forEach")
    args = to_js([js_bind(fn, this, *bound)])
    put = js.Reflect.set
    apply = js.Reflect.apply

    def call(value: Any) -> None:
        put(box, 0, value)
        apply(for_each, box, args)

    return call


class ReadAfter:
    """start(ms): `scheduler.wait(ms)` (none when ms is 0), then `read()`, then `on_ok(result)`
    or `on_err(reason)`, chained wholly in JS: one call from Python per read, no promise
    reaching Python, and no entry into Python when the wait ends (a timer calling Python, then
    Python calling read(), cost ~0.3-0.5 ms of workerd CPU per window: bench/notes/
    2026-11-28-window-cost.md). read is a JS function that takes no argument (a default
    reader's bound read); the wait is aborted with `signal`, and then on_err is called, not
    read. A handler that throws (a proxy already destroyed) is caught, in JS.

    From built-ins only (workerd makes no code from strings): a promise P0, resolved once, is
    kept in an array [P0] made by JS (`[resolve].map(call.bind(call))`), so it never reaches
    Python; for each wait, `steps.reduce(applyThen, P0)` over the fixed steps
    `[[wait], [read], [on_ok, on_err], [undefined, Boolean]]` builds
    `P0.then(wait).then(read).then(on_ok, on_err).then(undefined, Boolean)` (with `[view]`
    before `[read]` for a BYOB reader), and
    `[P0].forEach(reduce.bind(steps, applyThen))` runs it, dropping its promise in JS.
    Waits of STEP_MS or more are rounded to STEP_MS, shorter ones (a burst's gathering wait) up
    to whole ms, so a pipe keeps a handful of such step lists."""

    STEP_MS = 5

    def __init__(
        self, read: Any, on_ok: Any, on_err: Any, signal: Any, view_bytes: int = 0
    ) -> None:
        """view_bytes: read is a BYOB reader's bound read, given a new Uint8Array of that many
        bytes each time, made in JS (`Reflect.construct` bound to Uint8Array and the length:
        the buffer a read took is detached, so every read needs its own)."""
        get = js.Reflect.get
        arrays = js.Array.prototype
        call = get(js.Function.prototype, "call")
        resolve = js_bind(get(js.Promise, "resolve"), js.Promise, None)
        self._seed = js.Reflect.apply(
            get(arrays, "map"), js.Array.of(resolve), to_js([js_bind(call, call)])
        )
        self._reduce = get(arrays, "reduce")
        self._for_each = get(arrays, "forEach")
        self._apply_then = js_bind(
            get(js.Reflect, "apply"), None, get(js.Promise.prototype, "then")
        )
        self._wait = get(js.scheduler, "wait")
        self._scheduler = js.scheduler
        self._options = js_object({"signal": signal})
        self._read = read
        self._view: Any = None
        if view_bytes:
            self._view = js_bind(
                get(js.Reflect, "construct"),
                None,
                js.Uint8Array,
                to_js([view_bytes]),
                js.Uint8Array,
            )
        self._handlers = to_js([on_ok, on_err])
        self._catch = to_js([None, js.Boolean])
        self._run = js.Reflect.apply
        self._starts: dict[int, Any] = {}

    def start(self, seconds: float) -> None:
        exact = max(0.0, seconds * 1000)
        ms = (
            round(exact / self.STEP_MS) * self.STEP_MS
            if exact >= self.STEP_MS
            else math.ceil(exact)
        )
        args = self._starts.get(ms)
        if args is None:
            steps = [to_js([self._read]), self._handlers, self._catch]
            if self._view is not None:
                steps.insert(0, to_js([self._view]))
            if ms:
                steps.insert(0, to_js([js_bind(self._wait, self._scheduler, ms, self._options)]))
            args = self._starts[ms] = to_js([js_bind(self._reduce, to_js(steps), self._apply_then)])
        self._run(self._for_each, self._seed, args)


def js_headers(pairs: tuple[tuple[str, str], ...]) -> Any:
    """A JS Headers object with these (name, value) pairs, repeated names kept."""
    headers = js.Headers.new()
    for name, value in pairs:
        headers.append(name, value)
    return headers


class DurableSql:
    """A Durable Object's ctx.storage.sql as the core's Sql (conversation_store, the owner index,
    the stored response): values in and rows out as Python."""

    def __init__(self, storage: Any) -> None:
        self._storage = storage
        self._sql = storage.sql

    def rows(self, query: str, *params: object) -> list[dict[str, Any]]:
        cursor = self._sql.exec(query, *params)
        rows = cursor.toArray().to_py()
        return [dict(row) for row in rows]

    def run(self, query: str, *params: object) -> None:
        self._sql.exec(query, *params)

    def atomic(self, work: Callable[[], None]) -> None:
        # A callback that throws rolls the transaction back, and its error comes out here.
        self._storage.transactionSync(work)
