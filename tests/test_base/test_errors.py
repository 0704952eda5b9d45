import pytest

from base.errors import ECHO_LIMIT, clip, shown


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("stream", "stream"),
        ("\ud800", "\\ud800"),
        ("é🌍\x00\n", "é🌍\x00\n"),
        ("x" * ECHO_LIMIT, "x" * ECHO_LIMIT),
        ("x" * (ECHO_LIMIT + 1), "x" * ECHO_LIMIT + "…"),
        ("\udfff" * 1000, "\\udfff" * ECHO_LIMIT + "…"),
    ],
)
def test_clip(text: str, expected: str) -> None:
    assert clip(text) == expected
    clip(text).encode()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("user", "'user'"),
        ("it's\n", '"it\'s\\n"'),
        ("\ud800", "'\\ud800'"),
        ("x" * 100, repr("x" * ECHO_LIMIT + "…")),
        (None, "null"),
        (True, "a boolean"),
        (10**400, "a number"),
        (1.5, "a number"),
        ([[[["deep"]]]], "an array"),
        ({"a": 1}, "an object"),
    ],
)
def test_shown_names_non_strings_by_type(value: object, expected: str) -> None:
    assert shown(value) == expected
