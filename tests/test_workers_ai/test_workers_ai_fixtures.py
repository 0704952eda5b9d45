"""Every stream shape Workers AI sends (tests/fixtures/workers_ai), split at every point.

Each fixture goes through the decoder, and through the relay into our SSE protocol, the
OpenAI chunk format and the non-streamed collector. The decoder's results are written out
by hand below; the two encoders' exact bytes are golden files next to the fixtures
(expected/), read and checked by eye when they were made. UPDATE_GOLDEN=1 rewrites them
and fails, so a rewrite is never a silent pass.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakes import merged

from common.chat_events import ChatEncoder
from common.openai_events import Collector, CompletionEncoder
from streaming.relay import Encoder, Finished, Relay, Timing
from streaming.upstream import TEXT, THINKING, Part, UpstreamDecoder

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "workers_ai"
TIMING = Timing(ping_after=15.0, give_up_after=60.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Expect:
    parts: list[Part]  # adjacent parts of one kind merged: network splits never change these
    usage: dict[str, int] | None
    finish_reason: str | None  # what the stream said, mapped
    stop: str  # what the relay reports
    while_thinking: bool = False
    opens_thinking: bool = False
    max_tokens: int = 1024


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


EXPECT: dict[str, Expect] = {
    "native-llama": Expect(
        parts=[(TEXT, 'Hello there, wörld 🌍 "quoted"\n')],
        usage=usage(12, 5),
        finish_reason=None,
        stop="stop",
    ),
    "native-bom": Expect(
        parts=[(TEXT, "First frame")], usage=usage(3, 2), finish_reason=None, stop="stop"
    ),
    "native-think-implicit": Expect(
        parts=[(THINKING, "Okay, the user wants a greeting.\n"), (TEXT, "Hello!")],
        usage=usage(9, 14),
        finish_reason=None,
        stop="stop",
        opens_thinking=True,
    ),
    "native-think-explicit": Expect(
        parts=[(THINKING, "Short thought."), (TEXT, "Answer.")],
        usage=None,
        finish_reason=None,
        stop="stop",
    ),
    "gpt-oss": Expect(
        parts=[(THINKING, "The user says hi."), (TEXT, "Hi there!")],
        usage=usage(70, 21),
        finish_reason="stop",
        stop="stop",
    ),
    "kimi-both-fields": Expect(
        parts=[(THINKING, "Thinking…"), (TEXT, "Done.")],
        usage=usage(30, 8),
        finish_reason="stop",
        stop="stop",
    ),
    "glm-usage-first": Expect(
        parts=[(THINKING, "Hmm."), (TEXT, "OK")],
        usage=usage(11, 4),
        finish_reason="stop",
        stop="stop",
    ),
    "qwq-rest-cumulative": Expect(
        parts=[(THINKING, "Hmm, cows"), (TEXT, "Cows moo.")],
        usage=usage(13, 9),
        finish_reason=None,
        stop="stop",
    ),
    "gpt-oss-out-of-budget": Expect(
        parts=[(THINKING, "Let me consider every case")],
        usage=usage(40, 6),
        finish_reason="length",
        stop="length",
        while_thinking=True,
        max_tokens=6,
    ),
    "openai-non-streamed": Expect(
        parts=[(THINKING, "Capital of France."), (TEXT, "Paris.")],
        usage=usage(20, 7),
        finish_reason="stop",
        stop="stop",
    ),
}
NAMES = sorted(EXPECT)


def test_every_fixture_has_expectations() -> None:
    assert sorted(p.stem for p in HERE.glob("*.sse")) == NAMES


def wire(name: str) -> bytes:
    return (HERE / f"{name}.sse").read_bytes()


def splits(data: bytes) -> list[list[bytes]]:
    """Whole, every single split point, byte at a time, and a grid of two split points."""
    out = [[data], [data[i : i + 1] for i in range(len(data))]]
    out += [[data[:a], data[a:]] for a in range(len(data) + 1)]
    step = max(1, len(data) // 40)
    out += [
        [data[:a], data[a:b], data[b:]]
        for a in range(0, len(data) + 1, step)
        for b in range(a, len(data) + 1, step - 1 or 1)
    ]
    return out


@pytest.mark.parametrize("name", NAMES)
def test_decoder_at_every_split(name: str) -> None:
    expect = EXPECT[name]
    for chunks in splits(wire(name)):
        decoder = UpstreamDecoder(opens_thinking=expect.opens_thinking)
        parts: list[Part] = []
        for chunk in chunks:
            parts += decoder.feed(chunk).parts
        parts += decoder.flush().parts
        where = [len(c) for c in chunks]
        assert merged(parts) == expect.parts, where
        assert (
            decoder.frames.usage,
            decoder.frames.finish_reason,
            decoder.done,
            decoder.frames.malformed,
        ) == (
            expect.usage,
            expect.finish_reason,
            True,
            0,
        ), where


def relayed(name: str, chunks: list[bytes], encoder: Encoder, relay: Relay | None = None) -> bytes:
    relay = relay or new_relay(name, encoder)
    out = relay.start()
    for chunk in chunks:
        out += relay.feed(chunk)
    return out + relay.end()


def new_relay(name: str, encoder: Encoder) -> Relay:
    expect = EXPECT[name]
    return Relay(
        encoder, TIMING, now=0.0, max_tokens=expect.max_tokens, opens_thinking=expect.opens_thinking
    )


def golden(name: str, kind: str, actual: bytes) -> bytes:
    path = HERE / "expected" / f"{name}.{kind}.sse"
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(actual)
        pytest.fail(f"rewrote {path}: read it, then run again without UPDATE_GOLDEN")
    return path.read_bytes()


def completion_encoder() -> Encoder:
    return CompletionEncoder(id="chatcmpl-test", created=0, model="M", include_usage=True)


ENCODERS: dict[str, Callable[[], Encoder]] = {"chat": ChatEncoder, "openai": completion_encoder}


@pytest.mark.parametrize("kind", list(ENCODERS))
@pytest.mark.parametrize("name", NAMES)
def test_relayed_bytes_at_every_split(name: str, kind: str) -> None:
    make = ENCODERS[kind]
    expected = golden(name, kind, relayed(name, [wire(name)], make()))
    for chunks in splits(wire(name)):
        assert relayed(name, chunks, make()) == expected, [len(c) for c in chunks]


@pytest.mark.parametrize("name", NAMES)
def test_non_streamed_answer_is_whole(name: str) -> None:
    expect = EXPECT[name]
    for chunks in splits(wire(name))[:3]:
        collector = Collector()
        relay = new_relay(name, collector)
        relayed(name, chunks, collector, relay)
        message: dict[str, str] = {
            "role": "assistant",
            "content": "".join(t for k, t in expect.parts if k == TEXT),
        }
        if thought := "".join(t for k, t in expect.parts if k == THINKING):
            message["reasoning_content"] = thought
        assert collector.message() == message
        ending = relay.ending
        assert isinstance(ending, Finished), ending
        assert (ending.stop_reason, ending.usage, ending.while_thinking) == (
            expect.stop,
            expect.usage,
            expect.while_thinking,
        )
