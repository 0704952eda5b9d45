from __future__ import annotations

from typing import Any

import pytest

from base import catalog, thinking
from base import settings as config
from workers_ai import fallback

GEMMA = "@cf/google/gemma-4-26b-a4b-it"
GLM_FLASH = "@cf/zai-org/glm-4.7-flash"
OSS = "@cf/openai/gpt-oss-20b"
KIMI = "@cf/moonshotai/kimi-k2.6"
LLAMA = "@cf/meta/llama-3.1-8b-instruct-fast"
OFF = {"chat_template_kwargs": {"enable_thinking": False}}
ON = {"chat_template_kwargs": {"enable_thinking": True}}


@pytest.fixture(autouse=True)
def _rules_only() -> None:
    catalog.reset()


def sent(model: str, effort: str | None, mode: str = "off") -> dict[str, Any]:
    inputs: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}]}
    if effort is not None:
        inputs["reasoning_effort"] = effort
    out = fallback.inputs_for(model, inputs, model, thinking_mode=mode)
    assert out is not None
    return {k: v for k, v in out.items() if k != "messages"}


@pytest.mark.parametrize(
    ("model", "effort", "mode", "expected"),
    [
        (GEMMA, "none", "off", OFF),
        (GEMMA, "low", "off", ON),
        (GEMMA, None, "off", OFF),
        (GEMMA, None, "auto", {}),
        (GLM_FLASH, "none", "auto", OFF),
        (GLM_FLASH, "high", "off", ON),
        (GLM_FLASH, None, "off", OFF),
        (GLM_FLASH, None, "auto", {}),
        # gpt-oss cannot be turned off: "none" and nothing said (off) send its lowest level.
        (OSS, "none", "off", {"reasoning_effort": "low"}),
        (OSS, "minimal", "off", {"reasoning_effort": "low"}),
        (OSS, "medium", "off", {"reasoning_effort": "medium"}),
        (OSS, "xhigh", "off", {"reasoning_effort": "high"}),
        (OSS, None, "off", {"reasoning_effort": "low"}),
        (OSS, None, "auto", {}),
        # kimi-k2.6: high | none; the other levels alias to high.
        (KIMI, "none", "off", {"reasoning_effort": "none"}),
        (KIMI, "low", "off", {"reasoning_effort": "high"}),
        (KIMI, "max", "off", {"reasoning_effort": "high"}),
        (KIMI, None, "off", {"reasoning_effort": "none"}),
        (KIMI, None, "auto", {}),
        ("@cf/zai-org/glm-5.2", "medium", "off", {"reasoning_effort": "high"}),
        ("@cf/zai-org/glm-5.2", "xhigh", "off", {"reasoning_effort": "max"}),
        ("@cf/zai-org/glm-5.3-flash", "none", "off", {"reasoning_effort": "low"}),
        ("@cf/deepseek-ai/deepseek-v4", "minimal", "off", {"reasoning_effort": "low"}),
        ("@cf/qwen/qwen3.8-27b", "high", "off", {"reasoning_effort": "xhigh"}),
        ("@cf/qwen/qwen3-30b-a3b-fp8", "none", "off", OFF),
        ("@cf/deepseek-ai/deepseek-r1-distill-qwen-32b", "high", "off", {}),
        # A model that does not reason is sent no control at all.
        (LLAMA, "high", "off", {}),
        (LLAMA, None, "off", {}),
    ],
)
def test_each_family_gets_its_own_control(
    model: str, effort: str | None, mode: str, expected: dict[str, Any]
) -> None:
    assert sent(model, effort, mode) == expected, (model, effort, mode)


def test_the_live_catalog_wins_where_it_says_the_template_switches() -> None:
    entry = {
        "name": "@cf/new/hybrid",
        "properties": [
            {"property_id": "reasoning", "value": "true"},
            {"property_id": "enable_thinking", "value": "true"},
        ],
    }
    assert catalog.loaded([entry], now=1.0, every=3600) == 1
    assert sent("@cf/new/hybrid", "none") == OFF
    # A reasoning model the table does not know: a level goes as it is, "none" sends nothing.
    other = {"name": "@cf/new/thinker", "properties": [{"property_id": "reasoning", "value": "1"}]}
    catalog.loaded([entry, other], now=2.0, every=3600)
    assert sent("@cf/new/thinker", "medium") == {"reasoning_effort": "medium"}
    assert sent("@cf/new/thinker", "none") == {}


def test_other_template_kwargs_are_kept() -> None:
    inputs = {"chat_template_kwargs": {"x": 1}, "reasoning_effort": "none"}
    control = catalog.thinking_control(GEMMA)
    assert thinking.apply(control, inputs, "auto") == {
        "chat_template_kwargs": {"x": 1, "enable_thinking": False}
    }
    assert inputs == {"chat_template_kwargs": {"x": 1}, "reasoning_effort": "none"}


def test_models_say_each_control() -> None:
    assert catalog.capabilities(KIMI)["reasoning_control"] == {
        "kind": "effort",
        "can_turn_off": True,
        "field": "reasoning_effort",
        "levels": ["none", "high"],
        "default": "high",
        "note": "low, medium and max are sent as high",
    }
    assert catalog.capabilities(GLM_FLASH)["reasoning_control"] == {
        "kind": "switch",
        "can_turn_off": True,
        "field": "chat_template_kwargs.enable_thinking",
        "default": "on",
    }


@pytest.mark.parametrize(
    ("raw", "expected"), [(None, "off"), ("", "off"), ("auto", "auto"), (" OFF ", "off")]
)
def test_ai_thinking_setting(raw: str | None, expected: str) -> None:
    env = {"AI_THINKING": raw} if raw is not None else {}
    assert config.load(env.get).thinking == expected


def test_ai_thinking_refuses_other_values() -> None:
    with pytest.raises(config.SettingsError) as caught:
        config.load({"AI_THINKING": "sometimes"}.get)
    assert str(caught.value) == "AI_THINKING='sometimes' must be one of off, auto"
