"""Server-Sent Events as lines and data fields: the transport layer of the upstream decoder.

``LineDecoder`` turns text that arrives in reads of any size into whole lines (httpx's
``LineDecoder`` is the model); ``DataFields`` turns lines into each event's data. Neither knows
what the data means (that is ``frames``). Both are linear in their input for any split: a line
that arrives in many reads is joined once, when it ends.
"""

from __future__ import annotations

__all__ = ["DataFields", "LineDecoder"]


class LineDecoder:
    """Text in, whole lines out. Lines end in LF, CRLF or CR (SSE's three). A CR that ends a read
    ends its line at once (an event is not held back for the next read); a LF that starts the
    next read is then that CRLF's second half: the trailing-CR flag."""

    __slots__ = ("_pending", "_trailing_cr")

    def __init__(self) -> None:
        # The start of a line whose end has not come, in pieces; it never holds a line end.
        self._pending: list[str] = []
        self._trailing_cr = False

    def decode(self, text: str) -> list[str]:
        if not text:
            return []
        if self._trailing_cr:
            self._trailing_cr = False
            if text[0] == "\n":
                text = text[1:]
        if "\r" in text:
            self._trailing_cr = text[-1] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if "\n" not in text:
            if text:
                self._pending.append(text)
            return []
        lines = text.split("\n")
        if self._pending:
            self._pending.append(lines[0])
            lines[0] = "".join(self._pending)
            self._pending = []
        rest = lines.pop()
        if rest:
            self._pending.append(rest)
        return lines

    @property
    def idle(self) -> bool:
        """Between lines: nothing of a line is held, and no CR waits for its LF."""
        return not self._pending and not self._trailing_cr

    def flush(self) -> list[str]:
        """End of input: a last line with no line end is still a line."""
        if not self._pending:
            return []
        line = "".join(self._pending)
        self._pending = []
        return [line]


class DataFields:
    """Lines in, each event's data out (its ``data`` lines joined by LF), when the blank line
    that ends the event comes. Comments and the other fields (event, id, retry) carry nothing
    the relay uses and are skipped."""

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, lines: list[str]) -> list[str]:
        """The data of each event that one of ``lines`` ends, in order."""
        events: list[str] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    events.append(data[0] if len(data) == 1 else "\n".join(data))
                    data.clear()
            elif line.startswith("data:"):
                value = line[5:]
                data.append(value[1:] if value[:1] == " " else value)
            elif line == "data":
                data.append("")
        return events

    @property
    def idle(self) -> bool:
        """Between events: no data line of an unfinished event is held."""
        return not self._data

    def flush(self) -> str | None:
        """The data of an event the input ended without its blank line (it still counts)."""
        data = self._data
        if not data:
            return None
        event = data[0] if len(data) == 1 else "\n".join(data)
        data.clear()
        return event
