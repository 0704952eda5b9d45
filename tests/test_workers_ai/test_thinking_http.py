"""Thinking only when asked, on workerd through its own Ai class: the inputs the built-in model
receives (its call log) carry each family's control for "none", a level, and nothing said."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Runtime, start_runtime

pytestmark = pytest.mark.runtime

GEMMA = "@cf/google/gemma-4-26b-a4b-it"
GLM_FLASH = "@cf/zai-org/glm-4.7-flash"
OSS = "@cf/openai/gpt-oss-20b"
KIMI = "@cf/moonshotai/kimi-k2.6"
MODELS = (GEMMA, GLM_FLASH, OSS, KIMI)
OFF = {"enable_thinking": False}
ON = {"enable_thinking": True}


@pytest.fixture(scope="module")
def rt() -> Iterator[Runtime]:
    # No fallback: kimi answers 5035 here (the built-in model's Free plan), after its inputs
    # are in the call log, which is what these tests read.
    runtime = start_runtime(vars={"AI_MODELS": ",".join(MODELS), "AI_FALLBACK_MODELS": ""})
    try:
        yield runtime
    finally:
        runtime.stop()


def control_sent(rt: Runtime, path: str, body: dict[str, Any], model: str) -> dict[str, Any]:
    with rt.client() as client:
        response = client.post(path, json=body)
    expected = 502 if model == KIMI else 200
    assert response.status_code in (expected, 403), response.text
    call = rt.last_call()
    assert call["model"] == model, call["model"]
    inputs = call["inputs"]
    return {
        key: inputs[key] for key in ("reasoning_effort", "chat_template_kwargs") if key in inputs
    }


def chat(rt: Runtime, model: str, effort: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": "[[pace:0]] hi"}],
        "max_tokens": 4,
    }
    if effort is not None:
        body["reasoning_effort"] = effort
    return control_sent(rt, "/api/v1/chat", body, model)


@pytest.mark.parametrize(
    ("model", "effort", "expected"),
    [
        (GEMMA, "none", {"chat_template_kwargs": OFF}),
        (GEMMA, "high", {"chat_template_kwargs": ON}),
        (GEMMA, None, {"chat_template_kwargs": OFF}),
        (GLM_FLASH, "none", {"chat_template_kwargs": OFF}),
        (GLM_FLASH, "low", {"chat_template_kwargs": ON}),
        (GLM_FLASH, None, {"chat_template_kwargs": OFF}),
        (OSS, "none", {"reasoning_effort": "low"}),
        (OSS, "high", {"reasoning_effort": "high"}),
        (OSS, None, {"reasoning_effort": "low"}),
        (KIMI, "none", {"reasoning_effort": "none"}),
        (KIMI, "medium", {"reasoning_effort": "high"}),
        (KIMI, None, {"reasoning_effort": "none"}),
    ],
)
def test_the_model_receives_its_own_control(
    rt: Runtime, model: str, effort: str | None, expected: dict[str, Any]
) -> None:
    assert chat(rt, model, effort) == expected, (model, effort)


def test_every_door_maps_the_same_way(rt: Runtime) -> None:
    said = [{"role": "user", "content": "[[pace:0]] hi"}]
    openai = {"model": GEMMA, "messages": said, "max_tokens": 4, "reasoning_effort": "none"}
    assert control_sent(rt, "/v1/chat/completions", openai, GEMMA) == {"chat_template_kwargs": OFF}
    responses = {"model": GLM_FLASH, "input": "[[pace:0]] hi", "reasoning": {"effort": "low"}}
    assert control_sent(rt, "/v1/responses", responses, GLM_FLASH) == {"chat_template_kwargs": ON}


def test_ai_thinking_auto_sends_nothing_for_a_request_that_says_nothing(rt: Runtime) -> None:
    rt.set_vars(AI_THINKING="auto")
    try:
        for model in (GEMMA, OSS):
            assert chat(rt, model, None) == {}, model
        assert chat(rt, GEMMA, "none") == {"chat_template_kwargs": OFF}
    finally:
        rt.set_vars(AI_THINKING=None)


def test_models_say_each_control(rt: Runtime) -> None:
    with rt.client() as client:
        ours = client.get("/api/v1/models").json()["capabilities"]
        theirs = {m["id"]: m["capabilities"] for m in client.get("/v1/models").json()["data"]}
    for model in MODELS:
        assert ours[model]["reasoning_control"] == theirs[model]["reasoning_control"], model
    assert ours[GEMMA]["reasoning_control"]["field"] == "chat_template_kwargs.enable_thinking"
    assert ours[OSS]["reasoning_control"]["can_turn_off"] is False
    assert ours[KIMI]["reasoning_control"]["levels"] == ["none", "high"]
