"""When to read the model's stream next: the window policy of the relay's windowed reader.

Plain Python with no clock of its own (the shell passes the time), so the host tests pin it.
In the Worker every read of the model's stream costs workerd's stream machinery whatever it
returns, so reading once per window of tokens, not once per network chunk, is what makes a
paced token cheap (bench/notes/2026-11-25-windows.md). A window delays the tokens it holds,
so it is bounded, and it is taken only where it saves something:

- the first token goes out at once; until `warm_frames` frames are seen and the stream has
  been read for `warm_seconds`, the next read follows after a gathering wait, `gather` (2 ms)
  and twice the last each time: a short answer is never held, and one that arrives in a burst
  is read in a few reads, not one per network chunk (a frame often comes as two), to its end.
  A window there would hold the answer's last frames and leave the isolate idle mid-answer,
  which costs workerd CPU of its own (bench/notes/2026-11-29-fixed-cost.md);
- a read that ends inside a frame is followed after `gather` (the rest of that frame is
  already on its way), and a full read (FULL_READ, the most one returns) at once: more is
  waiting;
- then the window follows the token rate, measured from what each read returned: none below
  `slow_rate` tokens a second (a window would hold one token and save nothing), the longest,
  `longest` seconds, from `fast_rate` on, and in between in proportion.
"""

from __future__ import annotations

FRAME_END = b"\n\n"
# The most one read of the model's stream returns: the shell's BYOB reader reads into a buffer
# of this size (a window of the late-2026 shape at 150 tokens a second is ~5 KiB). A read that
# full left more behind it.
FULL_READ = 16384


class Windows:
    """after_read(now, data) -> seconds to wait before the next read (0: read again at once)."""

    __slots__ = (
        "_first_at",
        "_frames",
        "_gathered",
        "_last_at",
        "_rate",
        "_steady",
        "fast_rate",
        "gather",
        "longest",
        "slow_rate",
        "warm_frames",
        "warm_seconds",
        "windowed",
    )

    def __init__(
        self,
        longest: float,
        *,
        slow_rate: float = 10.0,
        fast_rate: float = 40.0,
        warm_frames: int = 3,
        warm_seconds: float = 0.015,
        gather: float = 0.002,
    ) -> None:
        self.longest = max(longest, 0.0)
        self.slow_rate = slow_rate
        self.fast_rate = max(fast_rate, slow_rate)
        self.warm_frames = warm_frames
        self.warm_seconds = warm_seconds
        self.gather = gather
        self._first_at: float | None = None  # when the first read returned
        self._gathered = 0  # gathering waits taken so far (each twice the last)
        self._frames = 0  # whole frames seen so far
        self._last_at: float | None = None  # when the last read that ended on a frame did
        self._rate: float | None = None  # tokens (frames) a second, smoothed
        self._steady = False
        # Whether the wait after_read last returned is a window (not a gathering wait, 0, or
        # the read at once after a full one): what the census counts as a window.
        self.windowed = False

    @classmethod
    def steady(cls, longest: float) -> Windows:
        """For an answer nobody reads token by token (collected whole): after every read that
        ends on a frame, wait `longest`, from the first read on."""
        windows = cls(longest, warm_frames=0)
        windows._steady = True
        return windows

    @property
    def rate(self) -> float | None:
        return self._rate

    def after_read(self, now: float, data: bytes) -> float:
        self.windowed = False
        if self.longest <= 0:
            return 0.0
        if self._first_at is None:
            self._first_at = now
        frames = data.count(FRAME_END)
        self._frames += frames
        if len(data) >= FULL_READ:
            return 0.0  # more is waiting already: read it at once
        if not data.endswith(FRAME_END):
            return self.gather  # mid-frame: the rest is on its way
        if self._steady:
            self.windowed = True
            return self.longest
        last, self._last_at = self._last_at, now
        if last is not None and now > last and frames:
            sample = frames / (now - last)
            self._rate = sample if self._rate is None else (self._rate + sample) / 2
        if self._frames < self.warm_frames or self._rate is None:
            return self._gathering()
        if now - self._first_at < self.warm_seconds:
            return self._gathering()  # a burst so far: what follows may as well be the end
        wait = self.window(self._rate)
        self.windowed = wait > 0
        return wait

    def _gathering(self) -> float:
        """The warm-up's wait: `gather`, then twice the last each time (2, 4, 8 ms...), at most
        `longest`: a short burst is read to its end in a read or two, a long one in a handful."""
        wait = min(self.longest, self.gather * (1 << min(self._gathered, 16)))
        self._gathered += 1
        return wait

    def window(self, rate: float) -> float:
        """The window for a token rate: 0 when slow, `longest` when fast, linear between."""
        if rate <= self.slow_rate:
            return 0.0
        if rate >= self.fast_rate or self.fast_rate == self.slow_rate:
            return self.longest
        return self.longest * (rate - self.slow_rate) / (self.fast_rate - self.slow_rate)
