"""Reasoning written inline as <think>...</think> in a model's answer text, split off.

Reasoning models that speak the native Workers AI shape (DeepSeek-R1 distills, QwQ) write
their chain of thought into the answer text. Their chat template usually puts the opening
<think> into the prompt, so the stream often starts inside the reasoning with no tag and
only a lone </think> ends it: such models are flagged by the caller (``thinking=True``),
because text already relayed cannot be taken back once a </think> shows up. For every
other model an explicit <think> at the very start (after whitespace) still opens reasoning.
Tags can be split across frames anywhere, so a possible partial tag is held back until the
next text decides it.
"""

from __future__ import annotations

TEXT = "text"
THINKING = "thinking"

OPEN = "<think>"
CLOSE = "</think>"

Part = tuple[str, str]


def _partial_tail(text: str, tag: str) -> int:
    """Length of the longest end of text that is the start of tag (0 when none)."""
    at = text.rfind("<", max(0, len(text) - len(tag) + 1))
    return len(text) - at if at >= 0 and tag.startswith(text[at:]) else 0


class ThinkTags:
    __slots__ = ("_held", "_start", "_trim", "thinking")

    def __init__(self, *, thinking: bool) -> None:
        self.thinking = thinking  # inside the reasoning now
        self._start = True  # an opening tag may still come, before any other text
        self._trim = thinking  # whitespace right after a tag is layout, not content
        self._held = ""  # text that may be the start of a tag

    @property
    def idle(self) -> bool:
        """Plain answer text from here on: the caller may stop feeding this splitter."""
        return not (self.thinking or self._start or self._trim or self._held)

    def feed(self, text: str) -> list[Part]:
        if self._held:
            text, self._held = self._held + text, ""
        out: list[Part] = []
        while text:
            if self._trim:
                stripped = text.lstrip()
                if not stripped:
                    return out
                text, self._trim = stripped, False
            if self._start:
                stripped = text.lstrip()
                if stripped.startswith(OPEN):
                    self._start, self.thinking, self._trim = False, True, True
                    text = stripped[len(OPEN) :]
                    continue
                if not stripped or OPEN.startswith(stripped):
                    self._held = text
                    return out
                self._start = False
            if not self.thinking:
                out.append((TEXT, text))
                return out
            at = text.find(CLOSE)
            if at >= 0:
                if at:
                    out.append((THINKING, text[:at]))
                self.thinking, self._trim = False, True
                text = text[at + len(CLOSE) :]
                continue
            if keep := _partial_tail(text, CLOSE):
                self._held, text = text[-keep:], text[:-keep]
            if text:
                out.append((THINKING, text))
            return out
        return out

    def flush(self) -> list[Part]:
        """The text ended: what was held back is what it looked like, not a tag."""
        held, self._held = self._held, ""
        if not held or (self._trim and not held.strip()):
            return []
        return [(THINKING if self.thinking else TEXT, held)]
