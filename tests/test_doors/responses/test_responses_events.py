"""The Responses encoder, event by event, in exact bytes."""

from __future__ import annotations

import json
from typing import Any

from doors.responses.responses_events import ResponsesEncoder
from streaming.relay import Failed, Finished
from streaming.upstream import TEXT, THINKING, ToolCall

ECHO: dict[str, Any] = {"instructions": None, "tools": []}
HEAD = '"id":"resp_1","object":"response","created_at":7,"model":"m","instructions":null,"tools":[]'


def encoder(stream: bool = True) -> ResponsesEncoder:
    return ResponsesEncoder(id="resp_1", created_at=7, model="m", echo=ECHO, stream=stream)


def event(kind: str, seq: int, body: str) -> bytes:
    return (
        'event: %s\ndata: {"type":"%s","sequence_number":%d,%s}\n\n' % (kind, kind, seq, body)
    ).encode()


def snapshot(
    status: str,
    output: str = "[]",
    usage: str = "null",
    rest: str = '"error":null,"incomplete_details":null',
) -> str:
    return '"response":{%s,"status":"%s",%s,"output":%s,"usage":%s}' % (
        HEAD,
        status,
        rest,
        output,
        usage,
    )


def test_start_is_created_then_in_progress() -> None:
    assert encoder().start() == (
        event("response.created", 0, snapshot("in_progress"))
        + event("response.in_progress", 1, snapshot("in_progress"))
    )


def test_reasoning_then_text_then_completed_with_usage() -> None:
    """The reasoning as content (reasoning_text) and as the item's one summary part, each
    token in both, side by side (issue 34: each default client reads one of them)."""
    e = encoder()
    e.start()
    rs = '"item_id":"rs_1_0","output_index":0,"content_index":0'
    sm = '"item_id":"rs_1_0","output_index":0,"summary_index":0'
    msg = '"item_id":"msg_1_1","output_index":1,"content_index":0'
    assert e.parts([(THINKING, "hm"), (THINKING, " ok"), (TEXT, "A\n")]) == (
        event(
            "response.output_item.added",
            2,
            '"output_index":0,"item":{"id":"rs_1_0","type":"reasoning","summary":[],"content":[],"status":"in_progress"}',
        )
        + event(
            "response.content_part.added", 3, rs + ',"part":{"type":"reasoning_text","text":""}'
        )
        + event(
            "response.reasoning_summary_part.added",
            4,
            sm + ',"part":{"type":"summary_text","text":""}',
        )
        + event("response.reasoning_text.delta", 5, rs + ',"delta":"hm"')
        + event("response.reasoning_summary_text.delta", 6, sm + ',"delta":"hm"')
        + event("response.reasoning_text.delta", 7, rs + ',"delta":" ok"')
        + event("response.reasoning_summary_text.delta", 8, sm + ',"delta":" ok"')
        + event("response.reasoning_text.done", 9, rs + ',"text":"hm ok"')
        + event(
            "response.content_part.done",
            10,
            rs + ',"part":{"type":"reasoning_text","text":"hm ok"}',
        )
        + event("response.reasoning_summary_text.done", 11, sm + ',"text":"hm ok"')
        + event(
            "response.reasoning_summary_part.done",
            12,
            sm + ',"part":{"type":"summary_text","text":"hm ok"}',
        )
        + event(
            "response.output_item.done",
            13,
            '"output_index":0,"item":{"id":"rs_1_0","type":"reasoning","summary":[{"type":"summary_text","text":"hm ok"}],"content":[{"type":"reasoning_text","text":"hm ok"}],"status":"completed"}',
        )
        + event(
            "response.output_item.added",
            14,
            '"output_index":1,"item":{"id":"msg_1_1","type":"message","status":"in_progress","content":[],"role":"assistant"}',
        )
        + event(
            "response.content_part.added",
            15,
            msg + ',"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}',
        )
        + event("response.output_text.delta", 16, msg + ',"delta":"A\\n","logprobs":[]')
    )
    assert e.parts([(TEXT, "é")]) == event(
        "response.output_text.delta", 17, msg + ',"delta":"\\u00e9","logprobs":[]'
    )
    text_part = '{"type":"output_text","annotations":[],"logprobs":[],"text":"A\\n\\u00e9"}'
    message = (
        '{"id":"msg_1_1","type":"message","status":"completed","content":[%s],"role":"assistant"}'
        % text_part
    )
    reasoning = '{"id":"rs_1_0","type":"reasoning","summary":[{"type":"summary_text","text":"hm ok"}],"content":[{"type":"reasoning_text","text":"hm ok"}],"status":"completed"}'
    usage = (
        '{"input_tokens":3,"input_tokens_details":{"cached_tokens":2},"output_tokens":4,'
        '"output_tokens_details":{"reasoning_tokens":3},"total_tokens":7}'
    )
    done = e.finished(
        Finished(
            stop_reason="stop",
            usage={
                "prompt_tokens": 3,
                "completion_tokens": 4,
                "total_tokens": 7,
                "cached_tokens": 2,
                "reasoning_tokens": 3,
            },
        )
    )
    assert done == (
        event("response.output_text.done", 18, msg + ',"text":"A\\n\\u00e9","logprobs":[]')
        + event("response.content_part.done", 19, msg + ',"part":' + text_part)
        + event("response.output_item.done", 20, '"output_index":1,"item":' + message)
        + event(
            "response.completed", 21, snapshot("completed", "[%s,%s]" % (reasoning, message), usage)
        )
    )
    assert e.response is not None and e.response["status"] == "completed"
    assert json.loads(done.split(b"data: ")[-1])["response"] == e.response


def test_a_tool_call_in_pieces_ends_with_the_answer() -> None:
    e = encoder()
    e.start()
    fc = '"item_id":"fc_1_0","output_index":0'
    out = e.tool_calls([ToolCall(index=0, id="call_9", name="get_weather", arguments='{"ci')])
    out += e.tool_calls([ToolCall(index=0, arguments='ty":"P"}')])
    item = '"id":"fc_1_0","type":"function_call","status":"%s","arguments":"%s","call_id":"call_9","name":"get_weather"'
    assert out == (
        event(
            "response.output_item.added",
            2,
            '"output_index":0,"item":{%s}' % (item % ("in_progress", "")),
        )
        + event("response.function_call_arguments.delta", 3, fc + ',"delta":"{\\"ci"')
        + event("response.function_call_arguments.delta", 4, fc + ',"delta":"ty\\":\\"P\\"}"')
    )
    whole = item % ("completed", '{\\"city\\":\\"P\\"}')
    assert e.finished(Finished(stop_reason="tool_calls", usage=None)) == (
        event(
            "response.function_call_arguments.done",
            5,
            fc + ',"name":"get_weather","arguments":"{\\"city\\":\\"P\\"}"',
        )
        + event("response.output_item.done", 6, '"output_index":0,"item":{%s}' % whole)
        + event("response.completed", 7, snapshot("completed", "[{%s}]" % whole))
    )


def test_a_call_without_an_id_gets_one_from_the_response_id() -> None:
    e = encoder()
    e.tool_calls([ToolCall(index=0, name="f", arguments="{}")])
    e.finished(Finished(stop_reason="tool_calls", usage=None))
    assert e.response is not None and e.response["output"][0]["call_id"] == "call_1_0"


def test_a_length_cut_is_incomplete_and_a_failure_is_failed() -> None:
    e = encoder()
    e.parts([(TEXT, "a")])
    out = e.finished(Finished(stop_reason="length", usage=None))
    assert b'"status":"incomplete","content":[' in out
    assert out.endswith(
        event(
            "response.incomplete",
            6,
            snapshot(
                "incomplete",
                '[{"id":"msg_1_0","type":"message","status":"incomplete","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"a"}],"role":"assistant"}]',
                rest='"error":null,"incomplete_details":{"reason":"max_output_tokens"}',
            ),
        )
    )
    e = encoder()
    e.parts([(TEXT, "a")])
    out = e.failed(Failed(code="upstream_error", message="The model stream failed."))
    assert out.endswith(
        event(
            "response.failed",
            6,
            snapshot(
                "failed",
                '[{"id":"msg_1_0","type":"message","status":"incomplete","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"a"}],"role":"assistant"}]',
                rest='"error":{"code":"upstream_error","message":"The model stream failed."},"incomplete_details":null',
            ),
        )
    )
    assert e.response is not None and e.response["error"] == {
        "code": "upstream_error",
        "message": "The model stream failed.",
    }


def test_not_streamed_it_writes_nothing_and_keeps_the_same_response() -> None:
    streamed, whole = encoder(), encoder(stream=False)
    outputs = []
    for e in (streamed, whole):
        outputs.append(
            e.start()
            + e.parts([(THINKING, "t"), (TEXT, "x")])
            + e.ping()
            + e.tool_calls([ToolCall(index=0, id="c", name="f", arguments="{}")])
            + e.finished(
                Finished(
                    stop_reason="tool_calls",
                    usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
                )
            )
        )
    assert outputs[1] == b"" and b": ping\n\n" in outputs[0]
    assert streamed.response == whole.response
    assert whole.response is not None and [o["type"] for o in whole.response["output"]] == [
        "reasoning",
        "message",
        "function_call",
    ]


def test_reasoning_cut_by_the_budget_ends_its_summary_part_incomplete() -> None:
    """gpt-oss out of budget: reasoning only, then `length`. The summary part ends with
    `"status":"incomplete"` (openai-python's ResponseReasoningSummaryPartDoneEvent)."""
    e = encoder()
    e.start()
    e.parts([(THINKING, "hm")])
    rs = '"item_id":"rs_1_0","output_index":0,"content_index":0'
    sm = '"item_id":"rs_1_0","output_index":0,"summary_index":0'
    item = (
        '{"id":"rs_1_0","type":"reasoning","summary":[{"type":"summary_text","text":"hm"}],'
        '"content":[{"type":"reasoning_text","text":"hm"}],"status":"incomplete"}'
    )
    assert e.finished(Finished(stop_reason="length", usage=None)) == (
        event("response.reasoning_text.done", 7, rs + ',"text":"hm"')
        + event(
            "response.content_part.done", 8, rs + ',"part":{"type":"reasoning_text","text":"hm"}'
        )
        + event("response.reasoning_summary_text.done", 9, sm + ',"text":"hm"')
        + event(
            "response.reasoning_summary_part.done",
            10,
            sm + ',"part":{"type":"summary_text","text":"hm"},"status":"incomplete"',
        )
        + event("response.output_item.done", 11, '"output_index":0,"item":' + item)
        + event(
            "response.incomplete",
            12,
            snapshot(
                "incomplete",
                "[%s]" % item,
                rest='"error":null,"incomplete_details":{"reason":"max_output_tokens"}',
            ),
        )
    )


def test_not_streamed_the_reasoning_is_its_summary_and_its_content() -> None:
    e = encoder(stream=False)
    e.parts([(THINKING, "a"), (THINKING, "b"), (TEXT, "x")])
    e.finished(Finished(stop_reason="stop", usage=None))
    assert e.response is not None
    assert e.response["output"][0] == {
        "id": "rs_1_0",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "ab"}],
        "content": [{"type": "reasoning_text", "text": "ab"}],
        "status": "completed",
    }
