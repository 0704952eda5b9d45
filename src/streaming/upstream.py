"""Incremental decoder for the Workers AI text-generation stream: bytes in, parts out.

Three layers, each linear in its input for any split: UTF-8 (a character may be cut between
reads), ``sse_lines`` (lines and each event's data; a line or an event may be cut anywhere)
and ``frames`` (what each event's data means: text, reasoning, tool calls, usage, [DONE]).
Nothing here assumes a read is a line or a frame.
"""

from __future__ import annotations

import codecs

from streaming.frames import (
    TEXT,
    THINKING,
    Decoded,
    Frames,
    Part,
    ToolCall,
    finish_reason,
)
from streaming.plain_frames import PLAIN_CHUNK_EVENT, PLAIN_NATIVE_EVENT
from streaming.sse_lines import DataFields, LineDecoder

__all__ = ["TEXT", "THINKING", "Decoded", "Part", "ToolCall", "UpstreamDecoder", "finish_reason"]


class UpstreamDecoder:
    """``opens_thinking``: the model starts inside <think> without writing the tag. What the
    stream said so far (usage, finish reason, what kinds of parts came) is read off ``frames``."""

    def __init__(self, *, opens_thinking: bool = False) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._bom = True  # a leading U+FEFF may still come (SSE strips it)
        self._lines = LineDecoder()
        self._fields = DataFields()
        self.frames = Frames(opens_thinking=opens_thinking)

    @property
    def done(self) -> bool:
        """[DONE] came: what follows it is not read."""
        return self.frames.done

    def feed(self, chunk: bytes) -> Decoded:
        out = Decoded()
        frames = self.frames
        if frames.done:
            return out
        text = self._utf8.decode(chunk)
        if self._bom and text:
            text = self._strip_bom(text)
        if self._lines.idle and self._fields.idle and "\r" not in text:
            text = self._plain_events(text, out)
        for payload in self._fields.feed(self._lines.decode(text)):
            frames.frame(payload, out)
            if frames.done:
                break
        return out

    def flush(self) -> Decoded:
        """End of input: a line or frame cut off by the end still counts, then the text held
        back while a <think> tag might have been forming."""
        out = Decoded()
        frames = self.frames
        if frames.done:
            return out
        text = self._utf8.decode(b"", final=True)
        if self._bom and text:
            text = self._strip_bom(text)
        events = self._fields.feed(self._lines.decode(text) + self._lines.flush())
        last = self._fields.flush()  # the input ended inside an event: it still counts
        if last is not None:
            events.append(last)
        for payload in events:
            frames.frame(payload, out)
            if frames.done:
                break
        if not frames.done:
            frames.release(out)
        return out

    def _plain_events(self, text: str, out: Decoded) -> str:
        """The batch path: the whole events at the start of ``text`` that are plain frames
        (nearly all of a windowed read), matched one after another by one regular expression
        and interpreted as frame() would; returns the rest, for the line path. Native frames
        need ``frames.plain`` (their texts go straight to the parts); OpenAI-shaped chunks, the
        late-2026 stream with usage on every delta and heartbeats, go through the same
        interpretation as frame()'s. Per token that is a few Python steps instead of a dozen
        calls, which is most of the relay's own CPU on workerd
        (bench/notes/2026-11-28-window-cost.md, 2026-11-29-fast-path.md)."""
        frames = self.frames
        native = PLAIN_NATIVE_EVENT.match
        chunk = PLAIN_CHUNK_EVENT.match
        pos = 0
        while True:
            start = pos
            if frames.plain:
                texts: list[str] = []
                while (found := native(text, pos)) is not None:
                    texts.append(found.group(1))
                    pos = found.end()
                if texts:
                    frames.plain_texts(texts, out)
            chunks = []
            while (found := chunk(text, pos)) is not None:
                chunks.append(found)
                pos = found.end()
            if chunks:
                frames.plain_chunks(chunks, out)
            if pos == start:
                return text[pos:]

    def _strip_bom(self, text: str) -> str:
        """The first text decoded: without a leading U+FEFF, as SSE reads it."""
        self._bom = False
        return text[1:] if text[0] == "\ufeff" else text
