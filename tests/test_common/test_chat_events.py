from common.chat_events import ChatEncoder, error_event
from streaming.relay import Failed, Finished
from streaming.upstream import TEXT, THINKING


def test_text_batches_keep_counting_the_index() -> None:
    encoder = ChatEncoder()
    assert (
        encoder.parts([(TEXT, "a")])
        == b'event: content_block_delta\ndata: {"index":0,"text":"a"}\n\n'
    )
    assert encoder.parts([(TEXT, "b"), (TEXT, "c\n")]) == (
        b'event: content_block_delta\ndata: {"index":1,"text":"b"}\n\n'
        b'event: content_block_delta\ndata: {"index":2,"text":"c\\n"}\n\n'
    )


def test_terminal_events_end_with_done() -> None:
    encoder = ChatEncoder()
    assert encoder.finished(Finished(stop_reason="length", usage={"prompt_tokens": 1})) == (
        b'event: message_stop\ndata: {"stop_reason":"length","usage":{"prompt_tokens":1}}\n\n'
        b"event: done\ndata: {}\n\n"
    )
    assert encoder.finished(Finished(stop_reason="stop", usage=None)) == (
        b'event: message_stop\ndata: {"stop_reason":"stop"}\n\nevent: done\ndata: {}\n\n'
    )
    assert encoder.failed(Failed(code="upstream_timeout", message='silent "60" s')) == (
        b'event: error\ndata: {"error":"upstream_timeout","message":"silent \\"60\\" s"}\n\n'
        b"event: done\ndata: {}\n\n"
    )


def test_ping_start_and_error_event() -> None:
    encoder = ChatEncoder()
    assert encoder.start() == b""
    assert encoder.ping() == b": ping\n\n"
    assert error_event("x", "y") == b'event: error\ndata: {"error":"x","message":"y"}\n\n'


def test_lone_surrogates_survive_as_json_escapes() -> None:
    out = ChatEncoder().parts([(TEXT, "\ud83c"), (TEXT, "\udf0d"), (TEXT, "é")])
    assert out == (
        b'event: content_block_delta\ndata: {"index":0,"text":"\\ud83c"}\n\n'
        b'event: content_block_delta\ndata: {"index":1,"text":"\\udf0d"}\n\n'
        b'event: content_block_delta\ndata: {"index":2,"text":"\\u00e9"}\n\n'
    )


def test_thinking_has_its_own_index_and_keeps_stream_order() -> None:
    encoder = ChatEncoder()
    assert (
        encoder.parts([(THINKING, "hm")])
        == b'event: thinking_delta\ndata: {"index":0,"text":"hm"}\n\n'
    )
    assert encoder.parts([(THINKING, " so"), (TEXT, "A"), (TEXT, "B")]) == (
        b'event: thinking_delta\ndata: {"index":1,"text":" so"}\n\n'
        b'event: content_block_delta\ndata: {"index":0,"text":"A"}\n\n'
        b'event: content_block_delta\ndata: {"index":1,"text":"B"}\n\n'
    )
    assert (
        encoder.parts([(TEXT, "C")])
        == b'event: content_block_delta\ndata: {"index":2,"text":"C"}\n\n'
    )


def test_out_of_budget_while_thinking_is_flagged() -> None:
    stop = Finished(stop_reason="length", usage={"completion_tokens": 9}, while_thinking=True)
    assert ChatEncoder().finished(stop) == (
        b'event: message_stop\ndata: {"stop_reason":"length","while_thinking":true,"usage":{"completion_tokens":9}}\n\n'
        b"event: done\ndata: {}\n\n"
    )
