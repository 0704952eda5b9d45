"""/v1/completions over HTTP on workerd, through its own Ai class and the built-in model: the
openai SDK streamed and not, stop strings, a reasoning model, the 400s, and a client that
leaves mid-answer closing the model's connection as on every door (issue 34)."""

from __future__ import annotations

import time
from typing import Any

import httpx
import openai
import pytest
from conftest import THINKING_OFF, Runtime, assert_stopped, expected_tokens, expected_usage

pytestmark = pytest.mark.runtime

GEMMA = "@cf/google/gemma-4-26b-a4b-it"
GPT_OSS = "@cf/openai/gpt-oss-20b"
PROMPT = 'Hi "there" \\ édge 🌍'


def answer_to(prompt: str) -> str:
    return "".join(expected_tokens([{"role": "user", "content": prompt}]))


def test_a_whole_completion_from_the_openai_sdk(client: openai.OpenAI, runtime: Runtime) -> None:
    completion = client.completions.create(model=GEMMA, prompt=PROMPT, max_tokens=256)
    assert runtime.last_call()["inputs"] == {
        "prompt": PROMPT,
        "stream": True,
        "max_tokens": 256,
        **THINKING_OFF[GEMMA],
    }
    assert completion.object == "text_completion" and completion.id.startswith("cmpl-")
    assert completion.model == GEMMA
    [choice] = completion.choices
    assert (choice.text, choice.index, choice.logprobs, choice.finish_reason) == (
        answer_to(PROMPT),
        0,
        None,
        "stop",
    )
    assert completion.usage is not None
    assert completion.usage.model_dump(exclude_none=True) == expected_usage(
        [{"role": "user", "content": PROMPT}]
    )


def test_a_streamed_completion_with_usage(client: openai.OpenAI) -> None:
    chunks = list(
        client.completions.create(
            model=GEMMA,
            prompt=[PROMPT],
            max_tokens=256,
            temperature=0.2,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert {c.object for c in chunks} == {"text_completion"} and len({c.id for c in chunks}) == 1
    assert "".join(c.choices[0].text for c in chunks if c.choices) == answer_to(PROMPT)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == len(
        expected_tokens([{"role": "user", "content": PROMPT}])
    )


def test_the_wire_ends_with_done_and_stop_strings_cut(runtime: Runtime) -> None:
    body = {"model": GEMMA, "prompt": "[[pace:0]] x", "stream": True, "stop": ["offline"]}
    with runtime.client() as http:
        response = http.post("/v1/completions", json=body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.text.endswith("data: [DONE]\n\n")
    whole = answer_to("x")
    assert '"finish_reason":"stop"' in response.text
    texts = [line for line in response.text.split("\n\n") if line.startswith('data: {"id":"cmpl-')]
    assert whole[: whole.index("offline")].endswith("built-in ")
    assert all("offline" not in t for t in texts)


def test_a_reasoning_model_answers_text_only(client: openai.OpenAI, runtime: Runtime) -> None:
    completion = client.completions.create(model=GPT_OSS, prompt="[[think:3]] Why?")
    assert runtime.last_call()["inputs"]["messages"] == [
        {"role": "user", "content": "[[think:3]] Why?"}
    ]
    assert completion.choices[0].text == answer_to("[[think:3]] Why?")


def test_a_list_of_prompts_one_choice_each(client: openai.OpenAI, runtime: Runtime) -> None:
    prompts = ["[[pace:60]] First?", "Second", "[[pace:30]] Third 🌍"]
    before = len(runtime.calls())
    completion = client.completions.create(model=GEMMA, prompt=prompts, max_tokens=64)
    assert [(c.index, c.text, c.finish_reason) for c in completion.choices] == [
        (i, answer_to(p), "stop") for i, p in enumerate(prompts)
    ]
    usages = [expected_usage([{"role": "user", "content": p}]) for p in prompts]
    assert completion.usage is not None
    assert completion.usage.model_dump(exclude_none=True) == {
        k: sum(u[k] for u in usages) for k in usages[0]
    }
    calls = runtime.calls()[before:]
    assert sorted(c["inputs"]["prompt"] for c in calls) == sorted(prompts)
    # Made at the same time: every call started before any of them finished.
    assert max(c["startedAt"] for c in calls) < min(c["finishedAt"] for c in calls), calls


@pytest.mark.parametrize(
    ("failing", "status", "code"),
    [
        ("[[fault:midstream]] short", 502, "upstream_error"),  # mid-answer
        ("[[error:5006]] bad", 400, "upstream_rejected_input"),  # refused before any token
    ],
)
def test_one_failed_prompt_fails_the_request_and_stops_the_others(
    client: openai.OpenAI, runtime: Runtime, failing: str, status: int, code: str
) -> None:
    long = f"[[pace:200]] long, beside a {status}"
    before = runtime.stats()
    with pytest.raises(openai.APIStatusError) as caught:
        client.completions.create(model=GEMMA, prompt=[long, failing])
    assert (caught.value.status_code, caught.value.code) == (status, code)
    deadline = time.monotonic() + 10
    while True:  # the close may reach the model's process a moment after the answer
        [call] = [c for c in runtime.calls()[-2:] if c["inputs"]["prompt"] == long]
        if call["closedAt"] is not None or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert_stopped(call)
    while (after := runtime.stats())["live"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert after["live"] == 0, after  # every pipe of the request released its proxies
    assert after["created"] - before["created"] == after["destroyed"] - before["destroyed"]


def test_what_cannot_be_honoured_is_a_400(client: openai.OpenAI) -> None:
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"prompt": "a", "suffix": "}"}, "suffix", "unsupported_parameter"),
        ({"prompt": "a", "echo": True}, "echo", "unsupported_parameter"),
        ({"prompt": ["a", "b", "c", "d", "e"]}, "prompt", "invalid_field"),
        ({"prompt": ["a", "b"], "stream": True}, "prompt", "invalid_field"),
        ({"prompt": [1, 2, 3]}, "prompt", "invalid_field"),
        ({"prompt": [[1, 2], [3]]}, "prompt[0]", "invalid_field"),
        ({"prompt": ["a", ""]}, "prompt[1]", "invalid_field"),
        ({"prompt": []}, "prompt", "invalid_field"),
        ({"prompt": "a", "model": "@cf/baai/bge-m3"}, "model", "wrong_model_type"),
    ]
    for body, param, code in cases:
        args: dict[str, Any] = {"model": GEMMA, **body}
        with pytest.raises(openai.BadRequestError) as caught:
            client.completions.create(**args)
        assert (caught.value.param, caught.value.code) == (param, code), body


def test_a_client_that_leaves_closes_the_models_connection(runtime: Runtime) -> None:
    body = {"model": GEMMA, "prompt": "[[pace:200]] long", "stream": True}
    with (
        httpx.Client(base_url=runtime.url, timeout=30) as http,
        http.stream("POST", "/v1/completions", json=body) as response,
    ):
        assert response.status_code == 200
        first = next(response.iter_raw())
        assert b"text_completion" in first
    call = runtime.wait_for(lambda c: c["clientClosedAt"] is not None)
    assert_stopped(call)
