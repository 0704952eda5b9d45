"""The rules of a durable conversation, as plain Python: what its Durable Object does with each
request, and the turn being written. The object (conversation_object.py) only wires JS to it:
its storage, timers, readers' streams and the model call.

A turn runs in the object, not in the request that asked for it: the model's answer goes
through the same relay as /api/v1/chat, every event numbered, then held for a short batch: the
batch is stored, then written to each attached reader, so no reader ever holds an event that is
not stored (and one that resumes is attached before the next batch goes out). A reader that
leaves detaches; when none has been attached for RESUME_GRACE_SECONDS the turn is stopped.

Everything storage can refuse is done before the model is called: the limits are checked
(MAX_CONVERSATION_BYTES counts the message being added), then the message and the turn's start
are written in one transaction. From then on the model call belongs to the turn: a stop, a
delete or the grace's end cuts it, and one that comes while the call is still opening aborts
it (`Abort`). A call that fails before it answers takes the message back out. While the answer
is written, a batch that would take the conversation past its byte limit is not stored or sent,
and the turn ends with conversation_too_large: room for an ending is always kept, so the limit
is never passed. A turn cut by a restart keeps what was stored of its answer in the history.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from common.answer_details import Timing, details_of
from common.chat_events import DONE, ChatEncoder, error_event
from common.conversation_store import (
    Event,
    Store,
    split_events,
    utf8_len,
)
from streaming.relay import Failed, Finished, Relay, Source
from streaming.think_tags import TEXT, Part
from workers_ai.service import Opened

log = logging.getLogger("conversation")

# A turn's events are stored and sent in batches: at most FLUSH_EVENTS at once, none held
# longer than FLUSH_MS, the first after a quiet spell not at all
# (bench/notes/2026-11-24-durable-conversations.md).
FLUSH_EVENTS = 64
FLUSH_MS = 20
# Bytes a turn keeps free for its ending (message_stop or an error, then done): an answer
# that would eat into them is cut, so the ending always fits under MAX_CONVERSATION_BYTES.
ENDING_RESERVE = 1024
FULL = Failed(
    code="conversation_too_large",
    message="The conversation has reached its size limit (MAX_CONVERSATION_BYTES); start a new one.",
)
# What a turn ends with when even its own ending would not fit (never more than the reserve).
FULL_ENDING = error_event(FULL.code, FULL.message) + DONE
UNSTORED = Failed(code="internal_error", message="The answer could not be stored.")
RESTARTED = Failed(
    code="upstream_incomplete",
    message="The answer was cut off when the conversation restarted.",
)


class Timer(Protocol):
    """One callback, run once `start(ms)` has passed (a start re-arms it)."""

    def start(self, ms: float) -> None: ...

    def cancel(self) -> None: ...

    def release(self) -> None:
        """Never again: frees what it holds."""
        ...


class Reader(Protocol):
    """One attached client: the bytes it is sent, in order, then close()."""

    def send(self, data: bytes) -> None: ...

    def close(self) -> None: ...


class Pipe(Protocol):
    """What runs a relay over the model's stream (RelayPipe in the object)."""

    def stop(self, failure: Failed | None = None) -> None: ...


class Abort(Protocol):
    """Aborts a model call that is still opening."""

    def abort(self) -> None: ...


class Wiring(Protocol):
    """What only the object's JS side can do."""

    def timer(self, then: Callable[[], None]) -> Timer: ...

    def reader(self) -> Reader: ...

    def abort(self) -> Abort: ...

    def open(
        self, model: str, inputs: dict[str, Any], *, affinity: str, abort: Abort
    ) -> Awaitable[Opened]:
        """service.open_answer, its model call aborted by `abort` (then it raises ClientGone)."""
        ...

    def pipe(
        self,
        source: Source,
        relay: Relay,
        on_end: Callable[[bool], None],
        out: Callable[[bytes], None],
    ) -> Pipe: ...


class Recorder(ChatEncoder):
    """Our SSE events, and the answer kept whole for the conversation's history; a mark lets
    a turn take back what it did not store."""

    __slots__ = ("ending", "model", "reasoning", "text", "timing")

    def __init__(self, model: str = "") -> None:
        super().__init__()
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.ending: Finished | Failed | None = None
        self.model = model  # the model that writes the answer
        self.timing = Timing()

    def answered_by(self, model: str) -> None:
        """A fallback answered instead of the model asked: message_stop names it."""
        self._model = self.model = model

    def parts(self, parts: list[Part]) -> bytes:
        for kind, text in parts:
            (self.text if kind == TEXT else self.reasoning).append(text)
            self.timing.part(kind != TEXT)
        return super().parts(parts)

    def details(self) -> dict[str, Any]:
        """What the answer's page shows under it (answer_details.py), as it ends."""
        ending = self.ending
        if isinstance(ending, Finished):
            return details_of(
                self.timing,
                model=self.model,
                stop_reason=ending.stop_reason,
                while_thinking=ending.while_thinking,
                usage=ending.usage,
            )
        error = (ending.code, ending.message) if ending is not None else None
        return details_of(self.timing, model=self.model, stop_reason=None, error=error)

    def finished(self, stop: Finished) -> bytes:
        self.ending = stop
        return super().finished(stop)

    def failed(self, failure: Failed) -> bytes:
        self.ending = failure
        return super().failed(failure)

    def mark(self) -> tuple[int, int]:
        return len(self.text), len(self.reasoning)

    def bytes_since(self, mark: tuple[int, int]) -> int:
        """What the parts since `mark` add to the assistant message as it is stored: its text
        as JSON without the quotes (the turn's reserve holds those two), its reasoning."""
        text = sum(utf8_len(json.dumps(t, ensure_ascii=False)) - 2 for t in self.text[mark[0] :])
        return text + sum(utf8_len(t) for t in self.reasoning[mark[1] :])

    def rollback(self, mark: tuple[int, int]) -> None:
        del self.text[mark[0] :]
        del self.reasoning[mark[1] :]


def answer_of(events: list[Event]) -> tuple[str, str]:
    """(text, reasoning) of an answer, read back from its stored events."""
    text: list[str] = []
    reasoning: list[str] = []
    for event in events:
        name, _, rest = event.data.partition(b"\n")
        if name in (b"event: content_block_delta", b"event: thinking_delta"):
            piece = json.loads(rest.removeprefix(b"data: "))["text"]
            (text if name.endswith(b"content_block_delta") else reasoning).append(piece)
    return "".join(text), "".join(reasoning)


class Turn:
    """One answer being written: its events, batched, stored and sent; its readers; its end."""

    def __init__(
        self,
        store: Store,
        number: int,
        *,
        grace: float,
        wiring: Wiring,
        room: int,
        on_done: Callable[[Turn], None],
    ) -> None:
        self.store = store
        self.number = number
        self.seq = 0
        self.grace = grace
        self.readers: dict[int, Reader] = {}
        self.encoder = Recorder()
        self.relay: Relay | None = None
        self.model: str | None = None  # the model that answers, once the call has opened
        self.pipe: Pipe | None = None
        self.opening: Abort | None = None  # the model call, while it has not answered
        self.stop_asked: tuple[Failed | None] | None = None  # a stop that came while opening
        self.deleted = False  # the conversation is being deleted: nothing more is stored
        self.room = room  # bytes its events and answer may store, the ending's reserve aside
        self.used = 0
        self._committed = self.encoder.mark()
        self._on_done = on_done
        self._next_reader = 0
        self._held: list[bytes] = []  # events (and comments) held for one batch, in order
        self._held_events = 0
        self._window_open = False
        self._window = wiring.timer(self._window_over)
        self._grace = wiring.timer(self._grace_over)
        self._stopped = False
        self._unstored = False  # storage refused a batch: what is left is sent, not stored
        self.over = False  # ended: its readers closed, its timers released

    # --- the relay's bytes -----------------------------------------------------------------

    def out(self, data: bytes) -> None:
        """The relay's bytes: each event held for a batch, which is stored and then sent to
        every reader. The first events after a quiet spell go at once and open a window of
        FLUSH_MS; what comes within it waits for the window's end."""
        for part in split_events(data):
            self._held.append(part)
            if not part.startswith(b":"):  # a keep-alive comment: sent, not stored
                self._held_events += 1
        if not self._window_open:
            self._window_open = True
            self._window.start(FLUSH_MS)
            self.flush()
        elif self._held_events >= FLUSH_EVENTS:
            self.flush()

    def _window_over(self) -> None:
        """The window's end: what came within it goes, and opens the next; else it is quiet."""
        self._window_open = False
        if self._held:
            self._window_open = True
            self._window.start(FLUSH_MS)
            self.flush()

    def flush(self) -> None:
        """Stores the held events, then sends them: a reader is never sent an event that is
        not stored (one that resumes flushes first, so its replay has everything at once)."""
        if not self._held:
            return
        held, self._held, self._held_events = self._held, [], 0
        cut, size = None, 0
        if not self.deleted and not self._unstored:
            held, size, cut = self._fit(held)
        events: list[Event] = []
        wire: list[bytes] = []
        for part in held:
            if part.startswith(b":"):
                wire.append(part)
                continue
            self.seq += 1
            events.append(Event(turn=self.number, seq=self.seq, data=part))
            wire.append(events[-1].wire())
        if events and not self.deleted and not self._unstored:
            try:
                self.store.atomic(lambda: self.store.append_all(events))
            except Exception as exc:  # what is not stored is not sent; the turn ends
                log.error("turn %d: a batch of events could not be stored: %r", self.number, exc)
                self.seq -= len(events)
                self.encoder.rollback(self._committed)
                self._unstored = True
                self._cut(UNSTORED)
                return
            self.used += size
            self._committed = self.encoder.mark()
        if wire:
            data = b"".join(wire)
            for reader in list(self.readers.values()):
                reader.send(data)
        if cut is not None:  # last: the ending it brings comes back through out()
            self._cut(cut)

    def _fit(self, held: list[bytes]) -> tuple[list[bytes], int, Failed | None]:
        """What of a batch may be stored within the turn's room, the bytes it adds, and the
        failure to cut the turn with when that is not all of it. Its answer text counts too:
        it is stored again as the assistant message at the turn's end. The answer's ending
        may use the reserve; if even that is too little, a short ending of ours goes instead."""
        size = sum(len(p) for p in held if not p.startswith(b":"))
        size += self.encoder.bytes_since(self._committed)
        ending = self.relay is not None and self.relay.closed
        # The ending may use the reserve, but for the 2 quotes of the assistant message's JSON.
        room = self.room + (ENDING_RESERVE - 2 if ending else 0)
        if self.used + size <= room:
            return held, size, None
        self.encoder.rollback(self._committed)
        comments = [p for p in held if p.startswith(b":")]
        if ending:
            return [*comments, *split_events(FULL_ENDING)], len(FULL_ENDING), None
        return comments, 0, FULL

    def _cut(self, failure: Failed) -> None:
        """End the answer with `failure`: through the pipe while it runs; when the relay has
        already closed (its ending was what failed to be stored), with an ending of ours."""
        self._stopped = True
        if self.relay is not None and self.relay.closed:
            self.out(ChatEncoder().failed(failure))
        elif self.pipe is not None:
            self.pipe.stop(failure)

    # --- readers ---------------------------------------------------------------------------

    def attach(self, reader: Reader) -> Callable[[], None]:
        """The reader gets every batch from now on; the returned function detaches it."""
        self._next_reader += 1
        key = self._next_reader
        self.readers[key] = reader
        self._grace.cancel()
        return lambda: self.detach(key)

    def detach(self, key: int) -> None:
        reader = self.readers.pop(key, None)
        if reader is None:
            return
        reader.close()
        if not self.readers and not self.over:
            if self.grace <= 0:
                self.stop()
            else:
                self._grace.start(self.grace * 1000)

    def _grace_over(self) -> None:
        if not self.readers and not self.over:
            log.info("no reader for %gs: turn %d stopped", self.grace, self.number)
            self.stop()

    # --- its end ---------------------------------------------------------------------------

    def stop(self, failure: Failed | None = None) -> bool:
        """Stop the answer on purpose: the model call is cut (aborted while it opens), the
        answer ends with stop_reason "cancelled" (or the failure). False if already stopping."""
        if self._stopped or self.over:
            return False
        self._stopped = True
        if self.pipe is not None:
            self.pipe.stop(failure)
        elif self.opening is not None:
            self.stop_asked = (failure,)
            self.opening.abort()
        return True

    def run(self, relay: Relay, pipe: Pipe | None) -> None:
        """The model answered: its stream runs through `pipe` (a stop asked meanwhile cuts it
        at once). None: a one-shot answer, relayed whole now."""
        self.opening = None
        self.relay = relay
        self.pipe = pipe
        if pipe is not None and self.stop_asked is not None:
            pipe.stop(self.stop_asked[0])

    def ended(self, _gone: bool = False) -> None:
        if self.over:
            return
        self.over = True
        self._window.cancel()
        self._window_open = False
        self.flush()
        self._grace.cancel()
        for reader in self.readers.values():
            reader.close()
        self.readers.clear()
        self._window.release()
        self._grace.release()
        self._on_done(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """What the object answers: JSON with a status, or an SSE body (bytes, or a reader that
    stays attached, with the function that detaches it when its client leaves)."""

    status: int = 200
    json: object = None
    sse: bytes | None = None
    reader: Reader | None = None
    detach: Callable[[], None] | None = None
