"""The relay in JS streams: a Workers AI stream in, the relay's bytes out (RelayPipe).

Every proxy made here is destroyed exactly once, whichever way the stream ends: the
answer completes, fails or times out, the client cancels the body, or the request signal
aborts. Nothing here is kept in a module global but Python values: a deploy snapshots the
module state, and a JS object there fails it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import js
from pyodide.ffi import create_proxy, to_js

from shell.js_glue import ReadAfter, bytes_of, js_bind, js_object, queued, void_caller
from streaming.relay import Failed, Relay, stalled
from streaming.window import FULL_READ, Windows
from surface import census

log = logging.getLogger("jsstream")

# The window of an answer collected whole (nobody sees its tokens one by one), in seconds.
WHOLE_WINDOW = 0.25
# What a streamed answer keeps for a client that reads nothing (the body's highWaterMark).
BACKLOG = 65536
# How often a pipe held back for its client looks whether the client has read, in seconds.
HOLD_POLL = 0.05


class RelayPipe:
    """upstream.pipeTo(a WritableStream whose sink is the relay), the relay writing its events
    into an IdentityTransformStream whose readable is the response body.

    JavaScript does the pumping; Python is called once per upstream chunk, synchronously, and
    returns nothing: no promise reaches Python per chunk (the writes go through void_caller).
    The events are not awaited: they queue in the IdentityTransformStream for a client that
    reads slowly, at most BACKLOG bytes for a streamed answer (the body's highWaterMark): past
    that the pipe holds back (_hold) until the client reads, so the model is held back by TCP.
    A durable turn (`out`) and an answer collected whole have no reader: not bounded.
    It is wired step by step from Python, because workerd makes no code from strings.

    Ways it ends, and what stops the upstream read in each:
    - the upstream ends: the pipe closes the sink (close), the relay sends its last events;
    - the upstream fails: the pipe aborts the sink (abort(reason)), the relay says so;
    - the relay closes the answer itself ([DONE], a length cut, the idle limit from the
      timer): our AbortController aborts the pipe, which cancels the upstream;
    - the client leaves: the response body is cancelled, which rejects our writer's
      `closed`, or request.signal aborts; either one aborts the pipe.
    Proxies are destroyed on the first ending, on the next turn of the loop; a sink call that
    comes later (the pipe has not settled) throws into the pipe, which then cancels upstream.
    """

    def __init__(
        self,
        upstream: js.ReadableStream,
        relay: Relay,
        client_signal: Any,
        ctx: Any = None,
        on_end: Callable[[bool], None] | None = None,
        out: Callable[[bytes], None] | None = None,
        *,
        window: float = 0.0,
        whole: bool = False,
    ) -> None:
        """out: where the relay's bytes go instead of a body of its own (a durable
        conversation stores and broadcasts them); then `stream` is None and only stop() or
        the upstream's end ends it.

        window: the longest window, in seconds, of the windowed reader (0: one sink call per
        upstream chunk, as the stream arrives). whole: the answer is collected, not read
        token by token: windows of WHOLE_WINDOW from the start (when window is not 0)."""
        self._relay = relay
        # Called once, when everything is released, with whether the client went away.
        self._on_end = on_end
        self._gone = False
        self._ended = False
        self._timer: Any = None
        # Measured on workerd: when a client leaves, the request's context may be torn down
        # before the news reaches us, and then no callback of ours ever runs again. A
        # waitUntil() keeps the context alive until the relay has released everything; with
        # it, the writer's `closed` still rejects for every client that leaves.
        self._done = js.Promise.withResolvers()
        if ctx is not None:
            ctx.waitUntil(self._done.promise)
        self._signal = client_signal if client_signal else None
        self.stream: Any = None
        self._writer: Any = None
        self._left: Any = None  # aborted when the writer's `closed` rejects: the client left
        # A client reads this answer as it streams: its backlog is bounded (see the class).
        self._bounded = out is None and not whole
        self._held = False
        self._held_at = 0.0  # when the client last let nothing through (time.monotonic())
        if out is None:
            pair = (
                js.IdentityTransformStream.new(js_object({"highWaterMark": BACKLOG}))
                if self._bounded
                else js.IdentityTransformStream.new()
            )
            self.stream = pair.readable
            self._writer = pair.writable.getWriter()
            write = void_caller(js.Reflect.get(self._writer, "write"), self._writer)
            out = lambda data: write(to_js(data))  # noqa: E731
        self._out = out
        self._stop = js.AbortController.new()
        self._on_gone = create_proxy(self._client_gone)
        self._tick = create_proxy(self.tick)
        self._proxies = [self._on_gone, self._tick]
        self._reader: Any = None  # the windowed reader's, on its branch of the upstream
        self._reads: ReadAfter | None = None  # its reads, each after its window
        self._drain_stop: Any = None  # the tee's drain, stopped on its own by a hold
        # None: reads follow each other at once (no windows, or a hold stopped the drain).
        self._windows: Windows | None = None
        # A window never holds tokens for more than a quarter of the ping interval: a ping
        # still means nothing was sent for that long, not that tokens waited in a window.
        if window > 0:
            longest = min(max(window, WHOLE_WINDOW) if whole else window, relay.quiet_step)
            self._windows = Windows.steady(longest) if whole else Windows(longest)
        if window > 0 or self._bounded:
            self._on_result = create_proxy(self._read_done)
            self._on_error = create_proxy(self._read_failed)
            self._proxies += [self._on_result, self._on_error]
        else:
            self._on_chunk = create_proxy(self._chunk)
            self._on_close = create_proxy(self._upstream_closed)
            self._on_abort = create_proxy(self._upstream_failed)
            self._proxies += [self._on_chunk, self._on_close, self._on_abort]
        census.pipe_made(self, len(self._proxies))
        if first := relay.start():
            self._out(first)
        # Its outcome is what the sink's close/abort say; its promise stays in JS. (Handed to
        # Python, a promise that never settles, as a pipe whose source ignores a cancel may
        # not, would keep its Pyodide future and the request's context alive for good.)
        # The client leaving cancels the body, which rejects the writer's `closed`: measured
        # on workerd with 1-25 streams at once, it did for every client that left, where
        # request.signal aborted for 2-20% of them and a TransformStream's cancel() hardly
        # ever ran (bench/notes/GLUE-NOTES.md; writer.desiredSize never turned null). No Python
        # callable on `closed`: a client that leaves right after the last event can leave
        # `closed` unsettled for good, and what Pyodide hands the promise would then keep this
        # pipe alive (bench/notes/2026-11-24-soak.md). The rejection aborts a JS controller
        # instead, whose listener is our proxy, removed and destroyed when the pipe ends.
        if self._writer is not None:
            self._left = js.AbortController.new()
            self._left.signal.addEventListener("abort", self._on_gone)
            abort = js_bind(js.Reflect.get(js.AbortController.prototype, "abort"), self._left)
            catch = js.Reflect.get(js.Promise.prototype, "catch")
            void_caller(catch, self._writer.closed)(abort)
        if window > 0:
            self._read_by_windows(upstream)
        elif self._bounded:
            # Windows off: a read per network chunk, so that reading can stop (a pipe into a
            # sink cannot be held without a promise reaching Python).
            self._start_reads(upstream)
        else:
            sink = js.WritableStream.new(
                js_object(
                    {"write": self._on_chunk, "close": self._on_close, "abort": self._on_abort}
                )
            )
            pipe_to = js.Reflect.get(upstream, "pipeTo")
            void_caller(pipe_to, upstream, sink, js_object({"signal": self._stop.signal}))(None)
        if self._signal is not None:
            if self._signal.aborted:
                self._client_gone()
                return
            self._signal.addEventListener("abort", self._on_gone)
        self._schedule()

    def backlog(self) -> int:  # the census: what the body holds for a client not reading
        return 0 if self._ended else queued(self._writer, BACKLOG if self._bounded else 0)

    def _read_by_windows(self, upstream: Any) -> None:
        """The windowed reader. A read on the upstream itself returns one network chunk at
        most however long one waits, but a read on a branch of its tee() returns every chunk
        buffered since the last one (measured on workerd: bench/notes/2026-11-25-windows.md).
        The other branch is drained natively, a pipe into a CompressionStream (a kj pump: no
        JS per chunk; measured cheaper than a DigestStream or a JS WritableStream), aborted
        with the pipe's own AbortController, so that when the answer ends early both branches
        are cancelled and the upstream with them. The drain is what makes the tee pull: the
        windowed branch finds the chunks buffered for it."""
        branches = upstream.tee()
        drain = branches[0]
        squeeze = js.CompressionStream.new("deflate-raw")
        body = js.Response.new(squeeze.readable)  # its few bytes, read whole at the end
        void_caller(js.Reflect.get(js.Response.prototype, "arrayBuffer"), body)(None)
        # Its own controller: a hold stops the drain alone (see _hold()).
        self._drain_stop = js.AbortController.new()
        options = js_object({"signal": self._drain_stop.signal})
        void_caller(js.Reflect.get(drain, "pipeTo"), drain, squeeze.writable, options)(None)
        self._start_reads(branches[1])

    def _start_reads(self, stream: Any) -> None:
        # A BYOB reader: a read returns all that arrived since the last one, up to its buffer
        # (a default reader's read returns 4 KiB at most, ~10 frames of the late-2026 shape:
        # two or three reads a window; measured, bench/notes/2026-11-29-fixed-cost.md).
        self._reader = stream.getReader(js_object({"mode": "byob"}))
        read = js_bind(js.Reflect.get(self._reader, "read"), self._reader)
        self._reads = ReadAfter(
            read, self._on_result, self._on_error, self._stop.signal, view_bytes=FULL_READ
        )
        self._reads.start(0)

    def _read_failed(self, reason: Any = None, *_: Any) -> None:
        """The read rejected: the upstream failed (a cancel of ours resolves, as done)."""
        if not self._ended:
            self._upstream_failed(reason if reason is not None else "the upstream read failed")

    def _read_done(self, result: Any, *_: Any) -> None:
        if self._ended:
            return
        if result.done:
            self._upstream_closed()
            return
        data = bytes_of(result.value)
        self._chunk(data)
        if self._ended or self._reads is None:
            return
        if self._bounded:
            room = self._writer.desiredSize  # null once the body errored: `closed` tells
            if room is not None and room <= 0:
                self._hold()
                return
        if self._windows is None:
            self._reads.start(0)
            return
        wait = self._windows.after_read(time.monotonic(), data)
        census.window_read(self._windows.windowed)
        self._reads.start(wait)

    def _hold(self) -> None:
        """The client has let BACKLOG bytes pile up: read nothing more until it reads.

        The tee's drain is stopped for good (an aborted pipeTo errors its branch even with
        preventCancel), so the read branch is read chunk by chunk from then on; the relay's idle
        limit and pings wait too (Relay.resume). A timer looks at desiredSize every HOLD_POLL:
        a JS chain on the writer's `ready` was cancelled as hung, or never resumed (measured:
        bench/notes/2026-11-29-paused-readers.md)."""
        self._held = True
        self._held_at = time.monotonic()
        census.held()
        if self._drain_stop is not None:
            self._drain_stop.abort()
            self._drain_stop = None
            self._windows = None
        if self._timer is not None:
            js.clearTimeout(self._timer)
        self._timer = js.setTimeout(self._tick, HOLD_POLL * 1000)

    def _resume(self) -> None:
        """The client read the backlog down (desiredSize > 0): read again, at once."""
        if self._ended or not self._held or self._reads is None:
            return
        self._held = False
        self._relay.resume(time.monotonic())
        self._schedule()
        self._reads.start(0)

    def _stop_reading(self) -> None:
        """Stop the pipe or the drain and cancel the reader (its pending read resolves as
        done): with both branches of a tee cancelled, the upstream is cancelled."""
        self._stop.abort()
        if self._drain_stop is not None:
            self._drain_stop.abort()
        if self._reader is not None:
            void_caller(js.Reflect.get(self._reader, "cancel"), self._reader)(None)

    async def to_end(self) -> None:
        """For a body nobody reads (an answer wanted whole): once the relay has ended and released
        everything, cancel the unread body, so the writer's `closed` settles."""
        await self._done.promise
        void_caller(js.Reflect.get(self.stream, "cancel"), self.stream)(None)

    def _chunk(self, chunk: Any, _controller: Any = None) -> None:
        if self._ended:
            return
        try:
            out = self._relay.feed(chunk if isinstance(chunk, bytes) else bytes_of(chunk))
        except Exception as exc:
            out = self._relay.crash(exc)
        self._send(out)

    def _upstream_closed(self, *_: Any) -> None:  # the sink's close(): the upstream ended
        self._last_words(None)

    def _upstream_failed(self, reason: Any = None, *_: Any) -> None:
        """The sink's abort(reason): the upstream failed (or our stop aborted it: nothing to add)."""
        self._last_words(reason if reason is not None else "the upstream stream was aborted")

    def _last_words(self, failure: Any) -> None:
        if self._ended:
            return
        if self._relay.closed:  # closed from outside (relay.cancel()): release all the same
            self._send(b"")
            return
        try:
            out = self._relay.end() if failure is None else self._relay.fail(failure)
        except Exception as exc:
            out = self._relay.crash(exc)
        if out:
            self._out(out)
        self._close_writer()
        self._end()

    def tick(self) -> None:
        self._timer = None
        if self._ended:
            return
        if self._held:  # no ping, no idle limit (see _hold)
            room = self._writer.desiredSize
            if room is None or room > 0:
                self._resume()
            elif time.monotonic() - self._held_at >= self._relay.give_up_after:
                # A client that reads nothing for as long as a silent model is waited out: the
                # answer stops (the model's stream is cancelled) with an error event after the
                # backlog, for a client that comes back after all.
                self.stop(stalled(self._relay.give_up_after))
            else:
                self._timer = js.setTimeout(self._tick, HOLD_POLL * 1000)
            return
        if self._relay.closed:  # closed from outside (relay.cancel()): stop the upstream too
            self._send(b"")
            return
        try:
            out = self._relay.tick(time.monotonic())
        except Exception as exc:
            out = self._relay.crash(exc)
        self._send(out)
        if not self._relay.closed:
            self._schedule()

    def _send(self, out: bytes) -> None:
        if out:
            self._out(out)
        if self._relay.closed:
            # The answer is whole (or has failed): close the body after what was written, and
            # stop the pipe, which cancels what is left upstream.
            self._close_writer()
            self._stop_reading()
            self._end()

    def _schedule(self) -> None:
        delay_ms = max(self._relay.next_deadline() - time.monotonic(), 0) * 1000
        self._timer = js.setTimeout(self._tick, delay_ms)

    def _close_writer(self) -> None:
        if self._writer is not None:
            void_caller(js.Reflect.get(self._writer, "close"), self._writer)(None)

    def stop(self, failure: Failed | None = None) -> None:
        """Stop the answer on purpose: the relay says so (stop_reason "cancelled", or the
        failure given) and the upstream read is cancelled."""
        if self._ended:
            return
        try:
            out = self._relay.cancel(failure)
        except Exception as exc:
            out = self._relay.crash(exc)
        self._send(out)

    def _client_gone(self, _event: Any = None) -> None:
        if self._ended:
            return
        log.info("client went away; upstream cancelled")
        census.client_gone()
        self._gone = True
        self._relay.abandon()
        self._stop_reading()
        if self._writer is not None:
            void_caller(js.Reflect.get(self._writer, "abort"), self._writer)(None)
        self._end()

    def _end(self) -> None:
        if self._ended:
            return
        self._ended = True
        if self._timer is not None:
            js.clearTimeout(self._timer)
            self._timer = None
        if self._signal is not None:
            self._signal.removeEventListener("abort", self._on_gone)
        if self._left is not None:
            self._left.signal.removeEventListener("abort", self._on_gone)
        # Not from inside a proxy's own call: destroy on the next turn of the loop.
        asyncio.get_event_loop().call_soon(self._release)

    def _release(self) -> None:
        for proxy in self._proxies:
            proxy.destroy()
        census.proxies_destroyed(self, len(self._proxies))
        self._proxies = []
        census.pipe_ended()
        try:
            if self._on_end is not None:
                self._on_end(self._gone)
        finally:
            self._done.resolve()
