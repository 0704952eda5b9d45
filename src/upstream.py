"""Incremental decoder for the Workers AI text-generation stream.

Workers AI streams Server-Sent Events whose data is either the native shape
``{"response": "...", "p": "<padding>", "usage": {...}}`` or the OpenAI shape
``{"choices": [{"delta": {"content": "..."}, "finish_reason": ...}], "usage": {...}}``,
ended by ``data: [DONE]``. Network reads split frames, lines and UTF-8 characters
anywhere, so nothing here assumes a read is a line or a frame.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass, field

USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")

# The native frame as Workers AI sends it, when its text needs no JSON unescaping:
# the text is then the match itself, and json.loads (the slow part) is skipped.
_PLAIN_NATIVE = re.compile(r'\{"response":"([^"\\\x00-\x1f]*)"(?:,"p":"[^"\\\x00-\x1f]*")?\}')
# The commonest read of all: exactly one such frame.
_ONE_PLAIN_FRAME = re.compile(r'data: \{"response":"([^"\\\x00-\x1f]*)"(?:,"p":"[^"\\\x00-\x1f]*")?\}\n\n')


@dataclass(slots=True)
class Decoded:
    """What one feed() produced: text deltas in order, plus end-of-answer facts."""

    texts: list[str] = field(default_factory=list)
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    done: bool = False


class UpstreamDecoder:
    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._skip_lf = False
        self._data: list[str] = []
        self.done = False
        self.malformed = 0
        self.usage: dict[str, int] | None = None
        self.finish_reason: str | None = None

    def feed(self, chunk: bytes) -> Decoded:
        text = self._utf8.decode(chunk)
        # Fast path: nothing pending and whole LF-framed frames, as Workers AI sends them.
        if (
            not self._buffer
            and not self._data
            and not self._skip_lf
            and not self.done
            and text.endswith("\n\n")
            and "\r" not in text
        ):
            one = _ONE_PLAIN_FRAME.fullmatch(text)
            if one is not None:
                return Decoded(texts=[one.group(1)]) if one.group(1) else Decoded()
            out = Decoded()
            for block in text[:-2].split("\n\n"):
                if block.startswith("data: ") and "\n" not in block:
                    self._data.append(block[6:])
                    self._dispatch(out)
                else:
                    for line in block.split("\n"):
                        self._line(line, out)
                    self._line("", out)
                if self.done:
                    break
            return out
        return self._decode(text, final=False)

    def flush(self) -> Decoded:
        """End of input: a frame cut off by the end (no blank line after it) still counts."""
        out = self._decode(self._utf8.decode(b"", final=True), final=True)
        if self._data and not self.done:
            self._dispatch(out)
        return out

    def _decode(self, text: str, *, final: bool) -> Decoded:
        out = Decoded()
        if self.done or not text:
            if final and self._buffer and not self.done:
                self._line(self._buffer, out)
                self._buffer = ""
            return out
        if self._skip_lf and text.startswith("\n"):
            text = text[1:]
        self._skip_lf = False
        buffer = self._buffer + text if self._buffer else text
        start = 0
        end = len(buffer)
        while start < end:
            lf = buffer.find("\n", start)
            cr = buffer.find("\r", start, lf if lf >= 0 else end)
            if cr >= 0:
                stop = cr
                if cr + 1 < end:
                    nxt = cr + 2 if buffer[cr + 1] == "\n" else cr + 1
                else:
                    nxt = cr + 1
                    self._skip_lf = True
            elif lf >= 0:
                stop, nxt = lf, lf + 1
            else:
                break
            self._line(buffer[start:stop], out)
            start = nxt
            if self.done:
                self._buffer = ""
                return out
        rest = buffer[start:]
        if final and rest:
            self._line(rest, out)
            rest = ""
        self._buffer = rest
        return out

    def _line(self, line: str, out: Decoded) -> None:
        if not line:
            if self._data:
                self._dispatch(out)
            return
        if line.startswith("data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(" ") else value)
        elif line == "data":
            self._data.append("")
        # Comments (":...") and other fields (event, id, retry) carry nothing we relay.

    def _dispatch(self, out: Decoded) -> None:
        payload = self._data[0] if len(self._data) == 1 else "\n".join(self._data)
        self._data = []
        plain = _PLAIN_NATIVE.fullmatch(payload)
        if plain is not None:
            if text := plain.group(1):
                out.texts.append(text)
            return
        if payload == "[DONE]":
            self.done = out.done = True
            return
        try:
            frame = json.loads(payload)
        except ValueError:
            self.malformed += 1
            return
        if not isinstance(frame, dict):
            self.malformed += 1
            return
        text = frame.get("response")
        choices = frame.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            choice = choices[0]
            delta = choice.get("delta")
            if isinstance(delta, dict):
                text = delta.get("content")
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                self.finish_reason = out.finish_reason = reason
        if isinstance(text, str):
            if text:
                out.texts.append(text)
        elif isinstance(text, (int, float)) and not isinstance(text, bool):
            out.texts.append(json.dumps(text))
        usage = frame.get("usage")
        if isinstance(usage, dict):
            clean = {
                key: value
                for key in USAGE_KEYS
                if isinstance(value := usage.get(key), int) and not isinstance(value, bool)
            }
            if clean:
                self.usage = out.usage = clean
