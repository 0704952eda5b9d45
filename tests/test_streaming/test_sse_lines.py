"""sse_lines on its own: lines and data fields, at every split, against a reference reading."""

import re

import pytest

from streaming.sse_lines import DataFields, LineDecoder

# LF, CRLF and CR, mixed, with a CRLF that a split may cut, empty lines and a last line that
# has no end.
TEXT = "data: a\r\ndata: b\rdata:c\n\r\n: comment\rdata\n\nid: 7\r\rdata:  two spaces\n\nlast"


def reference_lines(text: str) -> list[str]:
    """Every line SSE sees, the last one included (the input's end ends it)."""
    return re.split(r"\r\n|\r|\n", text)


def lines_read(reads: list[str]) -> list[str]:
    decoder = LineDecoder()
    lines = [line for read in reads for line in decoder.decode(read)]
    return lines + decoder.flush()


@pytest.mark.parametrize("at", range(len(TEXT) + 1))
def test_lines_are_the_same_for_every_split_in_two(at: int) -> None:
    got = lines_read([TEXT[:at], TEXT[at:]])
    assert got == reference_lines(TEXT), f"split at {at}: {TEXT[:at]!r} | {TEXT[at:]!r}"


def test_lines_one_character_at_a_time() -> None:
    assert lines_read(list(TEXT)) == reference_lines(TEXT)


def test_a_cr_that_ends_a_read_ends_its_line_at_once() -> None:
    """An event ended by CR CR is handed on without waiting for the next read."""
    decoder = LineDecoder()
    assert decoder.decode("data: x\r\r") == ["data: x", ""]
    assert decoder.decode("\ndata: y\n") == ["data: y"], "the LF after a CR is that CRLF's"


def test_data_fields_join_lines_and_skip_other_fields() -> None:
    fields = DataFields()
    events = fields.feed(reference_lines(TEXT)[:-1])
    assert events == ["a\nb\nc", "", " two spaces"], events
    assert fields.flush() is None


def test_data_fields_flush_hands_on_an_event_cut_by_the_end() -> None:
    fields = DataFields()
    assert fields.feed(["data: x", "data: y"]) == []
    assert fields.flush() == "x\ny"
    assert fields.flush() is None
