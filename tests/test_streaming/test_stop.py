"""Stop strings cut by the relay: exactly before the first one, at every split of tokens and reads."""

from __future__ import annotations

import json

import pytest

from base.errors import ApiError
from checks.stops import parse_stop
from streaming.relay import Relay, Timing
from streaming.stop import StopScanner
from streaming.think_tags import TEXT, THINKING, Part

# Continue's autocomplete sends six of these; LangChain's stop= any list.
SIX = ("\n\n", "```", "<|im_end|>", "</s>", "\nUser:", "END")
TIMING = Timing(ping_after=100, give_up_after=100)


def scan(stops: tuple[str, ...], pieces: list[str]) -> tuple[str, bool]:
    scanner = StopScanner(stops)
    out = "".join(scanner.feed(p) for p in pieces)
    stopped = scanner.stopped
    return out + scanner.flush(), stopped


def expected(stops: tuple[str, ...], text: str) -> tuple[str, bool]:
    """The answer cut before the earliest stop string, computed the plain way."""
    found = [i for i in (text.find(s) for s in stops) if i >= 0]
    return (text[: min(found)], True) if found else (text, False)


TEXTS = [
    "def f():\n    return 1\n\nprint(f())",
    "Sure: ``` code ``` then END of it",
    "a\nUser: hi",
    "no stop here at all, just text with < and </ and \n single",
    "ends with a partial </",
    "<|im_end|> at the very start",
    "half a stop <|im_e then more <|im_end|>",
    "émoji 🌍 then END",
]


@pytest.mark.parametrize("text", TEXTS)
def test_every_two_way_split_cuts_exactly_before_the_first_stop(text: str) -> None:
    want = expected(SIX, text)
    for at in range(len(text) + 1):
        got = scan(SIX, [text[:at], text[at:]])
        assert got == want, f"split at {at} of {text!r}: got {got!r}, want {want!r}"


@pytest.mark.parametrize("text", TEXTS)
def test_one_character_at_a_time_and_every_three_way_split(text: str) -> None:
    want = expected(SIX, text)
    assert scan(SIX, list(text)) == want, text
    for a in range(len(text) + 1):
        for b in range(a, len(text) + 1):
            got = scan(SIX, [text[:a], text[a:b], text[b:]])
            assert got == want, f"splits at {a},{b} of {text!r}: got {got!r}"


def test_text_is_held_only_while_it_could_still_start_a_stop() -> None:
    scanner = StopScanner(("</answer>",))
    assert scanner.feed("value </ans") == "value "  # "</ans" could be the start
    assert scanner.feed("wer2") == "</answer2"  # it was not: released at once
    assert scanner.feed("<") == ""
    assert scanner.flush() == "<"  # the end releases what is held


def test_overlapping_stops_cut_at_the_earliest() -> None:
    assert scan(("abcd", "bc"), ["xab", "cd"]) == ("x", True)
    assert scan(("bcd", "bc"), ["xab", "cd"]) == ("xa", True)
    assert scan(("aab",), ["a", "a", "a", "b"]) == ("a", True)


def test_nothing_goes_out_after_a_stop() -> None:
    scanner = StopScanner(("END",))
    assert scanner.feed("one END two") == "one "
    assert scanner.feed("three") == "" and scanner.flush() == ""


def test_held_text_never_outgrows_the_longest_stop() -> None:
    """What makes the scan linear: each feed looks at what is held plus the new text, and what
    is held is always shorter than the longest stop string, however long the answer."""
    stops = tuple("x" * 255 + c for c in "abcdefghijklmnop")  # 16 long stops sharing a prefix
    scanner = StopScanner(stops)
    fed = sent = 0
    for _ in range(2000):
        sent += len(scanner.feed("x" * 50))
        fed += 50
        assert 0 <= fed - sent < 256, f"{fed - sent} characters held after {fed}"


@pytest.mark.parametrize(
    ("value", "field", "needle"),
    [
        (["s"] * 17, "stop", "at most 16 stop strings, got 17"),
        ([""], "stop[0]", "must not be empty"),
        (["x" * 257], "stop[0]", "at most 256 characters"),
        ([1], "stop", "a string or an array of strings"),
        ({"a": 1}, "stop", "a string or an array of strings"),
    ],
)
def test_bad_stops_name_the_field(value: object, field: str, needle: str) -> None:
    with pytest.raises(ApiError) as info:
        parse_stop("stop", value)
    assert (info.value.code, info.value.param) == (
        "invalid_field",
        field,
    ) and needle in info.value.message


def test_stop_values() -> None:
    assert parse_stop("stop", None) == parse_stop("stop", "") == parse_stop("stop", []) == ()
    assert parse_stop("stop", "END") == ("END",)
    assert parse_stop("stop", ["a", "b", "a"]) == ("a", "b")


class Recorder:
    def __init__(self) -> None:
        self.seen: list[Part] = []
        self.ending: object = None

    def start(self) -> bytes:
        return b""

    def parts(self, parts: list[Part]) -> bytes:
        self.seen += parts
        return b"p"

    def tool_calls(self, calls: list[object]) -> bytes:
        return b"t"

    def ping(self) -> bytes:
        return b""

    def finished(self, stop: object) -> bytes:
        self.ending = stop
        return b"f"

    def failed(self, failure: object) -> bytes:
        self.ending = failure
        return b"x"


def frame(text: str) -> bytes:
    return b"data: " + json.dumps({"response": text}).encode() + b"\n\n"


def openai_frame(delta: dict[str, str]) -> bytes:
    return (
        b"data: "
        + json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}).encode()
        + b"\n\n"
    )


def text_of(parts: list[Part], kind: str = TEXT) -> str:
    return "".join(t for k, t in parts if k == kind)


def test_the_relay_finishes_with_stop_and_reads_no_more() -> None:
    encoder = Recorder()
    relay = Relay(encoder, TIMING, now=0, stops=SIX)  # type: ignore[arg-type]
    tokens = ["Here", " is", " the", " answer", ".\n", "\nNext", " part"]
    wire = b"".join(frame(t) for t in tokens)
    for at in range(len(wire)):  # every split of the upstream's bytes into two reads
        encoder = Recorder()
        relay = Relay(encoder, TIMING, now=0, stops=SIX)  # type: ignore[arg-type]
        relay.feed(wire[:at])
        relay.feed(wire[at:])
        assert text_of(encoder.seen) == "Here is the answer.", f"split at byte {at}: {encoder.seen}"
        assert relay.closed and getattr(encoder.ending, "stop_reason", None) == "stop", at
    assert relay.feed(frame("more")) == b""


def test_held_text_is_released_at_the_end_and_reasoning_is_never_cut() -> None:
    encoder = Recorder()
    relay = Relay(encoder, TIMING, now=0, stops=("END",))  # type: ignore[arg-type]
    relay.feed(openai_frame({"reasoning_content": "I will say END"}))
    relay.feed(openai_frame({"content": "almost EN"}))
    assert text_of(encoder.seen) == "almost "
    relay.feed(b"data: [DONE]\n\n")
    assert text_of(encoder.seen, THINKING) == "I will say END"
    assert text_of(encoder.seen) == "almost EN"
    assert getattr(encoder.ending, "stop_reason", None) == "stop"


def test_held_text_is_released_before_a_failure() -> None:
    encoder = Recorder()
    relay = Relay(encoder, TIMING, now=0, stops=("END",))  # type: ignore[arg-type]
    relay.feed(frame("so E"))
    relay.fail("network")
    assert (
        text_of(encoder.seen) == "so E"
        and getattr(encoder.ending, "code", None) == "upstream_error"
    )
