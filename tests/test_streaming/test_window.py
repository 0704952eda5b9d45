"""The window policy of the relay's windowed reader (src/window.py), on the host: when the
shell reads the model's stream next, given what each read returned and when."""

from __future__ import annotations

import pytest

from streaming.window import FULL_READ, Windows


def frames(n: int) -> bytes:
    return b'data: {"response":"x"}\n\n' * n


def feed(w: Windows, reads: list[tuple[float, bytes]]) -> list[float]:
    return [w.after_read(at, data) for at, data in reads]


G = Windows(0.1).gather  # the first wait that lets a burst's chunks gather (2 ms), then 2x each


def test_the_first_frames_are_read_at_once() -> None:
    w = Windows(0.1)
    # One token per read, 7 ms apart (150 a second): the first three are never held longer
    # than the gathering waits (2 ms, then 4).
    assert G == 0.002
    assert feed(w, [(0.000, frames(1)), (0.007, frames(1))]) == [G, 2 * G]


def test_fast_tokens_get_the_longest_window() -> None:
    w = Windows(0.1)
    waits = feed(w, [(i * 0.007, frames(1)) for i in range(4)])
    assert waits[:2] == [G, 2 * G] and waits[-1] == 0.1
    # After a window, a read finds ~15 frames: still fast, still the longest window.
    assert w.after_read(0.128, frames(15)) == 0.1
    assert w.rate is not None and w.rate > 100


def test_slow_tokens_get_no_window() -> None:
    w = Windows(0.1)
    waits = feed(w, [(i * 0.2, frames(1)) for i in range(6)])  # 5 tokens a second
    # The first two gather (no rate yet); from the third, a slow rate: no wait at all.
    assert waits == [G, 2 * G] + [0.0] * 4, waits


def test_a_stream_that_slows_down_loses_its_window() -> None:
    w = Windows(0.1)
    feed(w, [(i * 0.007, frames(1)) for i in range(5)])
    assert w.after_read(0.135, frames(14)) == 0.1
    # Then one frame per read, 300 ms apart: the rate (halved toward each new sample) falls,
    # the window shrinks, then goes.
    waits = feed(w, [(0.135 + 0.3 * k, frames(1)) for k in range(1, 7)])
    assert waits == sorted(waits, reverse=True) and waits[-1] == 0.0, waits


def test_between_slow_and_fast_the_window_is_in_proportion() -> None:
    w = Windows(0.1, slow_rate=10, fast_rate=40)
    assert w.window(10) == 0.0
    assert w.window(25) == pytest.approx(0.05)
    assert w.window(40) == 0.1 and w.window(1000) == 0.1


def test_a_read_that_ends_mid_frame_is_followed_at_once() -> None:
    w = Windows(0.1)
    feed(w, [(i * 0.007, frames(1)) for i in range(5)])
    assert w.after_read(0.2, frames(10) + b'data: {"resp') == G
    assert w.after_read(0.2, b'onse":"x"}\n\n') == 0.1


def test_windows_off_reads_every_chunk_at_once() -> None:
    w = Windows(0.0)
    assert feed(w, [(i * 0.007, frames(1)) for i in range(20)]) == [0.0] * 20


def test_a_whole_answer_waits_the_window_from_the_first_read() -> None:
    w = Windows.steady(0.25)
    assert feed(w, [(0.0, frames(1)), (0.25, frames(30)), (0.5, b"data: [DO")]) == [
        0.25,
        0.25,
        G,
    ]


def test_the_window_never_exceeds_its_bound() -> None:
    w = Windows(0.06)
    waits = feed(w, [(i * 0.001, frames(1)) for i in range(50)])
    assert max(waits) == 0.06


def test_an_answer_that_comes_in_a_burst_is_read_to_its_end_at_once() -> None:
    # A short answer sent at once arrives in a read or two within a few milliseconds: however
    # fast that looks, none waits a window (which would hold the answer's end); the gathering
    # waits double (2, 4, 8 ms), so a long burst is read in a handful of reads.
    w = Windows(0.09)
    reads = [(0.0, frames(2)), (0.002, frames(6)), (0.006, frames(30)), (0.014, frames(60))]
    assert feed(w, reads) == [G, 2 * G, 4 * G, 8 * G]
    assert not w.windowed, "a gathering wait counted as a window"
    # Past the warm-up (15 ms), the rate decides: a fast one, the longest window.
    assert w.after_read(0.030, frames(90)) == 0.09 and w.windowed


def test_the_window_opens_once_the_stream_has_run_for_its_warm_up() -> None:
    w = Windows(0.09, warm_seconds=0.015)
    waits = feed(w, [(i * 0.005, frames(1)) for i in range(5)])  # 0, 5, 10, 15, 20 ms
    assert waits == [G, 2 * G, 4 * G, 0.09, 0.09], waits


def test_a_full_read_is_followed_at_once() -> None:
    # A read returns at most FULL_READ bytes: one that full left more behind it, mid-frame or
    # not, in the warm-up or not (a long burst is read back to back, never through timers).
    w = Windows(0.09)
    full = frames(1000)[:FULL_READ]
    assert [w.after_read(0.001 * i, full) for i in range(30)] == [0.0] * 30
    # So does a whole answer's reader, between its steady windows.
    steady = Windows.steady(0.25)
    assert [steady.after_read(0.0, full), steady.after_read(0.0, frames(3))] == [0.0, 0.25]
