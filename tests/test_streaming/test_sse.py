from typing import Any

import pytest

from streaming.sse import PING, ServerSentEvent, event


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (ServerSentEvent(data="x"), b"data: x\n\n"),
        (ServerSentEvent(data=""), b"data: \n\n"),
        (ServerSentEvent(data="a\nb"), b"data: a\ndata: b\n\n"),
        (ServerSentEvent(data="a\r\nb\rc"), b"data: a\ndata: b\ndata: c\n\n"),
        (ServerSentEvent(data="a\n"), b"data: a\ndata: \n\n"),
        (ServerSentEvent(event="done", data="{}"), b"event: done\ndata: {}\n\n"),
        (
            ServerSentEvent(id="7", event="e", data="d", retry=10),
            b"id: 7\nevent: e\nretry: 10\ndata: d\n\n",
        ),
        (ServerSentEvent(comment="ping"), b": ping\n\n"),
        (ServerSentEvent(comment="a\nb"), b": a\n: b\n\n"),
        (ServerSentEvent(data="é"), "data: é\n\n".encode()),
    ],
)
def test_encode_exact_bytes(value: ServerSentEvent, wire: bytes) -> None:
    assert value.encode() == wire


@pytest.mark.parametrize("field", ["event", "id"])
@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "\r\n"])
def test_line_breaks_in_event_and_id_are_refused(field: str, bad: str) -> None:
    with pytest.raises(ValueError, match=field):
        fields: dict[str, Any] = {field: bad}
        ServerSentEvent(data="x", **fields)


def test_nul_in_id_and_negative_retry_are_refused() -> None:
    with pytest.raises(ValueError, match="id"):
        ServerSentEvent(id="a\0b")
    with pytest.raises(ValueError, match="retry"):
        ServerSentEvent(retry=-1)


def test_event_helper_matches_the_value_type() -> None:
    assert (
        event("message_stop", '{"a":1}')
        == ServerSentEvent(event="message_stop", data='{"a":1}').encode()
    )
    assert event("x", "a\nb") == b"event: x\ndata: a\ndata: b\n\n"
    with pytest.raises(ValueError, match="event"):
        event("bad\nname", "{}")
    assert PING == b": ping\n\n"
