import asyncio

from fakes import STALL, FakeSource, frames
from host_driver import drive

from common.chat_events import ChatEncoder
from streaming.relay import Failed, Finished, Relay, Timing
from streaming.upstream import Part, ToolCall

FAST = Timing(ping_after=10.0, give_up_after=20.0)
USAGE = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}


class Recorder:
    """An encoder that writes down the neutral calls the relay makes."""

    def __init__(self) -> None:
        self.calls: list[object] = []

    def start(self) -> bytes:
        self.calls.append("start")
        return b"S"

    def parts(self, parts: list[Part]) -> bytes:
        self.calls.append([text if kind == "text" else ("thinking", text) for kind, text in parts])
        return b"T"

    def tool_calls(self, calls: list[ToolCall]) -> bytes:
        self.calls.append(("tools", calls))
        return b"C"

    def ping(self) -> bytes:
        self.calls.append("ping")
        return b"P"

    def finished(self, stop: Finished) -> bytes:
        self.calls.append(stop)
        return b"F"

    def failed(self, failure: Failed) -> bytes:
        self.calls.append(failure)
        return b"X"


def wire(*texts: str, done: bool = True, usage: dict[str, int] | None = None) -> list[bytes]:
    return [step for _, step in frames(*texts, done=done, usage=usage)]  # type: ignore[misc]


def test_sync_relay_complete() -> None:
    rec = Recorder()
    relay = Relay(rec, FAST, now=0.0)
    out = [relay.start()] + [relay.feed(chunk) for chunk in wire("a", "b", usage=USAGE)]
    assert out == [b"S", b"T", b"T", b"", b"F"]
    assert rec.calls == ["start", ["a"], ["b"], Finished(stop_reason="stop", usage=USAGE)]
    assert relay.closed
    assert relay.feed(b'data: {"response":"late"}\n\n') == b"" and relay.end() == b""


def test_frames_arriving_together_are_one_call() -> None:
    rec = Recorder()
    relay = Relay(rec, FAST, now=0.0)
    assert relay.feed(b"".join(wire("a", "b", "c"))) == b"TF"
    assert rec.calls == [["a", "b", "c"], Finished(stop_reason="stop", usage=None)]


def test_length_is_inferred_from_usage_when_the_model_does_not_say() -> None:
    rec = Recorder()
    relay = Relay(rec, FAST, now=0.0, max_tokens=2)
    relay.feed(b"".join(wire("a", "b", usage=USAGE)))
    assert rec.calls[-1] == Finished(stop_reason="length", usage=USAGE)


def test_end_without_done_is_incomplete_and_keeps_a_cut_off_frame() -> None:
    rec = Recorder()
    relay = Relay(rec, FAST, now=0.0)
    relay.feed(wire("a")[0] + b'data: {"response":"b"}')
    assert relay.end() == b"TX"
    assert rec.calls == [
        ["a"],
        ["b"],
        Failed(
            code="upstream_incomplete",
            message="The model stream ended before the answer was complete.",
        ),
    ]


def test_failure_mid_stream() -> None:
    rec = Recorder()
    relay = Relay(rec, FAST, now=0.0)
    relay.feed(wire("a")[0])
    assert relay.fail(RuntimeError("boom")) == b"X"
    assert rec.calls[-1] == Failed(code="upstream_error", message="The model stream failed.")
    assert relay.fail(RuntimeError("again")) == b""


def test_crash_ends_with_an_internal_error_once() -> None:
    rec = Recorder()
    relay = Relay(rec, FAST, now=0.0)
    assert relay.crash(ValueError("bug")) == b"X"
    assert rec.calls == [
        Failed(code="internal_error", message="The answer could not be completed.")
    ]
    assert relay.closed and relay.crash(ValueError("again")) == b""


def test_drive_turns_a_crash_into_an_error_event() -> None:
    class Exploding(ChatEncoder):
        def parts(self, parts: list[Part]) -> bytes:
            raise RuntimeError("encoder bug")

    async def go() -> bytes:
        relay = Relay(Exploding(), FAST, now=asyncio.get_event_loop().time())
        return await collect(FakeSource(frames("a")), relay)

    assert asyncio.run(go()) == (
        b'event: error\ndata: {"error":"internal_error","message":"The answer could not be completed."}\n\n'
        b"event: done\ndata: {}\n\n"
    )


def test_ticks_ping_after_silence_then_time_out() -> None:
    rec = Recorder()
    relay = Relay(rec, Timing(ping_after=1.0, give_up_after=2.5), now=0.0)
    assert relay.next_deadline() == 0.25  # a quarter of the shorter interval
    assert relay.tick(0.25) == b"" and relay.next_deadline() == 0.5
    assert relay.tick(1.0) == b"P" and relay.next_deadline() == 1.25
    relay.feed(b": comment only\n\n")  # upstream bytes, but nothing to send
    assert relay.tick(1.25) == b""  # the data is dated now: the timeout restarts from 1.25
    assert relay.tick(2.0) == b"P"
    assert relay.tick(3.0) == b"P"
    assert relay.tick(3.5) == b""
    assert relay.tick(3.75) == b"X"
    assert rec.calls[-1] == Failed(
        code="upstream_timeout", message="The model sent nothing for 2.5 seconds."
    )
    assert relay.closed and relay.tick(9.0) == b""


def test_a_hold_for_the_client_is_not_the_model_falling_silent() -> None:
    rec = Recorder()
    relay = Relay(rec, Timing(ping_after=1.0, give_up_after=2.5), now=0.0)
    relay.feed(wire("a")[0])
    assert relay.tick(0.25) == b""
    # The driver held back from 0.25 to 10.0 (no reads, no ticks): nothing timed out.
    relay.resume(10.0)
    assert relay.next_deadline() == 10.25
    assert relay.tick(10.25) == b"" and relay.tick(11.0) == b"P"
    assert relay.tick(12.25) == b"P" and relay.tick(12.5) == b"X"
    assert rec.calls[-1] == Failed(
        code="upstream_timeout", message="The model sent nothing for 2.5 seconds."
    )
    relay.resume(20.0)  # closed: nothing changes
    assert relay.closed and relay.tick(30.0) == b""


def test_sending_text_postpones_the_ping() -> None:
    relay = Relay(Recorder(), Timing(ping_after=1.0, give_up_after=5.0), now=0.0)
    relay.feed(wire("a")[0])
    assert relay.tick(0.25) == b""
    assert relay.tick(1.0) == b""  # text went out at (or before) 0.25
    assert relay.tick(1.25) == b"P"


async def collect(source: FakeSource, relay: Relay) -> bytes:
    return b"".join([chunk async for chunk in drive(source, relay)])


def chat_relay(timing: Timing = FAST) -> Relay:
    return Relay(ChatEncoder(), timing, now=asyncio.get_event_loop().time())


def run(source: FakeSource, timing: Timing = FAST) -> bytes:
    async def go() -> bytes:
        return await collect(source, chat_relay(timing))

    return asyncio.run(go())


def test_drive_complete_transcript() -> None:
    source = FakeSource(frames("Hi", ' "you"\n', usage=USAGE))
    assert run(source) == (
        b'event: content_block_delta\ndata: {"index":0,"text":"Hi"}\n\n'
        b'event: content_block_delta\ndata: {"index":1,"text":" \\"you\\"\\n"}\n\n'
        b'event: message_stop\ndata: {"stop_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}\n\n'
        b"event: done\ndata: {}\n\n"
    )
    assert source.reads_after_cancel == 0


def test_drive_failed_transcript() -> None:
    source = FakeSource([*frames("a", done=False), (0.0, RuntimeError("x"))])
    assert run(source) == (
        b'event: content_block_delta\ndata: {"index":0,"text":"a"}\n\n'
        b'event: error\ndata: {"error":"upstream_error","message":"The model stream failed."}\n\n'
        b"event: done\ndata: {}\n\n"
    )
    assert source.cancelled == 0


def test_drive_incomplete_transcript() -> None:
    assert run(FakeSource(frames("a", done=False))).endswith(
        b'event: error\ndata: {"error":"upstream_incomplete","message":"The model stream ended before the answer was complete."}\n\n'
        b"event: done\ndata: {}\n\n"
    )


def test_drive_times_out_with_only_pings_between_and_cancels_upstream() -> None:
    """drive() on asyncio's real timers: how many pings come before the timeout depends on how
    late a loaded machine wakes the loop, so it is not counted here; the relay's schedule is,
    on a synthetic clock (test_ticks_ping_after_silence_then_time_out and the one after it)."""
    source = FakeSource([*frames("a", done=False), (0.0, STALL)])
    out = run(source, Timing(ping_after=0.05, give_up_after=0.18))
    delta = b'event: content_block_delta\ndata: {"index":0,"text":"a"}\n\n'
    timeout = (
        b'event: error\ndata: {"error":"upstream_timeout","message":"The model sent nothing for 0.18 seconds."}\n\n'
        b"event: done\ndata: {}\n\n"
    )
    assert out.startswith(delta) and out.endswith(timeout), out
    between = out[len(delta) : -len(timeout)]
    assert between == b": ping\n\n" * between.count(b": ping\n\n"), between
    assert source.cancelled == 1 and source.reads_after_cancel == 0


def test_drive_closed_early_by_its_consumer_cancels_upstream_once() -> None:
    source = FakeSource([(0.01, step) for _, step in frames(*"abcdefgh")])

    relays: list[Relay] = []

    async def first_two() -> None:
        relays.append(relay := chat_relay())
        gen = drive(source, relay)
        await anext(gen)
        await anext(gen)
        await gen.aclose()

    asyncio.run(first_two())
    assert source.cancelled == 1 and source.reads_after_cancel == 0
    relay = relays[0]
    assert (relay.closed, relay.ending) == (True, None), "drive did not abandon the relay"


def test_abandon_ends_the_answer_with_nothing_more_sent() -> None:
    rec = Recorder()
    relay = Relay(rec, FAST, now=0.0)
    relay.start()
    relay.feed(wire("a", done=False)[0])
    relay.abandon()
    assert (relay.closed, relay.ending) == (True, None)
    later = [relay.feed(wire("b")[0]), relay.tick(99.0), relay.end(), relay.cancel()]
    assert later == [b""] * 4, later
    relay.abandon()
    assert rec.calls == ["start", ["a"]], "an abandoned answer must say nothing more"


def test_every_ending_is_set_once() -> None:
    """After any ending, the others change nothing: the first one stands."""
    for first in ("end", "fail", "crash", "cancel", "timeout"):
        relay = Relay(Recorder(), FAST, now=0.0)
        relay.feed(wire("a", done=False)[0])
        if first == "end":
            relay.end()
        elif first == "fail":
            relay.fail("broken")
        elif first == "crash":
            relay.crash(ValueError("ours"))
        elif first == "cancel":
            relay.cancel()
        else:
            relay.tick(1.0)  # dates the data that came
            relay.tick(99.0)
        ending = relay.ending
        assert relay.closed and ending is not None, first
        later = [relay.end(), relay.fail("x"), relay.crash(ValueError()), relay.cancel()]
        relay.abandon()
        assert later == [b""] * 4, f"{first}: then {later!r}"
        assert relay.ending is ending, f"{first}: became {relay.ending!r}"


def test_drive_cancelled_while_waiting_cancels_upstream() -> None:
    source = FakeSource([(0.0, wire("a", done=False)[0]), (0.0, STALL)])

    async def scenario() -> None:
        gen = drive(source, chat_relay())
        await anext(gen)
        task = asyncio.ensure_future(anext(gen))
        await asyncio.sleep(0.02)  # lets the task start waiting on the stalled read: not a bound
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    assert source.cancelled == 1 and source.reads_after_cancel == 0


def test_a_cancel_with_a_failure_ends_with_that_error_after_what_was_held() -> None:
    relay = Relay(ChatEncoder(), FAST, now=0.0, stops=("STOP",))
    relay.feed(wire("Hello ST", done=False)[0])
    full = Failed(code="conversation_too_large", message="full")
    out = relay.cancel(full)
    assert out == (
        b'event: content_block_delta\ndata: {"index":1,"text":"ST"}\n\n'
        b'event: error\ndata: {"error":"conversation_too_large","message":"full"}\n\n'
        b"event: done\ndata: {}\n\n"
    )
    assert relay.closed and relay.ending == full and relay.cancel() == b""
