"""The relay: upstream bytes in, client bytes out, with keep-alive pings and an idle limit.

It is a synchronous state machine with no I/O and no clock of its own: the caller feeds
it what the upstream sent and the time, and sends on what it returns. In the Worker a JS
pipe drives it (shell/jsstream.py's RelayPipe), one call per upstream chunk, so no asyncio task
or promise is made per token; relay_whole() runs a one-shot result. The host tests drive it
with asyncio (tests/host_driver.py) or call tick(now) themselves. What the relay decodes reaches
an Encoder as neutral calls (parts, ping, finished, failed): the app's SSE protocol and the
OpenAI chunk format are two encoders over the same relay.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from streaming.stop import StopScanner
from streaming.upstream import TEXT, Part, ToolCall, UpstreamDecoder


class Source(Protocol):
    """An open upstream body. The shell pipes it into the relay (shell/jsstream.py's RelayPipe);
    the host tests read it (tests/host_driver.py). cancel() stops it for good."""

    def cancel(self) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class OneShot:
    """A whole (non-streamed) Workers AI result, already converted to Python values."""

    result: object

    def frames(self) -> bytes:
        """The result as the one-frame stream it would have been, for the same decoder."""
        return b"data: %s\n\ndata: [DONE]\n\n" % json.dumps(self.result).encode()


Upstream = Source | OneShot


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished:
    """stop_reason is one of stop, length, tool_calls, content_filter (see upstream);
    tool_calls whenever the model called a tool and was not cut short.

    while_thinking: the budget ran out (length) before any answer text, while the model was
    still reasoning; the page says so instead of showing an empty answer.
    """

    stop_reason: str
    usage: dict[str, int] | None
    while_thinking: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Failed:
    code: str
    message: str


class Encoder(Protocol):
    def start(self) -> bytes: ...

    def parts(self, parts: list[Part]) -> bytes:
        """Text and reasoning parts, (TEXT | THINKING, str), in stream order."""
        ...

    def tool_calls(self, calls: list[ToolCall]) -> bytes:
        """Pieces of the model's tool calls (see upstream.ToolCall); an encoder may drop them."""
        ...

    def ping(self) -> bytes: ...

    def finished(self, stop: Finished) -> bytes: ...

    def failed(self, failure: Failed) -> bytes: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    ping_after: float
    give_up_after: float


STREAM_FAILED = Failed(code="upstream_error", message="The model stream failed.")
INTERNAL = Failed(code="internal_error", message="The answer could not be completed.")
INCOMPLETE = Failed(
    code="upstream_incomplete", message="The model stream ended before the answer was complete."
)


def stalled(seconds: float) -> Failed:
    """How an answer ends whose client read nothing for `seconds` while its backlog was full."""
    return Failed(
        code="client_stalled",
        message=f"The client read nothing for {seconds:g} seconds; the answer was stopped.",
    )


class Relay:
    """What a driver must do (RelayPipe in the Worker, the tests' drive(), relay_whole() for a
    one-shot result), the one contract both follow:

    1. send start()'s bytes first;
    2. call feed(chunk) for each upstream chunk, in order, and send what it returns;
    3. call tick(now) at (or after) next_deadline(), and send what it returns;
    4. at the upstream's end call end(); when the upstream fails, fail(reason); when its own
       code around a call raises, crash(exc); each returns the last bytes to send;
    5. when the client goes away, abandon(): nothing more is sent;
    6. once ``closed`` is true, send nothing more and stop (cancel) the upstream read.

    Every way an answer ends (finished, failed, cancelled on purpose, abandoned) goes through
    one method, _close(), which sets ``closed`` and ``ending`` once.

    Feeding it reads no clock (a clock read costs a JS round trip per token in Pyodide):
    feed() only notes that data came or went, and tick() dates that activity when it runs.
    Ticks come at least every quarter of the shorter interval, so a ping or a timeout is
    late by at most a quarter of its interval.

    It keeps what the request's log line needs (request_log): how it ended, when the first
    bytes of the answer went out, and notes in place of free-text log lines, since it runs
    in JS callbacks that no longer know which request they serve.
    """

    __slots__ = (
        "_decoder",
        "_encoder",
        "_got_data",
        "_last_data",
        "_last_sent",
        "_last_tick",
        "_max_tokens",
        "_sent",
        "_step",
        "_stops",
        "_timing",
        "closed",
        "ending",
        "first_output_at",
        "notes",
    )

    def __init__(
        self,
        encoder: Encoder,
        timing: Timing,
        *,
        now: float,
        max_tokens: int | None = None,
        opens_thinking: bool = False,
        stops: tuple[str, ...] = (),
    ) -> None:
        self._decoder = UpstreamDecoder(opens_thinking=opens_thinking)
        self._stops = StopScanner(stops) if stops else None
        self._encoder = encoder
        self._timing = timing
        self._max_tokens = max_tokens
        self._step = min(timing.ping_after, timing.give_up_after) / 4
        self._last_data = self._last_sent = self._last_tick = now
        self._got_data = self._sent = False
        self.closed = False  # the terminal event has been written; send nothing more
        self.ending: Finished | Failed | None = None
        self.first_output_at: float | None = None  # monotonic; one clock read per answer
        self.notes: list[str] = []

    @property
    def usage(self) -> dict[str, int] | None:
        return self._decoder.frames.usage

    @property
    def malformed(self) -> int:
        return self._decoder.frames.malformed

    def start(self) -> bytes:
        return self._encoder.start()

    def feed(self, chunk: bytes) -> bytes:
        if self.closed:
            return b""
        self._got_data = True
        decoded = self._decoder.feed(chunk)
        parts = self._cut(decoded.parts) if self._stops is not None else decoded.parts
        stopped = self._stops is not None and self._stops.stopped
        if decoded.done and not stopped:
            parts = parts + self._held()
        out = self._encoder.parts(parts) if parts else b""
        if decoded.tool_calls and not stopped:
            out += self._encoder.tool_calls(decoded.tool_calls)
        if decoded.done or stopped:
            out += self._finish()
        if out:
            self._sent = True
            if self.first_output_at is None:
                self.first_output_at = time.monotonic()
        return out

    def _cut(self, parts: list[Part]) -> list[Part]:
        """The parts up to the first stop string of the answer's text; reasoning is not cut."""
        assert self._stops is not None
        out: list[Part] = []
        for kind, text in parts:
            if kind == TEXT:
                text = self._stops.feed(text)
            if text:
                out.append((kind, text))
            if self._stops.stopped:
                break
        return out

    def _held(self) -> list[Part]:
        """Text held back as a possible start of a stop string, once the answer ends otherwise."""
        held = self._stops.flush() if self._stops is not None else ""
        return [(TEXT, held)] if held else []

    def _parts(self, parts: list[Part]) -> bytes:
        return self._encoder.parts(parts) if parts else b""

    def end(self) -> bytes:
        """The upstream ended: complete after [DONE], reported as incomplete otherwise."""
        if self.closed:
            return b""
        decoded = self._decoder.flush()
        parts = self._cut(decoded.parts) if self._stops is not None else decoded.parts
        stopped = self._stops is not None and self._stops.stopped
        out = self._parts(parts + ([] if stopped else self._held()))
        if decoded.tool_calls and not stopped:
            out += self._encoder.tool_calls(decoded.tool_calls)
        if self._decoder.done or stopped:
            return out + self._finish()
        self.notes.append("upstream ended without [DONE]")
        return out + self._fail(INCOMPLETE)

    def fail(self, error: object) -> bytes:
        """The upstream stream errored mid-answer; what was sent stays sent."""
        if self.closed:
            return b""
        self.notes.append(f"upstream stream ended abnormally: {error}")
        return self._parts(self._held()) + self._fail(STREAM_FAILED)

    def crash(self, error: BaseException) -> bytes:
        """Our own code failed mid-answer: still end with an error event, never a broken stream."""
        if self.closed:
            return b""
        self.notes.append(f"relay failed: {error!r}")
        return self._fail(INTERNAL)

    def cancel(self, failure: Failed | None = None) -> bytes:
        """Stopped on purpose (a durable conversation's stop, or no reader for too long): what
        is held goes out, then the ending, with stop_reason "cancelled"; or, given a failure
        (the conversation can store no more), that error instead."""
        if self.closed:
            return b""
        out = self._parts(self._held())
        if failure is not None:
            return out + self._fail(failure)
        return out + self._close(
            Finished(stop_reason="cancelled", usage=self._decoder.frames.usage)
        )

    def abandon(self) -> None:
        """The client went away: the answer ends with nothing more sent (no one would read it);
        ``ending`` stays None, which the request log reads as the client's leaving."""
        if not self.closed:
            self._close(None)

    @property
    def give_up_after(self) -> float:
        """UPSTREAM_TIMEOUT_SECONDS: the longest silence an answer waits out (the model's, or a
        held-back client's: the shell stops an answer whose client read nothing that long)."""
        return self._timing.give_up_after

    @property
    def quiet_step(self) -> float:
        """A quarter of the shorter of the ping interval and the idle limit: the longest a
        driver may hold what it has read without weakening either (a windowed reader)."""
        return self._step

    def resume(self, now: float) -> None:
        """The driver held back: it read nothing from the upstream (and ticked not at all)
        while the client read nothing and the client's backlog was full, and reads again
        from `now`. The silence was the client's, not the model's: the idle limit and the
        ping interval start again from now."""
        if self.closed:
            return
        self._last_data = self._last_sent = self._last_tick = now
        self._got_data = self._sent = False

    def next_deadline(self) -> float:
        timing = self._timing
        return min(
            self._last_sent + timing.ping_after,
            self._last_data + timing.give_up_after,
            self._last_tick + self._step,
        )

    def tick(self, now: float) -> bytes:
        """Called at (or after) next_deadline(): a ping, or the timeout that closes the relay."""
        if self.closed:
            return b""
        self._last_tick = now
        if self._got_data:
            self._got_data = False
            self._last_data = now
        if self._sent:
            self._sent = False
            self._last_sent = now
        if now - self._last_data >= self._timing.give_up_after:
            self.notes.append(f"upstream silent for {now - self._last_data:.1f}s; giving up")
            failure = Failed(
                code="upstream_timeout",
                message=f"The model sent nothing for {self._timing.give_up_after:g} seconds.",
            )
            return self._parts(self._held()) + self._fail(failure)
        if now - self._last_sent >= self._timing.ping_after:
            self._last_sent = now
            return self._encoder.ping()
        return b""

    def _finish(self) -> bytes:
        decoder = self._decoder.frames
        reason = decoder.finish_reason
        if self._stops is not None and self._stops.stopped:
            reason = "stop"  # the relay's own stop string: the model did not get to finish
        else:
            if reason is None:
                completion = (decoder.usage or {}).get("completion_tokens")
                limit = self._max_tokens
                reason = "length" if limit and completion and completion >= limit else "stop"
            if reason == "stop" and decoder.tool_calls_seen:
                # Native frames carry no finish reason, and some models say "stop" after
                # calls: clients run the tools only on "tool_calls".
                reason = "tool_calls"
        if decoder.unknown_finish_reason is not None:
            self.notes.append(
                f"unknown finish_reason {decoder.unknown_finish_reason!r} reported as {reason!r}"
            )
        while_thinking = reason == "length" and decoder.thinking_seen and not decoder.text_seen
        return self._close(
            Finished(stop_reason=reason, usage=decoder.usage, while_thinking=while_thinking)
        )

    def _fail(self, failure: Failed) -> bytes:
        return self._close(failure)

    def _close(self, ending: Finished | Failed | None) -> bytes:
        """The one way an answer ends: closed from here on, and the terminal event's bytes."""
        self.closed = True
        self.ending = ending
        if ending is None:
            return b""
        if isinstance(ending, Finished):
            return self._encoder.finished(ending)
        return self._encoder.failed(ending)


def relay_whole(relay: Relay, whole: OneShot) -> bytes:
    """A one-shot result through the relay in one go: the same bytes a stream would give."""
    out = relay.start()
    try:
        out += relay.feed(whole.frames())
        out += relay.end()
    except Exception as exc:
        out += relay.crash(exc)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Relayed:
    """A streamed body: the upstream and the relay that re-frames it.

    The shell runs it (a JS pipe for a stream, relay_whole() for a one-shot result) and
    stops the upstream when the client goes away.
    """

    source: Upstream
    relay: Relay
    # Called once when the answer has ended and all is released, with whether the client went
    # away first (a stored response is written then: responses_stored.saver).
    after: Callable[[bool], None] | None = None
