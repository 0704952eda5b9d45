from __future__ import annotations

from typing import Any

import pytest

from base.errors import ApiError
from common.answer_details import MAX_DETAILS_BYTES, Timing, details_of, with_details

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello"},
]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_times_are_the_whole_answer_its_writing_and_its_thinking() -> None:
    clock = Clock()
    timing = Timing(clock)
    clock.now += 0.25  # the model opens
    timing.part(thinking=True)
    clock.now += 0.5
    timing.part(thinking=True)
    clock.now += 0.1
    timing.part(thinking=False)
    clock.now += 1.0
    usage = {"completion_tokens": 9}
    assert details_of(timing, model="m", stop_reason="stop", usage=usage) == {
        "model": "m",
        "stop_reason": "stop",
        "usage": usage,
        "at": 101850,
        "ms": 1850,
        "writing_ms": 1600,
        "reasoning_ms": 500,
    }
    failed = details_of(Timing(clock), model="m", stop_reason=None, error=("x", "y"))
    assert failed == {
        "model": "m",
        "error": {"code": "x", "message": "y"},
        "at": 101850,
        "ms": 0,
        "writing_ms": 0,
    }


def test_a_forks_details_go_on_its_assistant_messages_only() -> None:
    details = {"model": "m", "stop_reason": "length", "ms": 5, "while_thinking": True}
    assert with_details(HISTORY, [None, details]) == [
        HISTORY[0],
        {**HISTORY[1], "details": details},
    ]
    assert with_details(HISTORY, None) == HISTORY
    assert with_details(HISTORY, [None]) == HISTORY


@pytest.mark.parametrize(
    ("details", "param", "said"),
    [
        ("x", "details", "must be an array"),
        ([None, None, None], "details", "no longer than messages"),
        ([{"model": "m"}], "details[0]", "is not an assistant message"),
        ([None, {"ms": -1}], "details[1].ms", "non-negative integer"),
        ([None, {"ms": True}], "details[1].ms", "non-negative integer"),
        ([None, {"model": 5}], "details[1].model", "must be a string"),
        ([None, {"usage": {"a": "b"}}], "details[1].usage", "token counts"),
        ([None, {"error": {"code": 1}}], "details[1].error", "{code, message}"),
        ([None, {"colour": "red"}], "details[1].colour", "unknown field"),
        (
            [None, {"usage": {f"k{i}": i for i in range(300)}}],
            "details[1]",
            f"at most {MAX_DETAILS_BYTES}",
        ),
    ],
)
def test_bad_details_are_refused_naming_the_field(details: object, param: str, said: str) -> None:
    with pytest.raises(ApiError) as caught:
        with_details(HISTORY, details)
    assert caught.value.status == 400 and caught.value.param == param, caught.value
    assert said in str(caught.value.message), caught.value.message
