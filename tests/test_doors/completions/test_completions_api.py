"""/v1/completions on the host: the request parser, the text_completion chunks' exact bytes,
and the route over a fake model through the same relay as chat."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fakes import FakeModel, completion_context, frames
from host_app import call, request, streamed

from base.errors import ApiError
from base.settings import load
from common.openai_events import Collector
from doors.completions.completion_events import TextCompletionEncoder, text_completion
from doors.completions.completions_api import parse_text_completion
from streaming.relay import Failed, Finished
from streaming.upstream import TEXT, THINKING
from workers_ai import fallback
from workers_ai.service import UpstreamFailure

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
    assert request.prompts == ("Once",)
    assert request.ai_inputs("Once") == {
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
        ({"prompt": None}, "invalid_field", "prompt", "is required"),
        ({"prompt": ""}, "invalid_field", "prompt", "must not be empty"),
        ({"prompt": 7}, "invalid_field", "prompt", "must be a string"),
        ({"prompt": {"text": "a"}}, "invalid_field", "prompt", "must be a string"),
        ({"prompt": []}, "invalid_field", "prompt", "must not be an empty list"),
        ({"prompt": ["a", ""]}, "invalid_field", "prompt[1]", "must not be empty"),
        ({"prompt": ["a", None]}, "invalid_field", "prompt[1]", "must be a string"),
        ({"prompt": ["a", True]}, "invalid_field", "prompt[1]", "must be a string"),
        ({"prompt": ["a"] * 5}, "invalid_field", "prompt", "5 prompts, more than 4"),
        (
            {"prompt": ["a", "b"], "stream": True},
            "invalid_field",
            "prompt",
            "a streamed completion takes one prompt, got 2",
        ),
        ({"prompt": [1, 2]}, "invalid_field", "prompt", "token arrays"),
        ({"prompt": [[1, 2]]}, "invalid_field", "prompt[0]", "token arrays"),
        ({"prompt": ["a", [1, 2]]}, "invalid_field", "prompt[1]", "token arrays"),
        ({"prompt": [True, False]}, "invalid_field", "prompt[0]", "must be a string"),
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
        "reasoning_effort": "low",  # AI_THINKING off: gpt-oss's lowest (it cannot be off)
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


def test_a_list_of_prompts_parses_in_order() -> None:
    request = parse_text_completion({"model": "m1", "prompt": ["a", "b", "c", "d"]}, CTX)
    assert request.prompts == ("a", "b", "c", "d")
    assert request.stream is False
    # One prompt in a list streams as a string does.
    assert parse_text_completion({"prompt": ["a"], "stream": True}, CTX).prompts == ("a",)


def test_the_whole_object_of_several_prompts_exact() -> None:
    first, second = Collector(id="cmpl-1"), Collector(id="cmpl-1")
    first.parts([(TEXT, "A"), (THINKING, "hm"), (TEXT, "b")])
    second.parts([(TEXT, "c")])
    usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8, "cached_tokens": 1}
    body = text_completion(
        id="cmpl-1",
        created=7,
        model="m1",
        choices=[
            (first, Finished(stop_reason="tool_calls", usage=None)),
            (second, Finished(stop_reason="length", usage=None)),
        ],
        usage=usage,
    )
    assert body == {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 7,
        "model": "m1",
        "choices": [
            {"text": "Ab", "index": 0, "logprobs": None, "finish_reason": "stop"},
            {"text": "c", "index": 1, "logprobs": None, "finish_reason": "length"},
        ],
        "usage": {
            "prompt_tokens": 5,
            "completion_tokens": 3,
            "total_tokens": 8,
            "prompt_tokens_details": {"cached_tokens": 1},
        },
    }
    assert "usage" not in text_completion(id="x", created=1, model="m", choices=[], usage=None)


def test_several_prompts_one_choice_each_in_order_and_usage_summed() -> None:
    usage = {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}
    # The first prompt answers last: the choices still come in the prompts' order.
    slow = [(0.05, step) for _, step in frames("slow", usage=usage)]
    answers = {"a": slow, "b": frames("B", usage=usage), "c": frames("C", usage=usage)}
    model = FakeModel(make=[], prompts=dict(answers))
    response = post({"prompt": ["a", "b", "c"], "max_tokens": 9}, model)
    assert response.status == 200, response.body
    answer = json.loads(response.body)
    assert [(c["index"], c["text"], c["finish_reason"]) for c in answer["choices"]] == [
        (0, "slow", "stop"),
        (1, "B", "stop"),
        (2, "C", "stop"),
    ]
    assert answer["usage"] == {"prompt_tokens": 6, "completion_tokens": 3, "total_tokens": 9}
    assert sorted(str(inputs["prompt"]) for _, inputs in model.calls) == ["a", "b", "c"]
    assert all(inputs["max_tokens"] == 9 for _, inputs in model.calls)
    # Each prompt has its own session-affinity key (its own conversation).
    assert len({o.affinity for o in model.options if o is not None}) == 3


def test_a_failed_prompt_fails_the_request_and_stops_the_others() -> None:
    broken: list[tuple[float, object]] = [
        (0.0, b'data: {"response":"x"}\n\n'),
        (0.05, RuntimeError("reset")),
    ]
    endless: list[tuple[float, object]] = [(0.0, b'data: {"response":"y"}\n\n')]
    endless += [(0.02, b'data: {"response":"z"}\n\n') for _ in range(500)]
    model = FakeModel(make=[], prompts={"a": endless, "b": broken})
    response = post({"prompt": ["a", "b"]}, model)
    assert response.status == 502, response.body
    error = json.loads(response.body)["error"]
    assert error["code"] == "upstream_error", error
    endless_source = next(
        s for s, (_, i) in zip(model.sources, model.calls, strict=True) if i["prompt"] == "a"
    )
    assert endless_source.cancelled, "the other prompt's model stream was not stopped"
    assert endless_source.reads < 100, f"read {endless_source.reads} chunks after the failure"


def test_a_prompt_that_cannot_open_fails_before_the_others_are_read() -> None:
    model = FakeModel(
        make=[], prompts={"a": frames("A", usage=USAGE), "b": UpstreamFailure("5006: bad input")}
    )
    response = post({"prompt": ["a", "b"]}, model)
    assert response.status == 400, response.body
    assert all(s.cancelled for s in model.sources), "an opened stream was left unread"
