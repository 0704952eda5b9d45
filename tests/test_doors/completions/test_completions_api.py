"""/v1/completions on the host: the request parser, the text_completion chunks' exact bytes,
and the route over a fake model through the same relay as chat."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fakes import FakeModel, completion_context, frames
from host_app import call, request, streamed

from doors.completions.completion_events import TextCompletionEncoder
from doors.completions.completions_api import parse_text_completion
from streaming.relay import Failed, Finished
from surface.errors import ApiError
from surface.settings import load
from workers_ai import fallback
from workers_ai.upstream import TEXT, THINKING

SETTINGS = load({"AI_MODELS": "m1,@cf/openai/gpt-oss-20b"}.get)
CTX = completion_context(SETTINGS)
JSON = {"content_type": "application/json"}
USAGE = {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}


def test_parse_the_supported_fields() -> None:
    request = parse_text_completion(
        {
            "model": "m1",
            "prompt": ["Once"],
            "max_tokens": 5,
            "temperature": 0.5,
            "top_p": 1,
            "stop": ["\n"],
            "echo": False,
            "suffix": None,
            "n": 1,
            "best_of": 1,
            "logprobs": None,
            "user": "u",
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        CTX,
    )
    assert request.ai_inputs() == {
        "prompt": "Once",
        "stream": True,
        "max_tokens": 5,
        "temperature": 0.5,
        "top_p": 1,
    }
    assert (request.stop, request.stream, request.include_usage) == (("\n",), True, True)


@pytest.mark.parametrize(
    ("body", "code", "param", "says"),
    [
        ({}, "invalid_field", "prompt", "is required"),
        ({"prompt": ""}, "invalid_field", "prompt", "must not be empty"),
        ({"prompt": ["a", "b"]}, "invalid_field", "prompt", "one prompt per request, got 2"),
        ({"prompt": [1, 2]}, "invalid_field", "prompt", "token arrays"),
        ({"prompt": [[1, 2]]}, "invalid_field", "prompt[0]", "token arrays"),
        ({"prompt": "a", "echo": True}, "unsupported_parameter", "echo", "only false"),
        ({"prompt": "a", "suffix": "}"}, "unsupported_parameter", "suffix", "fill-in-the-middle"),
        ({"prompt": "a", "logprobs": 2}, "unsupported_parameter", "logprobs", "only null"),
        ({"prompt": "a", "best_of": 3}, "unsupported_parameter", "best_of", "only 1"),
        ({"prompt": "a", "n": 2}, "unsupported_parameter", "n", "1 only"),
        ({"prompt": "a", "temperature": 9}, "invalid_field", "temperature", "between 0 and 5"),
        ({"prompt": "a", "messages": []}, "unsupported_parameter", "messages", "takes model"),
        (
            {"prompt": "a", "stream_options": {}},
            "invalid_field",
            "stream_options",
            "stream is true",
        ),
        ({"prompt": "a", "model": "nope"}, "unknown_model", "model", "not available"),
    ],
)
def test_every_refusal_names_its_field(
    body: dict[str, Any], code: str, param: str, says: str
) -> None:
    with pytest.raises(ApiError) as caught:
        parse_text_completion(body, CTX)
    error = caught.value
    assert (error.status, error.code, error.param) == (400, code, param), error.message
    assert says in error.message, error.message


def test_a_prompt_is_one_user_message_for_an_openai_schema_model() -> None:
    sent = {"prompt": "hi", "stream": True, "max_tokens": 3}
    assert fallback.inputs_for("m1", sent, "m1") == sent
    assert fallback.inputs_for("@cf/openai/gpt-oss-20b", sent, "m1") == {
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "max_tokens": 3,
    }


HEAD = b'data: {"id":"cmpl-1","object":"text_completion","created":7,"model":"m1","choices":'


def test_chunks_exact_bytes_with_usage() -> None:
    encoder = TextCompletionEncoder(id="cmpl-1", created=7, model="m1", include_usage=True)
    assert encoder.start() == b""
    assert encoder.parts([(THINKING, "hm"), (TEXT, "a"), (TEXT, "é")]) == (
        HEAD
        + b'[{"text":"a","index":0,"logprobs":null,"finish_reason":null}],"usage":null}\n\n'
        + HEAD
        + b'[{"text":"\\u00e9","index":0,"logprobs":null,"finish_reason":null}],"usage":null}\n\n'
    )
    assert encoder.finished(Finished(stop_reason="tool_calls", usage={"total_tokens": 3})) == (
        HEAD
        + b'[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":null}\n\n'
        + HEAD
        + b'[],"usage":{"total_tokens":3}}\n\n'
        + b"data: [DONE]\n\n"
    )


def test_chunks_without_usage_and_the_failure_frame() -> None:
    encoder = TextCompletionEncoder(id="cmpl-1", created=7, model="m1", include_usage=False)
    assert encoder.finished(Finished(stop_reason="length", usage=USAGE)) == (
        HEAD + b'[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    assert encoder.failed(Failed(code="upstream_error", message="gone")) == (
        b'data: {"error":{"message":"gone","type":"server_error","param":null,'
        b'"code":"upstream_error"}}\n\n'
    )


def post(body: dict[str, Any], model: FakeModel) -> Any:
    raw = json.dumps(body).encode()
    return call(request("POST", "/v1/completions", raw, **JSON), {"AI_MODELS": "m1"}, model)


def test_a_whole_completion_over_the_relay() -> None:
    model = FakeModel(frames("Hel", "lo, ", "world", usage=USAGE))
    response = post({"prompt": "hi", "stop": ", "}, model)
    assert response.status == 200
    answer = json.loads(response.body)
    assert answer["id"].startswith("cmpl-") and len(answer["id"]) == 29
    assert (answer["object"], answer["model"]) == ("text_completion", "m1")
    assert answer["choices"] == [
        {"text": "Hello", "index": 0, "logprobs": None, "finish_reason": "stop"}
    ]
    assert model.calls == [("m1", {"prompt": "hi", "stream": True, "max_tokens": 1024})]
    assert model.sources[0].cancelled  # the stop string stopped the model


def test_a_streamed_completion_over_the_relay() -> None:
    model = FakeModel(frames("Hel", "lo", usage=USAGE))
    body = {"prompt": "hi", "stream": True, "stream_options": {"include_usage": True}}
    wire = streamed(post(body, model))
    events = [line[6:] for line in wire.decode().split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert "".join(c["choices"][0]["text"] for c in chunks if c["choices"]) == "Hello"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == USAGE
    assert {c["object"] for c in chunks} == {"text_completion"}
