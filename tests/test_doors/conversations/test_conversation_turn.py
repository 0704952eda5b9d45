"""The durable turn's rules on the host: batches, readers, the grace, stop and delete (also
while the model call opens), the limits, storage that refuses, a restart. The Durable Object's
JS is replaced by fakes (a manual clock, readers that collect, a pipe the test drives) and its
SQLite by the standard library's, with the Durable Object's limits."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from fakes import FakeSource, LiteSql

from base.errors import ApiError, ClientGone
from base.settings import Settings, load
from common.chat_events import DONE
from common.conversation_store import Store, message_bytes
from doors.conversations.conversation_room import Room
from doors.conversations.conversation_turn import (
    ENDING_RESERVE,
    FLUSH_EVENTS,
    FLUSH_MS,
    FULL_ENDING,
    Reply,
    answer_of,
)
from streaming.relay import Failed, OneShot, Relay, Source
from workers_ai.service import Opened

GEMMA = "@cf/google/gemma-4-26b-a4b-it"  # vision
LLAMA = "@cf/meta/llama-3.1-8b-instruct-fast"  # text only, no reasoning
GPT_OSS = "@cf/openai/gpt-oss-20b"  # reasons
PNG = "data:image/png;base64,iVBORw0KGgo="


def settings(**vars: str) -> Settings:
    return load({"AI_MODELS": f"{GEMMA},{LLAMA},{GPT_OSS}", **vars}.get)


# --- fakes of the object's JS ----------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[Timer] = []

    def advance(self, ms: float) -> None:
        target = self.now + ms
        while True:
            due = [t for t in self.timers if t.at is not None and t.at <= target]
            if not due:
                break
            timer = min(due, key=lambda t: t.at or 0.0)
            self.now = timer.at or 0.0
            timer.at = None
            timer.then()
        self.now = target


class Timer:
    def __init__(self, clock: Clock, then: Callable[[], None]) -> None:
        self.clock, self.then = clock, then
        self.at: float | None = None
        self.released = False

    def start(self, ms: float) -> None:
        assert not self.released, "a released timer was started"
        self.at = self.clock.now + ms

    def cancel(self) -> None:
        self.at = None

    def release(self) -> None:
        self.at, self.released = None, True


class Reader:
    def __init__(self) -> None:
        self.data = b""
        self.closed = False

    def send(self, data: bytes) -> None:
        assert not self.closed, "sent to a closed reader"
        self.data += data

    def close(self) -> None:
        self.closed = True


class Abort:
    def __init__(self) -> None:
        self.aborted = False
        self.changed = asyncio.Event()

    def abort(self) -> None:
        self.aborted = True
        self.changed.set()


def frame(text: str) -> bytes:
    return b"data: " + json.dumps({"response": text}).encode() + b"\n\n"


class Pipe:
    """The test pumps the model's stream through the relay, as RelayPipe does; the end is
    reported on the next turn of the loop (wiring.settle()), as RelayPipe's release is."""

    def __init__(
        self,
        wiring: Wiring,
        relay: Relay,
        on_end: Callable[[bool], None],
        out: Callable[[bytes], None],
    ) -> None:
        self.wiring, self.relay, self.on_end, self.out = wiring, relay, on_end, out
        self.stops: list[Failed | None] = []
        self.ended = False

    def feed(self, *texts: str) -> None:
        for text in texts:
            if not self.ended:
                self._send(self.relay.feed(frame(text)))

    def finish(self) -> None:
        if not self.ended:
            self._send(self.relay.feed(b"data: [DONE]\n\n"))

    def stop(self, failure: Failed | None = None) -> None:
        self.stops.append(failure)
        if not self.ended:
            self._send(self.relay.cancel(failure))

    def _send(self, out: bytes) -> None:
        if out:
            self.out(out)
        if self.relay.closed and not self.ended:
            self.ended = True
            self.wiring.soon.append(lambda: self.on_end(False))


class Wiring:
    """What the object's JS does, as plain data: open() answers as `answer` says (a stream,
    OneShot, an exception), after `gate` is set when there is one; an abort while it waits
    raises ClientGone, as WorkersAi does, unless `deaf` (the abort came after run() answered)."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.soon: list[Callable[[], None]] = []
        self.readers: list[Reader] = []
        self.aborts: list[Abort] = []
        self.pipes: list[Pipe] = []
        self.sources: list[FakeSource] = []
        self.opens: list[tuple[str, dict[str, Any], str]] = []
        self.answer: object = "stream"
        self.gate: asyncio.Event | None = None
        self.deaf = False

    def timer(self, then: Callable[[], None]) -> Timer:
        timer = Timer(self.clock, then)
        self.clock.timers.append(timer)
        return timer

    def reader(self) -> Reader:
        self.readers.append(Reader())
        return self.readers[-1]

    def abort(self) -> Abort:
        self.aborts.append(Abort())
        return self.aborts[-1]

    async def open(
        self, model: str, inputs: dict[str, Any], *, affinity: str, abort: Any
    ) -> Opened:
        assert isinstance(abort, Abort)
        self.opens.append((model, inputs, affinity))
        if self.gate is not None:
            gate = asyncio.ensure_future(self.gate.wait())
            aborted = asyncio.ensure_future(abort.changed.wait())
            await asyncio.wait((gate, aborted), return_when=asyncio.FIRST_COMPLETED)
            gate.cancel()
            aborted.cancel()
        if abort.aborted and not self.deaf:
            raise ClientGone()
        if isinstance(self.answer, BaseException):
            raise self.answer
        if isinstance(self.answer, OneShot):
            return Opened(source=self.answer, model=model)
        self.sources.append(FakeSource([]))
        return Opened(source=self.sources[-1], model=model)

    def pipe(
        self,
        source: Source,
        relay: Relay,
        on_end: Callable[[bool], None],
        out: Callable[[bytes], None],
    ) -> Pipe:
        self.pipes.append(Pipe(self, relay, on_end, out))
        return self.pipes[-1]

    def settle(self) -> None:
        while self.soon:
            self.soon.pop(0)()


def room(lite: LiteSql | None = None, wiring: Wiring | None = None) -> tuple[Room, Wiring, LiteSql]:
    lite = lite or LiteSql()
    wiring = wiring or Wiring()
    r = Room(Store(lite), wiring)
    return r, wiring, lite


def created(
    s: Settings | None = None, history: list[dict[str, Any]] | None = None
) -> tuple[Room, Wiring, LiteSql]:
    r, wiring, lite = room()
    assert r.create("c0ffee", history or [], s or settings()).status == 201
    return r, wiring, lite


def say(text: str, model: str = GEMMA, **extra: Any) -> dict[str, Any]:
    return {"content": text, "model": model, "max_tokens": 100, **extra}


def run(coroutine: Coroutine[Any, Any, Reply]) -> Reply:
    return asyncio.run(coroutine)


def events(raw: bytes) -> list[tuple[str, str, str]]:
    """(id, event, data) of each event; comments left out."""
    out = []
    for block in raw.decode().split("\n\n")[:-1]:
        if block.startswith(":"):
            continue
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        out.append((lines.get("id", ""), lines["event"], lines["data"]))
    return out


def texts(raw: bytes) -> str:
    return "".join(
        json.loads(data)["text"] for _, name, data in events(raw) if name == "content_block_delta"
    )


def ending(raw: bytes) -> list[tuple[str, str]]:
    return [(name, data) for _, name, data in events(raw)][-2:]


CANCELLED = [("message_stop", '{"stop_reason":"cancelled"}'), ("done", "{}")]


# --- a turn ------------------------------------------------------------------------------------


def bare(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without an answer's details (their times are the real clock's)."""
    return [{k: v for k, v in m.items() if k != "details"} for m in messages]


def test_an_answer_is_kept_with_its_details_model_ending_usage_and_times() -> None:
    r, wiring, _ = created()
    run(r.message("c0ffee", say("hello"), settings()))
    pipe = wiring.pipes[0]
    pipe.feed("Hi")
    pipe.finish()
    wiring.settle()
    details = r.store.messages()[-1]["details"]
    times = {k: details.pop(k) for k in ("ms", "writing_ms", "at")}
    assert details == {"model": GEMMA, "stop_reason": "stop"}, details
    assert all(isinstance(v, int) and v >= 0 for v in times.values()), times
    assert times["writing_ms"] <= times["ms"], times
    # A fork carries them into the new conversation, which gives them back.
    fork, _, _ = created()
    history = [{"role": "user", "content": "hello"}, r.store.messages()[-1]]
    fork.create("f00d", history, settings())
    assert fork.store.messages() == history


def test_a_turn_is_numbered_batched_stored_before_it_is_sent_and_kept() -> None:
    r, wiring, lite = created()
    reply = run(r.message("c0ffee", say("hello"), settings()))
    [reader] = wiring.readers
    assert reply.reader is reader and r.turn is not None
    [(model, inputs, affinity)] = wiring.opens
    assert (model, affinity, inputs["messages"]) == (
        GEMMA,
        "c0ffee",
        [{"role": "user", "content": "hello"}],
    )
    pipe = wiring.pipes[0]
    pipe.feed("Hel")  # the first after a quiet spell: stored and sent at once
    assert texts(reader.data) == "Hel"
    assert [e.seq for e in r.store.events_after(1, 0)] == [1]
    pipe.feed("lo", " you")  # within the window: held
    assert texts(reader.data) == "Hel" and len(r.store.events_after(1, 0)) == 1
    wiring.clock.advance(FLUSH_MS)  # the window's end: stored, then sent
    assert texts(reader.data) == "Hello you" and len(r.store.events_after(1, 0)) == 3
    pipe.feed(*(["x"] * FLUSH_EVENTS))  # a full batch goes before the window ends
    assert texts(reader.data) == "Hello you" + "x" * FLUSH_EVENTS
    pipe.finish()
    wiring.settle()
    assert reader.closed and r.turn is None
    wire = reader.data
    assert [i for i, _, _ in events(wire)] == [f"1:{n}" for n in range(1, len(events(wire)) + 1)]
    assert ending(wire) == [("message_stop", '{"stop_reason":"stop"}'), ("done", "{}")]
    assert b"".join(e.wire() for e in r.store.events_after(1, 0)) == wire
    assert bare(r.store.messages())[-1] == {"role": "assistant", "content": texts(wire)}
    assert r.store.size == lite.stored_bytes()
    assert all(t.released for t in wiring.clock.timers)


def test_a_reader_that_resumes_mid_turn_gets_every_event_once_then_live() -> None:
    r, wiring, _ = created()
    run(r.message("c0ffee", say("hi"), settings()))
    pipe = wiring.pipes[0]
    pipe.feed("a")
    pipe.feed("b", "c")  # held in the window
    mid = r.resume((1, 1))
    assert isinstance(mid.reader, Reader) and mid.detach is not None
    assert [i for i, _, _ in events(mid.reader.data)] == ["1:2", "1:3"]  # the held ones, stored
    pipe.feed("d")
    wiring.clock.advance(FLUSH_MS)
    pipe.finish()
    wiring.settle()
    first = wiring.readers[0].data
    assert events(first)[1:] == events(mid.reader.data)
    assert run_resume(r, (1, 2)) == b"".join(e.wire() for e in r.store.events_after(1, 2))


def run_resume(r: Room, after: tuple[int, int] | None) -> bytes:
    reply = r.resume(after)
    assert reply.sse is not None and reply.reader is None
    return reply.sse


def test_a_resume_of_an_ended_answer_ends_with_done_even_past_its_end() -> None:
    r, wiring, _ = created()
    with pytest.raises(ApiError) as none:
        r.resume(None)
    assert (none.value.status, none.value.code) == (404, "no_turn")
    run(r.message("c0ffee", say("hi"), settings()))
    wiring.pipes[0].feed("a", "b")
    wiring.pipes[0].finish()
    wiring.settle()
    last = r.store.events_after(1, 0)[-1].seq
    assert run_resume(r, (1, last)) == DONE  # nothing missed: the end says so
    assert run_resume(r, (1, last + 50)) == DONE
    assert run_resume(r, (7, 3)).endswith(DONE) and len(events(run_resume(r, (7, 3)))) == last


# --- readers and the grace ----------------------------------------------------------------------


def test_no_reader_for_the_grace_stops_the_turn_and_a_reader_back_in_time_keeps_it() -> None:
    s = settings(RESUME_GRACE_SECONDS="2")
    r, wiring, _ = created(s)
    reply = run(r.message("c0ffee", say("long"), s))
    pipe = wiring.pipes[0]
    pipe.feed("a")
    assert reply.detach is not None
    reply.detach()  # its client left
    wiring.clock.advance(1500)
    back = r.resume((1, 1))
    assert back.reader is not None and pipe.stops == []
    wiring.clock.advance(5000)
    assert pipe.stops == []  # a reader is attached: no grace runs
    assert back.detach is not None
    back.detach()
    wiring.clock.advance(1999)
    assert pipe.stops == []
    wiring.clock.advance(1)
    assert pipe.stops == [None]
    wiring.settle()
    assert bare(r.store.messages())[-1] == {"role": "assistant", "content": "a"}
    assert ending(run_resume(r, None)) == CANCELLED


def test_a_grace_of_zero_stops_the_turn_when_its_last_reader_leaves() -> None:
    s = settings(RESUME_GRACE_SECONDS="0")
    r, wiring, _ = created(s)
    reply = run(r.message("c0ffee", say("x"), s))
    assert reply.detach is not None
    reply.detach()
    assert wiring.pipes[0].stops == [None]


def test_stop_ends_the_answer_and_says_whether_it_stopped_anything() -> None:
    r, wiring, _ = created()
    run(r.message("c0ffee", say("x"), settings()))
    wiring.pipes[0].feed("part")
    assert r.stop().json == {"stopped": True}
    assert r.stop().json == {"stopped": False}
    wiring.settle()
    assert ending(wiring.readers[0].data) == CANCELLED
    assert r.stop().json == {"stopped": False}
    assert bare(r.store.messages())[-1] == {"role": "assistant", "content": "part"}


def test_a_message_while_a_turn_runs_or_opens_is_409() -> None:
    async def main() -> None:
        r, wiring, _ = created()
        wiring.gate = asyncio.Event()
        first = asyncio.ensure_future(r.message("c0ffee", say("one"), settings()))
        await asyncio.sleep(0)
        with pytest.raises(ApiError) as busy:
            await r.message("c0ffee", say("two"), settings())
        assert (busy.value.status, busy.value.code) == (409, "turn_in_progress")
        wiring.gate.set()
        await first
        with pytest.raises(ApiError):
            await r.message("c0ffee", say("three"), settings())
        assert len(wiring.opens) == 1

    asyncio.run(main())


# --- the model call is the turn's ----------------------------------------------------------------


@pytest.mark.parametrize("by", ["stop", "delete", "grace"])
def test_a_stop_delete_or_grace_while_the_call_opens_aborts_it(by: str) -> None:
    s = settings(RESUME_GRACE_SECONDS="0")

    async def main() -> tuple[Room, Wiring, Reply, LiteSql, int]:
        r, wiring, lite = created(s)
        wiring.gate = asyncio.Event()  # run() has not answered yet
        pending = asyncio.ensure_future(r.message("c0ffee", say("x"), s))
        await asyncio.sleep(0)
        [abort] = wiring.aborts
        assert not abort.aborted and r.get("c0ffee").json["streaming"] is True  # type: ignore[index]
        if by == "stop":
            assert r.stop().json == {"stopped": True}
        elif by == "delete":
            r.forget()
            before = lite.statements
        else:
            wiring.readers[0].close()
            assert r.turn is not None
            r.turn.detach(1)  # its only reader left, and the grace is 0
        assert abort.aborted  # at once: the call is cut while it opens
        before = lite.statements if by != "delete" else before
        reply = await pending
        return r, wiring, reply, lite, lite.statements - before

    r, wiring, reply, lite, writes = asyncio.run(main())
    assert reply.reader is wiring.readers[0] and wiring.pipes == [] and r.turn is None
    if by != "grace":  # its reader got the end
        assert ending(wiring.readers[0].data) == CANCELLED and wiring.readers[0].closed
    if by == "delete":
        assert writes == 0, f"{writes} statements after the delete"
    else:
        assert bare(r.store.messages()) == [
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": ""},
        ]
        assert ending(run_resume(r, None)) == CANCELLED
        assert r.store.size == lite.stored_bytes() and not r.store.streaming


def test_a_stop_that_comes_after_run_answered_cuts_the_pipe_as_it_starts() -> None:
    async def main() -> tuple[Room, Wiring]:
        r, wiring, _ = created()
        wiring.gate, wiring.deaf = asyncio.Event(), True
        pending = asyncio.ensure_future(r.message("c0ffee", say("x"), settings()))
        await asyncio.sleep(0)
        r.stop()
        wiring.gate.set()
        await pending
        return r, wiring

    r, wiring = asyncio.run(main())
    [pipe] = wiring.pipes
    assert pipe.stops == [None]
    wiring.settle()
    assert ending(wiring.readers[0].data) == CANCELLED and r.turn is None


@pytest.mark.parametrize(
    "failure",
    [
        ApiError(429, "upstream_busy", "busy"),
        ApiError(400, "context_length_exceeded", "too long"),
        RuntimeError("a bug"),
    ],
)
def test_a_call_that_fails_before_it_answers_takes_the_message_back(failure: Exception) -> None:
    r, wiring, lite = created(history=[{"role": "user", "content": "before"}])
    size = r.store.size
    wiring.answer = failure
    with pytest.raises(type(failure)):
        run(r.message("c0ffee", say("x"), settings()))
    assert (r.turn, r.store.turn, r.store.streaming) == (None, 0, False)
    assert r.store.messages() == [{"role": "user", "content": "before"}]
    assert r.store.size == size == lite.stored_bytes()
    assert wiring.readers[0].closed
    wiring.answer = "stream"
    run(r.message("c0ffee", say("again"), settings()))
    assert r.store.turn == 1


def test_storage_that_refuses_the_message_is_a_500_before_any_model_call() -> None:
    r, wiring, lite = created()
    lite.fail_on = "INSERT INTO meta"  # the turn's start, after the message's INSERT
    with pytest.raises(ApiError) as refused:
        run(r.message("c0ffee", say("x"), settings()))
    assert (refused.value.status, refused.value.code) == (500, "internal_error")
    lite.fail_on = None
    assert wiring.opens == [] and r.turn is None
    assert (r.store.messages(), r.store.turn, r.store.size) == ([], 0, 0)


def test_a_batch_storage_refuses_is_not_sent_and_ends_the_turn() -> None:
    r, wiring, lite = created()
    run(r.message("c0ffee", say("x"), settings()))
    pipe = wiring.pipes[0]
    pipe.feed("kept")
    lite.fail_on = "INSERT INTO events"
    pipe.feed("lost")
    wiring.clock.advance(FLUSH_MS)
    assert pipe.stops == [Failed(code="internal_error", message="The answer could not be stored.")]
    wiring.settle()  # its end: sent, not stored (the storage refuses)
    reader = wiring.readers[0].data
    assert texts(reader) == "kept" and wiring.readers[0].closed
    assert [name for _, name, _ in events(reader)][-2:] == ["error", "done"]
    lite.fail_on = None
    assert [e.seq for e in r.store.events_after(1, 0)] == [1]
    assert run_resume(r, (1, 1)) == DONE  # what was stored, then the end


# --- limits ----------------------------------------------------------------------------------------


def test_the_byte_limit_counts_the_message_being_added() -> None:
    limit = 20_000
    s = settings(MAX_CONVERSATION_BYTES=str(limit))
    r, wiring, lite = created(s, [{"role": "user", "content": "a" * 9000}])
    free = limit - r.store.size - ENDING_RESERVE
    too_big = "b" * (free - 1)  # its JSON is 2 bytes more: one over
    with pytest.raises(ApiError) as refused:
        run(r.message("c0ffee", say(too_big), s))
    assert (refused.value.status, refused.value.code) == (413, "conversation_too_large")
    assert "its limit of 20000 bytes (MAX_CONVERSATION_BYTES)" in refused.value.message
    assert wiring.opens == [] and r.store.count() == 1
    run(r.message("c0ffee", say("b" * (free - 2)), s))  # exactly fits
    assert len(wiring.opens) == 1 and r.store.size == lite.stored_bytes() == limit - ENDING_RESERVE


def test_an_answer_that_would_pass_the_limit_is_cut_and_the_limit_holds() -> None:
    limit = 8_000
    s = settings(MAX_CONVERSATION_BYTES=str(limit))
    r, wiring, lite = created(s)
    run(r.message("c0ffee", say("write a lot"), s))
    pipe = wiring.pipes[0]
    for i in range(400):
        pipe.feed(f"word{i} ")
        wiring.clock.advance(FLUSH_MS)
        assert r.store.size <= limit and lite.stored_bytes() <= limit
    wiring.settle()
    reader = wiring.readers[0].data
    assert [name for _, name, _ in events(reader)][-2:] == ["error", "done"]
    assert json.loads(events(reader)[-2][2])["error"] == "conversation_too_large"
    assert pipe.stops[0] is not None and pipe.stops[0].code == "conversation_too_large"
    sent = texts(reader)
    assert sent and bare(r.store.messages())[-1] == {"role": "assistant", "content": sent}
    assert run_resume(r, None) == reader  # what was sent is what was stored
    assert r.store.size == lite.stored_bytes() <= limit
    with pytest.raises(ApiError) as full:
        run(r.message("c0ffee", say("more " * 400), s))
    assert full.value.code == "conversation_too_large"


def test_an_ending_that_does_not_fit_is_replaced_by_a_short_one() -> None:
    limit = 6_000
    s = settings(MAX_CONVERSATION_BYTES=str(limit))
    r, wiring, lite = created(s)
    whole = {"response": "z" * 5_000, "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    wiring.answer = OneShot(result=whole)
    run(r.message("c0ffee", say("all at once"), s))
    reader = wiring.readers[0].data
    assert [(n, d) for _, n, d in events(reader)] == [(n, d) for _, n, d in events(FULL_ENDING)]
    assert r.store.size == lite.stored_bytes() <= limit


@pytest.mark.parametrize("seed", range(12))
def test_the_byte_limit_is_never_passed_by_a_single_byte(seed: int) -> None:
    rng = random.Random(f"limit:{seed}")
    limit = rng.randrange(4_500, 40_000)
    s = settings(MAX_CONVERSATION_BYTES=str(limit), RESUME_GRACE_SECONDS="0")
    r, wiring, lite = created(s)
    for _turn in range(30):
        content = (
            "é" * rng.randrange(1, 3000) if rng.random() < 0.5 else "q" * rng.randrange(1, 6000)
        )
        try:
            run(r.message("c0ffee", say(content), s))
        except ApiError as error:
            assert error.code == "conversation_too_large", error
            assert r.store.size + message_bytes(content, None) + ENDING_RESERVE > limit
            continue
        pipe = wiring.pipes[-1]
        for _ in range(rng.randrange(0, 60)):
            pipe.feed(rng.choice(["a", "é🌍", "\n", '"', "word " * rng.randrange(1, 40)]))
            if rng.random() < 0.3:
                wiring.clock.advance(FLUSH_MS)
            assert lite.stored_bytes() <= limit
        if rng.random() < 0.2:
            r.stop()
        else:
            pipe.finish()
        wiring.clock.advance(FLUSH_MS)
        wiring.settle()
        assert r.turn is None
        assert r.store.size == lite.stored_bytes() <= limit, (seed, limit)


def test_images_are_bounded_per_request_by_max_images_and_per_conversation_apart() -> None:
    s = settings(MAX_IMAGES="1", MAX_CONVERSATION_IMAGES="3")
    image: list[Any] = [
        {"type": "text", "text": "see"},
        {"type": "image_url", "image_url": {"url": PNG}},
    ]
    r, wiring, _ = created(s)
    for _ in range(3):  # each turn sends one image: MAX_IMAGES is per request, not history
        run(r.message("c0ffee", say(image), s))  # type: ignore[arg-type]
        wiring.pipes[-1].finish()
        wiring.settle()
    with pytest.raises(ApiError) as full:
        run(r.message("c0ffee", say(image), s))  # type: ignore[arg-type]
    assert (full.value.status, full.value.code) == (413, "conversation_too_large")
    assert "limit of 3 images (MAX_CONVERSATION_IMAGES)" in full.value.message
    run(r.message("c0ffee", say("text is fine"), s))
    with pytest.raises(ApiError) as created_full:
        created(s, [{"role": "user", "content": image}] * 4)
    assert created_full.value.code == "conversation_too_large"


def test_the_history_goes_to_a_model_as_that_model_takes_it() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": PNG}}]},
        {"role": "assistant", "content": "a cat", "reasoning": "whiskers"},
    ]
    r, wiring, _ = created(history=history)
    with pytest.raises(ApiError) as text_only:
        run(r.message("c0ffee", say("and?", LLAMA), settings()))
    assert (text_only.value.code, text_only.value.param) == ("images_not_supported", "model")
    assert wiring.opens == [] and r.store.count() == 2
    run(r.message("c0ffee", say("and?"), settings()))  # gemma reads images
    assert wiring.opens[-1][1]["messages"][0] == history[0]
    r2, wiring2, _ = created(history=history[1:])
    run(r2.message("c0ffee", say("and?", GPT_OSS), settings()))
    assert wiring2.opens[-1][1]["messages"][0] == history[1]  # reasoning back to a reasoner
    wiring2.pipes[-1].finish()
    wiring2.settle()
    run(r2.message("c0ffee", say("and?", LLAMA), settings()))
    assert wiring2.opens[-1][1]["messages"][0] == {"role": "assistant", "content": "a cat"}


# --- a restart -----------------------------------------------------------------------------------


def test_a_turn_cut_by_a_restart_keeps_its_partial_answer() -> None:
    r, wiring, lite = created()
    run(r.message("c0ffee", say("hi"), settings()))
    pipe = wiring.pipes[0]
    pipe.feed("Half ", "an ")
    wiring.clock.advance(FLUSH_MS)
    pipe.feed("answer")  # held when the object dies: never sent, never stored
    sent = wiring.readers[0].data
    again, _, _ = room(lite)  # the object restarted: a new one over the same storage
    assert again.exists() and again.store.streaming
    again.recover()
    assert bare(again.store.messages()) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": texts(sent)},
    ]
    assert texts(sent) == "Half an "
    replay = run_resume(again, None)
    assert replay.startswith(sent)
    assert [name for _, name, _ in events(replay)][-2:] == ["error", "done"]
    assert json.loads(events(replay)[-2][2])["error"] == "upstream_incomplete"
    assert again.store.size == lite.stored_bytes() and not again.store.streaming
    again.recover()  # once
    assert again.store.count() == 2


def test_a_restart_after_the_last_batch_only_files_the_answer() -> None:
    r, wiring, lite = created()
    run(r.message("c0ffee", say("hi"), settings()))
    pipe = wiring.pipes[0]
    pipe.feed("done already")
    pipe.finish()
    wiring.clock.advance(FLUSH_MS)  # stored with its end; the object dies before it files it
    again, _, _ = room(lite)
    again.exists()
    again.recover()
    assert bare(again.store.messages())[-1] == {"role": "assistant", "content": "done already"}
    assert ending(run_resume(again, None)) == [
        ("message_stop", '{"stop_reason":"stop"}'),
        ("done", "{}"),
    ]
    assert again.store.size == lite.stored_bytes()


def test_the_answer_read_back_from_events_is_the_recorded_one() -> None:
    r, wiring, _ = created()
    run(r.message("c0ffee", say("hi"), settings()))
    turn = r.turn
    assert turn is not None
    pipe = wiring.pipes[0]
    pipe.feed("<think>hmm</think>", "é🌍 \n", '"quoted"')
    pipe.finish()
    wiring.clock.advance(FLUSH_MS)
    assert answer_of(r.store.events_after(1, 0)) == (
        "".join(turn.encoder.text),
        "".join(turn.encoder.reasoning),
    )


def test_forget_lets_the_readers_end_and_stores_nothing_more() -> None:
    r, wiring, lite = created()
    run(r.message("c0ffee", say("x"), settings()))
    pipe = wiring.pipes[0]
    pipe.feed("a")
    before = lite.statements
    r.forget()
    wiring.clock.advance(FLUSH_MS)
    wiring.settle()
    assert ending(wiring.readers[0].data) == CANCELLED and r.turn is None
    writes = lite.statements - before
    assert writes == 0, f"{writes} statements after the delete"


def test_a_bug_after_the_call_answered_cancels_it_and_keeps_nothing() -> None:
    r, wiring, lite = created()

    def broken(*_: object) -> Pipe:
        raise RuntimeError("a bug in the wiring")

    wiring.pipe = broken  # type: ignore[method-assign, assignment]
    with pytest.raises(RuntimeError):
        run(r.message("c0ffee", say("x"), settings()))
    [source] = wiring.sources
    assert source.cancelled == 1, "the model call it opened was left running"
    assert (r.turn, r.store.messages(), r.store.turn, r.store.size) == (None, [], 0, 0)
    assert lite.stored_bytes() == 0 and wiring.readers[0].closed


def test_a_clients_branches_are_kept_beside_the_history_and_given_back() -> None:
    r, _, _ = created()
    assert "branches" not in r.get("c0ffee").json  # type: ignore[operator]
    kept = {"version": 1, "server_length": 0, "messages": [{"id": "a", "alts": [[]]}]}
    assert r.keep_branches(kept).json == {"kept": True}
    assert r.get("c0ffee").json["branches"] == kept  # type: ignore[index]
    assert r.keep_branches(None).json == {"kept": False}
    assert "branches" not in r.get("c0ffee").json  # type: ignore[operator]
