"""service.py's answers for a door, on the host over fake models: several calls answered whole
at the same time, in order, and stopped together when one fails (issue 34)."""

from __future__ import annotations

import asyncio

import pytest
from fakes import STALL, FakeModel, frames

from base.errors import ApiError
from base.settings import load
from common.openai_events import Collector
from workers_ai.service import (
    Answered,
    Asked,
    Call,
    answers_whole,
    named_by_answer,
    summed_usage,
)

GEMMA = "@cf/google/gemma-4-26b-a4b-it"  # a context window the catalog knows
# A short ping interval: a silent stream is looked at (ticked) every 0.05 s.
SETTINGS = load({"AI_MODELS": GEMMA, "STREAM_PING_SECONDS": "0.2"}.get)


def by_prompt(answers: dict[str, list[tuple[float, object]]]) -> FakeModel:
    return FakeModel(make=[], prompts=dict(answers))


def asked(*prompts: str, max_tokens: int = 10) -> Asked:
    calls = tuple(Call(inputs={"prompt": p, "max_tokens": max_tokens}, session=p) for p in prompts)
    return Asked(model=GEMMA, calls=calls, key_id=None, max_tokens=max_tokens)


def run(model: FakeModel, what: Asked) -> tuple[list[Answered], list[Collector]]:
    collectors = [Collector() for _ in what.calls]
    made = [named_by_answer(c) for c in collectors]
    return asyncio.run(answers_whole(model, SETTINGS, what, made)), collectors


def test_a_silent_call_is_stopped_by_its_tick_when_another_fails() -> None:
    model = by_prompt({"quiet": [(0.0, STALL)], "bad": [(0.01, RuntimeError("reset"))]})
    with pytest.raises(ApiError) as caught:
        run(model, asked("quiet", "bad"))
    assert (caught.value.status, caught.value.code) == (502, "upstream_error")
    sources = {i["prompt"]: s for (_, i), s in zip(model.calls, model.sources, strict=True)}
    quiet, bad = sources["quiet"], sources["bad"]
    assert quiet.cancelled, "the silent call was left open"
    assert not bad.cancelled  # it ended by itself


def test_what_the_client_must_fix_is_raised_before_any_call() -> None:
    model = by_prompt({"a": frames("A")})
    with pytest.raises(ApiError) as caught:
        run(model, asked("a", "x" * 1_200_000))
    assert caught.value.code == "context_length_exceeded"
    assert model.calls == [], "a call was made for a request that could not be answered"


def test_answers_in_the_calls_order_with_their_usage_summed() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3, "cached_tokens": 1}
    late = [(0.03, step) for _, step in frames("late", usage=usage)]
    model = by_prompt({"a": late, "b": frames("b", usage=usage)})
    answers, collectors = run(model, asked("a", "b"))
    assert ["".join(c.text) for c in collectors] == ["late", "b"]
    assert [a.model for a in answers] == [GEMMA, GEMMA]
    assert summed_usage(answers) == {
        "prompt_tokens": 2,
        "completion_tokens": 4,
        "total_tokens": 6,
        "cached_tokens": 2,
    }
    model = by_prompt({"a": frames("A", usage=usage), "b": frames("B")})
    assert summed_usage(run(model, asked("a", "b"))[0]) is None  # one call reported none
