"""Stop strings, done by the relay for every model: the answer is cut right before the first
one, however the model's tokens and the network's reads split it.

Workers AI's native models take no `stop`, and the OpenAI-shaped ones at most 4 (and may apply
them to the reasoning too), so the relay does it itself, the same way on every model: text
that could still be the start of a stop string is held back only as long as it could be, and
released when the answer goes on another way or ends.
"""

from __future__ import annotations

import re


class StopScanner:
    """feed(text) -> the text that may go out now; `stopped` once a stop string was seen,
    after which nothing more goes out. flush() releases what is held at the answer's end.

    Each feed looks at the held text plus the new text once (one regex search), then at most
    `longest - 1` suffixes against a set of the stop strings' prefixes: linear in the input.
    """

    __slots__ = ("_held", "_longest", "_pattern", "_prefixes", "stopped")

    def __init__(self, stops: tuple[str, ...]) -> None:
        self._pattern = re.compile("|".join(re.escape(s) for s in stops))
        self._prefixes = {s[:i] for s in stops for i in range(1, len(s))}
        self._longest = max(len(s) for s in stops)
        self._held = ""
        self.stopped = False

    def feed(self, text: str) -> str:
        if self.stopped:
            return ""
        text = self._held + text
        found = self._pattern.search(text)
        if found is not None:
            self.stopped = True
            self._held = ""
            return text[: found.start()]
        keep = 0
        for size in range(min(self._longest - 1, len(text)), 0, -1):
            if text[-size:] in self._prefixes:
                keep = size
                break
        self._held = text[len(text) - keep :]
        return text[: len(text) - keep]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return "" if self.stopped else held
