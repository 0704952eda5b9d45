"""The windowed reader of the model's stream (issue 35) on workerd, through workerd's own Ai
class: the same bytes as one read per chunk, the first token not held, a leaving client still
closing the model's connection, and STREAM_WINDOW_MS=0 turning windows off.

The tests' ping interval (0.25 s) caps a window at a quarter of it, 62.5 ms (jsstream.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from conftest import Runtime, assert_stopped, expected_tokens, expected_wire

pytestmark = pytest.mark.runtime

NATIVE = "@cf/google/gemma-4-26b-a4b-it"
OPENAI_SHAPED = "@cf/openai/gpt-oss-20b"


def convo(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def words(n: int) -> str:
    """A user message the built-in model echoes back: an answer of about n + 20 tokens."""
    return " ".join(f"w{i}" for i in range(n))


def timed_deltas(runtime: Runtime, text: str, model: str = NATIVE) -> tuple[bytes, list[float]]:
    """The whole body, and when each content delta arrived (monotonic seconds)."""
    raw = b""
    arrivals: list[float] = []
    with (
        runtime.client(timeout=30) as client,
        client.stream("POST", "/api/v1/chat", json={"messages": convo(text), "model": model}) as r,
    ):
        assert r.status_code == 200, r.read()[:200]
        for chunk in r.iter_raw():
            at = time.monotonic()
            before = raw.count(b"event: content_block_delta")
            raw += chunk
            arrivals += [at] * (raw.count(b"event: content_block_delta") - before)
    return raw, arrivals


def windows_count(runtime: Runtime) -> tuple[int, int]:
    stats = runtime.stats()
    return stats["window_reads"], stats["window_waits"]


@pytest.mark.parametrize(
    "text",
    [
        f"[[rate:150]] fast {words(120)}",
        f"[[pace:1]] [[fault:split]] cut anywhere {words(40)}",
        f"[[pace:0]] at once {words(300)}",
        "[[pace:2]] short",
    ],
)
def test_windowed_reads_give_the_same_bytes(runtime: Runtime, text: str) -> None:
    before = windows_count(runtime)
    raw, _ = timed_deltas(runtime, text)
    want = expected_wire(convo(text))
    at = next((i for i, (a, b) in enumerate(zip(raw, want, strict=False)) if a != b), None)
    assert raw == want, (len(raw), len(want), at, raw[at or 0 :][:120], want[at or 0 :][:120])
    reads, _ = windows_count(runtime)
    assert reads > before[0], "the answer was not read by the windowed reader"


def test_reasoning_shape_through_windows_gives_the_same_bytes(runtime: Runtime) -> None:
    """OpenAI-shaped reasoning frames at 150 a second: windows, the same bytes as at once."""
    paced, _ = timed_deltas(runtime, f"[[think:40]][[rate:150]] why {words(40)}", OPENAI_SHAPED)
    whole, _ = timed_deltas(runtime, f"[[think:40]][[pace:0]] why {words(40)}", OPENAI_SHAPED)
    assert paced == whole
    assert paced.count(b"event: thinking_delta") >= 40, paced[:300]
    assert paced.count(b"event: content_block_delta") >= 40, paced[-300:]


def test_fast_tokens_are_read_in_windows(runtime: Runtime) -> None:
    """Counted by the Worker's census, not timed: when the first token goes out and how long a
    window holds the others is the window policy's, tested on a synthetic clock
    (tests/test_streaming/test_window.py); how late tokens are is the bench's (issue 44)."""
    before = windows_count(runtime)
    text = f"[[rate:150]] go {words(135)}"
    raw, _ = timed_deltas(runtime, text)
    reads, waits = (a - b for a, b in zip(windows_count(runtime), before, strict=True))
    assert raw.count(b"event: content_block_delta") == len(expected_tokens(convo(text))) >= 150
    # 150 tokens arrive in 1 s: read once per window (62.5 ms here), not once per chunk (300);
    # a busy machine only makes the reads fewer. At least one read was followed by a window.
    assert reads < 60 and waits >= 1, (reads, waits)


def test_an_answer_sent_at_once_is_read_in_a_few_reads(runtime: Runtime) -> None:
    """A burst (the whole answer sent at once) arrives as two network chunks a frame, and was
    read chunk by chunk (~2.4 reads a frame): each read is a call into Python. The reader now
    lets a burst gather for 2 ms a read (tests/test_streaming/test_window.py), so the reads are
    far fewer than the frames; a busy machine only makes them fewer still."""
    before = windows_count(runtime)
    text = f"[[pace:0]] at once {words(20)}"
    raw, _ = timed_deltas(runtime, text)
    assert raw == expected_wire(convo(text))
    reads, _ = (a - b for a, b in zip(windows_count(runtime), before, strict=True))
    frames = len(expected_tokens(convo(text)))
    assert frames >= 40 and 0 < reads < frames / 2, (reads, frames)


def test_a_client_leaving_mid_window_closes_the_model_connection(runtime: Runtime) -> None:
    for _ in range(3):
        with (
            runtime.client() as client,
            client.stream(
                "POST", "/api/v1/chat", json={"messages": convo("[[rate:150]] [[tokens:900]] x")}
            ) as r,
        ):
            seen = 0
            for chunk in r.iter_raw():
                seen += chunk.count(b"event: content_block_delta")
                if seen >= 20:
                    break
        call = runtime.wait_for(
            lambda c: c["clientClosedAt"] is not None or c["finishedAt"] is not None
        )
        assert_stopped(call)


def test_a_whole_answer_is_read_in_windows_and_stays_exact(runtime: Runtime) -> None:
    before = windows_count(runtime)
    messages = convo(f"[[rate:150]] whole {words(130)}")
    body = {
        "model": NATIVE,
        "messages": messages,
        "stream": False,
    }
    with runtime.client(timeout=30) as client:
        r = client.post("/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text[:200]
    text = r.json()["choices"][0]["message"]["content"]
    assert text == "".join(expected_tokens(messages)).strip(), text[:200]
    reads, waits = (a - b for a, b in zip(windows_count(runtime), before, strict=True))
    assert reads < 60, (reads, waits)


@pytest.fixture()
def windows_off(runtime: Runtime) -> Iterator[None]:
    runtime.set_vars(STREAM_WINDOW_MS="0")
    try:
        yield
    finally:
        runtime.set_vars(STREAM_WINDOW_MS=None)


def test_stream_window_ms_0_reads_every_chunk_as_it_comes(
    runtime: Runtime, windows_off: None
) -> None:
    before = windows_count(runtime)
    text = f"[[rate:150]] no windows {words(60)}"
    raw, _ = timed_deltas(runtime, text)
    assert raw == expected_wire(convo(text))
    # Counted, not timed: no read went through the windowed reader.
    assert windows_count(runtime) == before, "STREAM_WINDOW_MS=0 still read by windows"


def test_a_bad_stream_window_is_a_clear_misconfiguration(runtime: Runtime) -> None:
    try:
        runtime.set_vars(STREAM_WINDOW_MS="500")
        with runtime.client() as client:
            r = client.post("/api/v1/chat", json={"messages": convo("[[pace:0]] hi")})
        assert r.status_code == 500, r.text[:200]
        assert r.json() == {
            "error": "server_misconfigured",
            "message": "The service is misconfigured: its owner has to fix the setting STREAM_WINDOW_MS.",
        }, r.text[:200]
    finally:
        runtime.set_vars(STREAM_WINDOW_MS=None)
