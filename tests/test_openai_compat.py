import json
from typing import Any

import pytest

from app import Context
from errors import ApiError
from openai_compat import CompletionEncoder, Collector, openai_error, parse_completion
from relay import Failed, Finished
from upstream import TEXT, THINKING
from settings import load
from web import WebRequest

SETTINGS = load({"AI_MODELS": "m1,m2"}.get)


async def _no_body() -> Any:
    yield b""


CTX = Context(
    request=WebRequest(method="POST", url="http://x/v1/chat/completions", path="/v1/chat/completions", headers={}, body=_no_body()),
    settings=SETTINGS,
    model=None,  # type: ignore[arg-type]
)
USER = [{"role": "user", "content": "hi"}]


def test_encoder_exact_frames_with_usage() -> None:
    encoder = CompletionEncoder(id="chatcmpl-1", created=7, model="m1", include_usage=True)
    head = b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"m1","choices":'
    assert encoder.start() == head + b'[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}\n\n'
    assert encoder.parts([(THINKING, "hm"), (TEXT, "a"), (TEXT, "é")]) == (
        head + b'[{"index":0,"delta":{"reasoning_content":"hm"},"finish_reason":null}],"usage":null}\n\n'
        + head + b'[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"usage":null}\n\n'
        + head + b'[{"index":0,"delta":{"content":"\\u00e9"},"finish_reason":null}],"usage":null}\n\n'
    )
    assert encoder.finished(Finished(stop_reason="stop", usage={"total_tokens": 3})) == (
        head + b'[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}\n\n'
        + head + b'[],"usage":{"total_tokens":3}}\n\n'
        + b"data: [DONE]\n\n"
    )


def test_encoder_without_usage_and_failure_frame() -> None:
    encoder = CompletionEncoder(id="c", created=1, model="m", include_usage=False)
    assert encoder.finished(Finished(stop_reason="length", usage={"total_tokens": 3})).endswith(
        b'"finish_reason":"length"}]}\n\ndata: [DONE]\n\n'
    )
    failed = encoder.failed(Failed(code="upstream_error", message="The model stream failed."))
    assert failed == b'data: {"error":{"message":"The model stream failed.","type":"server_error","param":null,"code":"upstream_error"}}\n\n'
    assert b"[DONE]" not in failed


def test_collector_keeps_text_reasoning_and_ending() -> None:
    collector = Collector()
    assert collector.parts([(TEXT, "a"), (TEXT, "b")]) == b"" and collector.finished(Finished(stop_reason="stop", usage=None)) == b""
    assert collector.message() == {"role": "assistant", "content": "ab"}
    assert collector.finish is not None and collector.failure is None
    collector.parts([(THINKING, "x"), (THINKING, "y"), (TEXT, "c")])
    assert collector.message() == {"role": "assistant", "content": "abc", "reasoning_content": "xy"}


def test_parse_supported_fields() -> None:
    request = parse_completion(
        {
            "model": "m2",
            "messages": [{"role": "developer", "content": [{"type": "text", "text": "be "}, {"type": "text", "text": "brief"}], "name": "ops"}, *USER],
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
        ({"messages": USER, "stream_options": {"include_usage": True}}, "invalid_field", "stream_options"),
        ({"messages": USER, "stream": True, "stream_options": {"other": 1}}, "invalid_field", "stream_options.other"),
        ({"messages": USER, "n": 2}, "unsupported_parameter", "n"),
        ({"messages": USER, "n": "1"}, "invalid_field", "n"),
        ({"messages": USER, "reasoning_effort": "minimal"}, "invalid_field", "reasoning_effort"),
        ({"messages": USER, "max_completion_tokens": 0}, "invalid_field", "max_completion_tokens"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}, "invalid_field", "messages[0].content[0]"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "invalid_field", "messages[0].tool_call_id"),
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
    ("status", "kind"), [(400, "invalid_request_error"), (403, "permission_error"), (404, "not_found_error"), (413, "invalid_request_error"), (502, "server_error"), (503, "server_error")]
)
def test_error_shape(status: int, kind: str) -> None:
    response = openai_error(ApiError(status, "c", "m", param="p"))
    assert response.status == status
    assert isinstance(response.body, bytes)
    assert json.loads(response.body) == {"error": {"message": "m", "type": kind, "param": "p", "code": "c"}}
