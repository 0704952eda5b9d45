"""The UI message stream encoder, chunk by chunk, in exact bytes."""

from __future__ import annotations

from doors.ui_chat.ui_stream import UIMessageEncoder, usage
from streaming.relay import Failed, Finished
from streaming.upstream import TEXT, THINKING, ToolCall


def encoder(call_prefix: str | None = None) -> UIMessageEncoder:
    return UIMessageEncoder(message_id="msg_1", model="@cf/m", call_prefix=call_prefix)


def test_start_names_the_message_and_opens_a_step() -> None:
    assert (
        encoder().start()
        == b'data: {"type":"start","messageId":"msg_1"}\n\ndata: {"type":"start-step"}\n\n'
    )


def test_reasoning_then_text_each_a_part_of_its_own() -> None:
    e = encoder()
    assert e.parts([(THINKING, "hm"), (TEXT, "A"), (TEXT, "\n\u00e9")]) == (
        b'data: {"type":"reasoning-start","id":"reasoning-0"}\n\n'
        b'data: {"type":"reasoning-delta","id":"reasoning-0","delta":"hm"}\n\n'
        b'data: {"type":"reasoning-end","id":"reasoning-0"}\n\n'
        b'data: {"type":"text-start","id":"text-1"}\n\n'
        b'data: {"type":"text-delta","id":"text-1","delta":"A"}\n\n'
        b'data: {"type":"text-delta","id":"text-1","delta":"\\n\\u00e9"}\n\n'
    )
    assert e.finished(
        Finished(
            stop_reason="stop",
            usage={"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5},
        )
    ) == (
        b'data: {"type":"text-end","id":"text-1"}\n\n'
        b'data: {"type":"finish-step"}\n\n'
        b'data: {"type":"finish","finishReason":"stop","messageMetadata":{"model":"@cf/m",'
        b'"usage":{"inputTokens":2,"outputTokens":3,"totalTokens":5}}}\n\n'
        b"data: [DONE]\n\n"
    )


def test_a_tool_call_streams_its_input_and_is_available_at_the_end() -> None:
    e = encoder()
    out = e.parts([(TEXT, "x")]) + e.tool_calls(
        [ToolCall(index=0, id="call_9", name="get_weather", arguments='{"city":')]
    )
    out += e.tool_calls([ToolCall(index=0, arguments='"P"}'), ToolCall(index=1, name="f")])
    assert out == (
        b'data: {"type":"text-start","id":"text-0"}\n\n'
        b'data: {"type":"text-delta","id":"text-0","delta":"x"}\n\n'
        b'data: {"type":"text-end","id":"text-0"}\n\n'
        b'data: {"type":"tool-input-start","toolCallId":"call_9","toolName":"get_weather"}\n\n'
        b'data: {"type":"tool-input-delta","toolCallId":"call_9","inputTextDelta":"{\\"city\\":"}\n\n'
        b'data: {"type":"tool-input-delta","toolCallId":"call_9","inputTextDelta":"\\"P\\"}"}\n\n'
        b'data: {"type":"tool-input-start","toolCallId":"call_1_1","toolName":"f"}\n\n'
    )
    assert e.finished(Finished(stop_reason="tool_calls", usage=None)) == (
        b'data: {"type":"tool-input-available","toolCallId":"call_9","toolName":"get_weather","input":{"city":"P"}}\n\n'
        b'data: {"type":"tool-input-available","toolCallId":"call_1_1","toolName":"f","input":{}}\n\n'
        b'data: {"type":"finish-step"}\n\n'
        b'data: {"type":"finish","finishReason":"tool-calls","messageMetadata":{"model":"@cf/m"}}\n\n'
        b"data: [DONE]\n\n"
    )


def test_calls_without_an_id_take_the_answers_own_prefix() -> None:
    e = encoder(call_prefix="ab")
    assert (
        e.tool_calls([ToolCall(index=0, name="f")])
        == b'data: {"type":"tool-input-start","toolCallId":"call_ab_0","toolName":"f"}\n\n'
    )


def test_arguments_that_are_not_json_are_a_tool_input_error() -> None:
    e = encoder()
    e.tool_calls([ToolCall(index=0, id="c", name="f", arguments="{oops")])
    out = e.finished(Finished(stop_reason="length", usage=None))
    assert out.startswith(
        b'data: {"type":"tool-input-error","toolCallId":"c","toolName":"f","input":"{oops",'
        b'"errorText":"The model\'s arguments are not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"}\n\n'
    ), out
    assert b'"finishReason":"length"' in out


def test_a_failure_ends_the_open_part_then_errors_then_done() -> None:
    e = encoder()
    e.parts([(TEXT, "a")])
    assert e.failed(Failed(code="upstream_timeout", message='silent "60" s')) == (
        b'data: {"type":"text-end","id":"text-0"}\n\n'
        b'data: {"type":"error","errorText":"silent \\"60\\" s","code":"upstream_timeout"}\n\n'
        b"data: [DONE]\n\n"
    )
    assert encoder().ping() == b": ping\n\n"


def test_usage_takes_the_ai_sdk_names() -> None:
    assert usage(None) is None
    assert usage({"prompt_tokens": 1}) == {"inputTokens": 1}
