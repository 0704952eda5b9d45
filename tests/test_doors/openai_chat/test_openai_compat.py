import json
from typing import Any

import pytest
from fakes import completion_context, no_body

from base.errors import ApiError
from base.settings import load
from common.openai_events import Collector, CompletionEncoder, openai_usage
from common.openai_request import openai_error
from doors.openai_chat.openai_compat import parse_completion
from streaming.relay import Failed, Finished
from streaming.upstream import TEXT, THINKING
from surface.web import WebRequest

SETTINGS = load({"AI_MODELS": "m1,m2"}.get)


CTX = completion_context(SETTINGS)
USER = [{"role": "user", "content": "hi"}]


def test_encoder_exact_frames_with_usage() -> None:
    encoder = CompletionEncoder(id="chatcmpl-1", created=7, model="m1", include_usage=True)
    head = b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"m1","choices":'
    assert (
        encoder.start()
        == head
        + b'[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}\n\n'
    )
    assert encoder.parts([(THINKING, "hm"), (TEXT, "a"), (TEXT, "é")]) == (
        head
        + b'[{"index":0,"delta":{"reasoning_content":"hm"},"finish_reason":null}],"usage":null}\n\n'
        + head
        + b'[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"usage":null}\n\n'
        + head
        + b'[{"index":0,"delta":{"content":"\\u00e9"},"finish_reason":null}],"usage":null}\n\n'
    )
    assert encoder.finished(Finished(stop_reason="stop", usage={"total_tokens": 3})) == (
        head
        + b'[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}\n\n'
        + head
        + b'[],"usage":{"total_tokens":3}}\n\n'
        + b"data: [DONE]\n\n"
    )


def test_encoder_without_usage_and_failure_frame() -> None:
    encoder = CompletionEncoder(id="c", created=1, model="m", include_usage=False)
    assert encoder.finished(Finished(stop_reason="length", usage={"total_tokens": 3})).endswith(
        b'"finish_reason":"length"}]}\n\ndata: [DONE]\n\n'
    )
    failed = encoder.failed(Failed(code="upstream_error", message="The model stream failed."))
    assert (
        failed
        == b'data: {"error":{"message":"The model stream failed.","type":"server_error","param":null,"code":"upstream_error"}}\n\n'
    )
    assert b"[DONE]" not in failed


def test_collector_keeps_text_reasoning_and_ending() -> None:
    collector = Collector()
    assert (
        collector.parts([(TEXT, "a"), (TEXT, "b")]) == b""
        and collector.finished(Finished(stop_reason="stop", usage=None)) == b""
    )
    assert collector.message() == {"role": "assistant", "content": "ab"}
    collector.parts([(THINKING, "x"), (THINKING, "y"), (TEXT, "c")])
    assert collector.message() == {"role": "assistant", "content": "abc", "reasoning_content": "xy"}


def test_parse_supported_fields() -> None:
    request = parse_completion(
        {
            "model": "m2",
            "messages": [
                {
                    "role": "developer",
                    "content": [{"type": "text", "text": "be "}, {"type": "text", "text": "brief"}],
                    "name": "ops",
                },
                *USER,
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_completion_tokens": 9,
            "temperature": 1,
            "reasoning_effort": "high",
            "n": 1,
            "user": "u-1",
        },
        CTX,
    )
    assert request.stream and request.include_usage
    assert request.ai_inputs() == {
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        "stream": True,
        "max_tokens": 9,
        "temperature": 1.0,
        "reasoning_effort": "high",
    }


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"messages": USER, "top_p": 2}, "invalid_field", "top_p"),
        ({"messages": USER, "logprobs": True}, "unsupported_parameter", "logprobs"),
        ({"messages": USER, "functions": [{"name": "f"}]}, "unsupported_parameter", "functions"),
        ({"messages": USER, "best_of": 2}, "unsupported_parameter", "best_of"),
        ({"messages": USER, "stream": "yes"}, "invalid_field", "stream"),
        (
            {"messages": USER, "stream_options": {"include_usage": True}},
            "invalid_field",
            "stream_options",
        ),
        (
            {"messages": USER, "stream": True, "stream_options": {"other": 1}},
            "invalid_field",
            "stream_options.other",
        ),
        ({"messages": USER, "n": 2}, "unsupported_parameter", "n"),
        ({"messages": USER, "n": "1"}, "invalid_field", "n"),
        ({"messages": USER, "reasoning_effort": "extreme"}, "invalid_field", "reasoning_effort"),
        ({"messages": USER, "max_completion_tokens": 0}, "invalid_field", "max_completion_tokens"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            "invalid_field",
            "messages[0].content[0].image_url.url",
        ),
        (
            {"messages": [{"role": "tool", "content": "x"}]},
            "invalid_field",
            "messages[0].tool_call_id",
        ),
        ({"messages": [{"role": "function", "content": "x"}]}, "invalid_field", "messages[0].role"),
        ({"messages": USER, "model": "gpt-4o"}, "unknown_model", "model"),
    ],
)
def test_parse_refusals_name_the_field(body: dict[str, object], code: str, param: str) -> None:
    with pytest.raises(ApiError) as info:
        parse_completion(body, CTX)
    assert (info.value.code, info.value.param) == (code, param)
    assert info.value.message.startswith(param)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "invalid_request_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (413, "invalid_request_error"),
        (502, "server_error"),
        (503, "server_error"),
    ],
)
def test_error_shape(status: int, kind: str) -> None:
    response = openai_error(ApiError(status, "c", "m", param="p"))
    assert response.status == status
    assert isinstance(response.body, bytes)
    assert json.loads(response.body) == {
        "error": {"message": "m", "type": kind, "param": "p", "code": "c"}
    }


# Tool calls, from both upstream forms, through the relay at every split point.
from streaming.relay import OneShot, Relay, Timing, relay_whole  # noqa: E402
from streaming.upstream import ToolCall  # noqa: E402

TIMING = Timing(ping_after=100.0, give_up_after=100.0)
HEAD = b'data: {"id":"chatcmpl-abc","object":"chat.completion.chunk","created":7,"model":"m1","choices":[{"index":0,"delta":'


def chunk(delta: str, finish: str = "null") -> bytes:
    return HEAD + delta.encode() + b',"finish_reason":' + finish.encode() + b"}]}\n\n"


def frame(value: object) -> bytes:
    return b"data: " + json.dumps(value).encode() + b"\n\n"


def delta_chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    return frame(
        {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            "p": "pad",
        }
    )


USAGE = {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}
OPENAI_TOOL_STREAM = (
    delta_chunk({"role": "assistant", "content": ""})
    + delta_chunk({"content": "Checking."})
    + delta_chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ],
            "content": None,
        }
    )
    + delta_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]})
    + delta_chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty":"Pä"}'}}]})
    + delta_chunk(
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "now", "arguments": "{}"},
                }
            ]
        }
    )
    + delta_chunk({}, "tool_calls")
    + frame({"response": "", "tool_calls": [], "usage": USAGE})
    + b"data: [DONE]\n\n"
)
OPENAI_TOOL_CHUNKS = (
    chunk('{"role":"assistant","content":""}')
    + chunk('{"content":"Checking."}')
    + chunk(
        '{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}'
    )
    + chunk('{"tool_calls":[{"index":0,"function":{"arguments":"{\\"ci"}}]}')
    + chunk('{"tool_calls":[{"index":0,"function":{"arguments":"ty\\":\\"P\\u00e4\\"}"}}]}')
    + chunk(
        '{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"now","arguments":""}}]}'
    )
    + chunk('{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}')
    + chunk("{}", '"tool_calls"')
    + b"data: [DONE]\n\n"
)
# Native: Workers AI sends each call whole, arguments as an object, and no finish reason.
NATIVE_TOOL_STREAM = (
    b'data: {"response":"","tool_calls":[],"p":"x"}\n\n'
    + frame(
        {
            "response": "",
            "tool_calls": [{"name": "get_weather", "arguments": {"city": "Pä"}}],
            "p": "xy",
        }
    )
    + b'data: {"tool_calls":[],"p":"x"}\n\n'
    + frame({"response": "", "usage": USAGE})
    + b"data: [DONE]\n\n"
)
NATIVE_TOOL_CHUNKS = (
    chunk('{"role":"assistant","content":""}')
    + chunk(
        '{"tool_calls":[{"index":0,"id":"call_abc_0","type":"function","function":{"name":"get_weather","arguments":""}}]}'
    )
    + chunk('{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\":\\"P\\u00e4\\"}"}}]}')
    + chunk("{}", '"tool_calls"')
    + b"data: [DONE]\n\n"
)


def relayed(pieces: list[bytes]) -> bytes:
    relay = Relay(
        CompletionEncoder(id="chatcmpl-abc", created=7, model="m1", include_usage=False),
        TIMING,
        now=0.0,
    )
    out = relay.start()
    for piece in pieces:
        out += relay.feed(piece)
    return out + relay.end()


@pytest.mark.parametrize(
    ("upstream", "expected"),
    [(OPENAI_TOOL_STREAM, OPENAI_TOOL_CHUNKS), (NATIVE_TOOL_STREAM, NATIVE_TOOL_CHUNKS)],
    ids=["openai", "native"],
)
def test_tool_calls_stream_as_openai_does_at_every_split(upstream: bytes, expected: bytes) -> None:
    assert relayed([upstream]) == expected
    for at in range(1, len(upstream)):
        got = relayed([upstream[:at], upstream[at:]])
        assert got == expected, f"split at {at}: {upstream[:at][-40:]!r} | {upstream[at:][:40]!r}"


def collected(upstream: bytes) -> dict[str, Any]:
    collector = Collector(id="chatcmpl-abc")
    relay = Relay(collector, TIMING, now=0.0)
    relay.start()
    relay.feed(upstream)
    relay.end()
    assert isinstance(relay.ending, Finished) and relay.ending.stop_reason == "tool_calls"
    return collector.message()


def test_collected_tool_calls_make_message_tool_calls() -> None:
    assert collected(OPENAI_TOOL_STREAM) == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Pä"}'},
            },
            {"id": "call_b", "type": "function", "function": {"name": "now", "arguments": "{}"}},
        ],
    }
    assert collected(NATIVE_TOOL_STREAM) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_abc_0",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Pä"}'},
            }
        ],
    }


def test_whole_results_with_tool_calls_in_both_shapes() -> None:
    openai_whole = OneShot(
        result={
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_x",
                                "type": "function",
                                "function": {"name": "f", "arguments": '{"a":1}'},
                            },
                            {
                                "id": "call_y",
                                "type": "function",
                                "function": {"name": "g", "arguments": "{}"},
                            },
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": USAGE,
        }
    )
    native_whole = OneShot(
        result={
            "response": None,
            "tool_calls": [{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {}}],
            "usage": USAGE,
        }
    )
    for whole, ids in [
        (openai_whole, ["call_x", "call_y"]),
        (native_whole, ["call_abc_0", "call_abc_1"]),
    ]:
        collector = Collector(id="chatcmpl-abc")
        relay = Relay(collector, TIMING, now=0.0)
        relay_whole(relay, whole)
        assert collector.message()["tool_calls"] == [
            {"id": ids[0], "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}},
            {"id": ids[1], "type": "function", "function": {"name": "g", "arguments": "{}"}},
        ]
        assert isinstance(relay.ending, Finished) and relay.ending.stop_reason == "tool_calls"


def test_a_json_mode_answer_streams_as_chunks_of_the_whole() -> None:
    relay = Relay(
        CompletionEncoder(id="chatcmpl-abc", created=7, model="m1", include_usage=False),
        TIMING,
        now=0.0,
    )
    out = relay_whole(relay, OneShot(result={"response": {"city": "Pä"}, "usage": USAGE}))
    assert (
        out
        == chunk('{"role":"assistant","content":""}')
        + chunk('{"content":"{\\"city\\":\\"P\\u00e4\\"}"}')
        + chunk("{}", '"stop"')
        + b"data: [DONE]\n\n"
    )


def test_a_length_stop_stays_length_with_tool_calls() -> None:
    encoder = CompletionEncoder(id="chatcmpl-abc", created=7, model="m1", include_usage=False)
    assert (
        encoder.tool_calls([ToolCall(index=0, id=None, name="f", arguments="")]).count(b"data: ")
        == 1
    )
    cut = OPENAI_TOOL_STREAM.replace(b'"finish_reason": "tool_calls"', b'"finish_reason": "length"')
    assert relayed([cut]).endswith(chunk("{}", '"length"') + b"data: [DONE]\n\n")


def test_model_route_takes_ids_with_slashes_and_percent_encoding() -> None:
    import asyncio

    from routes import TABLE
    from surface.policy import handle
    from surface.routing import RouteTable

    assert isinstance(TABLE, RouteTable)
    env = {"AI_MODELS": "@cf/meta/llama-3.1-8b-instruct"}.get

    def get(path: str) -> tuple[int, Any]:
        request = WebRequest(
            method="GET", url="http://x" + path, path=path, headers={}, body=no_body()
        )
        response = asyncio.run(handle(request, env, None, TABLE, limiter=None))  # type: ignore[arg-type]
        assert isinstance(response.body, bytes)
        return response.status, json.loads(response.body)

    model = {
        "id": "@cf/meta/llama-3.1-8b-instruct",
        "object": "model",
        "created": 1795478400,
        "owned_by": "cloudflare",
        "capabilities": {
            "context_window": 7968,
            "vision": False,
            "tools": False,
            "reasoning": False,
            "paid_plan": False,
            "reasoning_control": {"kind": "none", "can_turn_off": False},
        },
    }
    assert get("/v1/models/@cf/meta/llama-3.1-8b-instruct") == (200, model)
    assert get("/v1/models/%40cf%2Fmeta%2Fllama-3.1-8b-instruct") == (200, model)
    assert get("/v1/models/@cf/nope") == (
        404,
        {
            "error": {
                "message": "The model '@cf/nope' does not exist; GET /v1/models lists the models.",
                "type": "invalid_request_error",
                "param": "model",
                "code": "model_not_found",
            }
        },
    )
    assert get("/v1/models/")[0] == 404 and get("/v1/models/")[1]["error"]["code"] == "not_found"


def test_usage_details_in_openais_shape() -> None:
    counts = {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}
    assert openai_usage(counts) == counts
    assert openai_usage({**counts, "cached_tokens": 4, "reasoning_tokens": 3}) == {
        **counts,
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 3},
    }
