import asyncio
from collections.abc import AsyncIterator

from chat_events import chat_stream
from fakes import STALL, FakeSource, frames
from relay import Failed, Finished, Ping, RelayEvent, Text, Timing, relay

FAST = Timing(ping_after=10.0, give_up_after=20.0)


async def collect(batches: AsyncIterator[list[RelayEvent]]) -> list[list[RelayEvent]]:
    return [batch async for batch in batches]


def flat(batches: list[list[RelayEvent]]) -> list[RelayEvent]:
    return [item for batch in batches for item in batch]


def test_complete_upstream_ends_with_finished_and_usage() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    source = FakeSource(frames("a", "b", usage=usage))
    events = flat(asyncio.run(collect(relay(source, FAST))))
    assert events == [Text(text="a"), Text(text="b"), Finished(stop_reason="stop", usage=usage)]
    assert source.reads_after_cancel == 0


def test_length_is_inferred_from_usage_when_the_model_does_not_say() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    source = FakeSource(frames("a", "b", usage=usage))
    events = flat(asyncio.run(collect(relay(source, FAST, max_tokens=2))))
    assert events[-1] == Finished(stop_reason="length", usage=usage)


def test_frames_arriving_together_are_one_batch() -> None:
    wire = b"".join(step for _, step in frames("a", "b", "c"))  # type: ignore[misc]
    batches = asyncio.run(collect(relay(FakeSource([(0.0, wire)]), FAST)))
    assert batches == [[Text(text="a"), Text(text="b"), Text(text="c"), Finished(stop_reason="stop", usage=None)]]


def test_failure_mid_stream_keeps_what_was_sent_then_fails() -> None:
    source = FakeSource([*frames("a", done=False), (0.0, RuntimeError("boom"))])
    events = flat(asyncio.run(collect(relay(source, FAST))))
    assert events == [Text(text="a"), Failed(code="upstream_error", message="The model stream failed.")]


def test_end_without_done_is_reported_not_treated_as_complete() -> None:
    events = flat(asyncio.run(collect(relay(FakeSource(frames("a", done=False)), FAST))))
    assert events[0] == Text(text="a")
    assert isinstance(events[-1], Failed) and events[-1].code == "upstream_incomplete"


def test_silence_pings_then_times_out_and_cancels_upstream() -> None:
    source = FakeSource([*frames("a", done=False), (0.0, STALL)])
    timing = Timing(ping_after=0.05, give_up_after=0.18)
    loop_events = flat(asyncio.run(collect(relay(source, timing))))
    assert loop_events[0] == Text(text="a")
    pings = [e for e in loop_events if isinstance(e, Ping)]
    assert 2 <= len(pings) <= 4
    assert isinstance(loop_events[-1], Failed) and loop_events[-1].code == "upstream_timeout"
    assert source.cancelled == 1 and source.reads_after_cancel == 0


def test_consumer_closing_early_cancels_upstream_once() -> None:
    source = FakeSource([(0.01, step) for _, step in frames(*"abcdefgh")])

    async def first_two() -> None:
        gen = relay(source, FAST)
        await anext(gen)
        await anext(gen)
        await gen.aclose()

    asyncio.run(first_two())
    assert source.cancelled == 1
    assert source.reads_after_cancel == 0


def test_consumer_cancelled_while_waiting_cancels_upstream() -> None:
    source = FakeSource([(0.0, frames("a", done=False)[0][1]), (0.0, STALL)])

    async def scenario() -> None:
        gen = relay(source, FAST)
        await anext(gen)
        task = asyncio.ensure_future(anext(gen))
        await asyncio.sleep(0.02)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    assert source.cancelled == 1 and source.reads_after_cancel == 0


async def wire(source: FakeSource, timing: Timing = FAST) -> bytes:
    return b"".join([chunk async for chunk in chat_stream(relay(source, timing))])


def test_protocol_transcript_complete() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    assert asyncio.run(wire(FakeSource(frames("Hi", ' "you"\n', usage=usage)))) == (
        b'event: content_block_delta\ndata: {"index":0,"text":"Hi"}\n\n'
        b'event: content_block_delta\ndata: {"index":1,"text":" \\"you\\"\\n"}\n\n'
        b'event: message_stop\ndata: {"stop_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}\n\n'
        b"event: done\ndata: {}\n\n"
    )


def test_protocol_transcript_failed_and_timed_out() -> None:
    failed = asyncio.run(wire(FakeSource([*frames("a", done=False), (0.0, RuntimeError("x"))])))
    assert failed == (
        b'event: content_block_delta\ndata: {"index":0,"text":"a"}\n\n'
        b'event: error\ndata: {"error":"upstream_error","message":"The model stream failed."}\n\n'
        b"event: done\ndata: {}\n\n"
    )
    timed_out = asyncio.run(wire(FakeSource([(0.0, STALL)]), Timing(ping_after=0.03, give_up_after=0.05)))
    assert timed_out == (
        b": ping\n\n"
        b'event: error\ndata: {"error":"upstream_timeout","message":"The model sent nothing for 0.05 seconds."}\n\n'
        b"event: done\ndata: {}\n\n"
    )


def test_protocol_without_usage_omits_it() -> None:
    assert asyncio.run(wire(FakeSource(frames("a")))).endswith(
        b'event: message_stop\ndata: {"stop_reason":"stop"}\n\nevent: done\ndata: {}\n\n'
    )


def test_protocol_lone_surrogates_survive_as_json_escapes() -> None:
    source = FakeSource([(0.0, b'data: {"response":"\\ud83c"}\n\n'), (0.0, b'data: {"response":"\\udf0d"}\n\ndata: [DONE]\n\n')])
    out = asyncio.run(wire(source))
    assert b'"text":"\\ud83c"' in out and b'"text":"\\udf0d"' in out
