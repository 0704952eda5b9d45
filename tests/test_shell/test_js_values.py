"""Python values as JS reads them: no int that Pyodide would hand over as a BigInt."""

from __future__ import annotations

from typing import Any

import pytest

from shell.js_values import js_numbers

SAFE = 2**53 - 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (SAFE - 1, SAFE - 1),
        (-(SAFE - 1), -(SAFE - 1)),
        (SAFE, float(SAFE)),
        (-SAFE, float(-SAFE)),
        (SAFE + 1, float(SAFE + 1)),
        (10**100, 1e100),
        (True, True),
        (1.5, 1.5),
        ("9007199254740991", "9007199254740991"),
        (None, None),
    ],
)
def test_ints_from_2_53_minus_1_become_floats(value: object, expected: object) -> None:
    got = js_numbers(value)
    assert got == expected and type(got) is type(expected)


def test_nested_values_are_converted_and_the_rest_left_alone() -> None:
    marker = object()
    value: Any = {
        "tools": [{"parameters": {"maximum": SAFE, "minimum": -SAFE, "n": 3}}],
        "t": (SAFE,),
        "x": marker,
    }
    got = js_numbers(value)
    assert got == {
        "tools": [{"parameters": {"maximum": float(SAFE), "minimum": float(-SAFE), "n": 3}}],
        "t": [float(SAFE)],
        "x": marker,
    }
    assert type(got["tools"][0]["parameters"]["n"]) is int and got["x"] is marker
    assert value["tools"][0]["parameters"]["maximum"] == SAFE, "the input is not changed"


def test_the_floats_are_the_same_numbers() -> None:
    for n in (SAFE, -SAFE, 2**53):
        assert int(js_numbers(n)) == n
