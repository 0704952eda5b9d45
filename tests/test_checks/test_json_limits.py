import json
import random

import pytest

from base.errors import ApiError
from checks import json_limits
from checks.json_limits import MAX_DEPTH, MAX_NUMBER_DIGITS, check, deepest, outside_strings


def reference_depth(brackets: bytes) -> int:
    level = top = 0
    for byte in brackets:
        level += 1 if byte == ord("[") else -1
        top = max(top, level)
    return top


def reference_outside(data: bytes) -> bytes:
    """A JSON lexer, one byte at a time: what lies outside strings, kept as the scan keeps it."""
    out = bytearray()
    in_string = escaped = False
    for byte in data:
        char = bytes([byte])
        if in_string:
            if escaped:
                escaped = False
            elif char == b"\\":
                escaped = True
            elif char == b'"':
                in_string = False
        elif char == b'"':
            in_string = True
        elif char in b"[]{},0123456789":
            out += char
    return bytes(out)


@pytest.mark.parametrize(
    ("brackets", "depth"),
    [
        (b"", 0),
        (b"]", 0),
        (b"[", 1),
        (b"[]", 1),
        (b"[][]", 1),
        (b"[[]]", 2),
        (b"[[][[]]]", 3),
        (b"]]][[", 0),
        (b"[[[", 3),
        (b"[]" * 100 + b"[[[", 3),
        (b"[" * 33 + b"]" * 33, 33),
    ],
)
def test_deepest_table(brackets: bytes, depth: int) -> None:
    assert deepest(brackets) == depth == reference_depth(brackets)


def test_deepest_matches_a_plain_loop_on_random_brackets() -> None:
    rng = random.Random(11)
    for _ in range(2000):
        brackets = bytes(rng.choice(b"[]") for _ in range(rng.randrange(60)))
        assert deepest(brackets) == reference_depth(brackets), brackets


def random_json(rng: random.Random, depth: int) -> object:
    pick = rng.randrange(8 if depth < 6 else 5)
    if pick == 0:
        return rng.choice(
            ["", 'a"b', "\\", '\\"', '"\\\\"[', "{[,]}", "\n\t\u2028", "é🌍", "\ud800"]
        )
    if pick == 1:
        return rng.choice([0, -1, 10**30, 1.5e-300, 123456789])
    if pick == 2:
        return rng.choice([True, False, None])
    if pick == 3:
        return "".join(rng.choice('ab"\\[]{}:,0 ') for _ in range(rng.randrange(12)))
    if pick == 4:
        return rng.randrange(10**6)
    if pick == 5:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ['"', "\\", "[", "k", "1"]
    return {rng.choice(keys) + str(i): random_json(rng, depth + 1) for i in range(rng.randrange(4))}


def test_outside_strings_agrees_with_a_lexer_on_valid_json() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        value = random_json(rng, 0)
        for ascii_only in (True, False):
            data = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
            assert outside_strings(data) == reference_outside(data), data


def test_the_scan_never_sees_less_than_json_loads_reaches_in_broken_json() -> None:
    """Cut and spliced documents: up to where json.loads fails, the scan's depth covers it."""
    rng = random.Random(3)
    for _ in range(3000):
        data = json.dumps(random_json(rng, 0)).encode()
        other = json.dumps(random_json(rng, 0)).encode()
        cut, at = rng.randrange(len(data) + 1), rng.randrange(len(other) + 1)
        broken = data[:cut] + other[at:]
        try:
            json.loads(broken)
            reached = len(broken)
        except ValueError as exc:
            reached = getattr(exc, "pos", len(broken))
        scanned = outside_strings(broken).translate(
            json_limits._BRACKETS, json_limits._NOT_BRACKETS
        )
        lexed = reference_outside(broken[:reached]).translate(
            json_limits._BRACKETS, json_limits._NOT_BRACKETS
        )
        assert deepest(scanned) >= reference_depth(lexed), broken


def refused(data: bytes) -> str:
    with pytest.raises(ApiError) as info:
        check(data)
    assert (info.value.status, info.value.code) == (400, "invalid_json")
    return info.value.message


def nested(levels: int, open_: bytes, close: bytes) -> bytes:
    return open_ * levels + b"1" + close * levels


@pytest.mark.parametrize(("open_", "close"), [(b"[", b"]"), (b'{"a":', b"}"), (b'[{"a":', b"}]")])
def test_depth_limit_is_exact(open_: bytes, close: bytes) -> None:
    per_level = 2 if open_.startswith(b"[{") else 1
    check(nested(MAX_DEPTH // per_level, open_, close))
    message = refused(nested(MAX_DEPTH // per_level + 1, open_, close))
    assert (
        message == "request body nests arrays and objects more than 32 levels deep; the limit is 32"
    )


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 100_000,
        b"{" * 100_000,
        b'{"a":' * 5000,
        b"[" * 40 + b"]" * 40,
        b'["' + b"x" * 10 + b'",' + b"[" * 40,  # after a string
        b'["\\\\",' + b"[" * 40,  # after an escaped backslash: the string ended
        b"[" * 20 + b"]" * 20 + b"[" * 33,
    ],
)
def test_too_deep_or_unclosed_is_refused(data: bytes) -> None:
    assert "32 levels" in refused(data)


@pytest.mark.parametrize(
    "data",
    [
        b'["' + b"[" * 1000 + b'"]',
        b'{"' + b"{" * 1000 + b'":1}',
        b'["\\"' + b"[" * 1000 + b'"]',  # an escaped quote does not end the string
        b'["\\\\\\"' + b"[" * 1000 + b'"]',
        b"[" + b"[]," * 5000 + b"[]]",  # many, but shallow
        b"]" * 1000,  # broken, and json.loads says so without recursing
    ],
)
def test_brackets_inside_strings_or_side_by_side_are_not_depth(data: bytes) -> None:
    check(data)


@pytest.mark.parametrize(
    "number",
    [
        b"1" * 100,
        b"-" + b"9" * 100,
        b"1." + b"0" * 99,
        b"1e" + b"9" * 99,
        b"-1.5e-" + b"0" * 98,
        b"1e999",
        b"-0",
    ],
)
# Digits count, signs and points do not: what int() and float() work through.
def test_numbers_up_to_the_limit_pass(number: bytes) -> None:
    check(b'{"temperature":' + number + b"}")
    check(b"[" + b",".join([number] * 50) + b"]")


@pytest.mark.parametrize(
    "number",
    [
        b"1" * 101,
        b"-" + b"9" * 101,
        b"1." + b"0" * 100,
        b"1e" + b"9" * 100,
        b"1" * 5000,
        b"1" * 310,
    ],
)
def test_longer_numbers_are_refused_in_plain_words(number: bytes) -> None:
    message = refused(b'{"temperature":' + number + b"}")
    assert message == (
        f"request body holds a number with more than {MAX_NUMBER_DIGITS} digits; the limit is {MAX_NUMBER_DIGITS}"
    )
    assert "int_max_str_digits" not in refused(number)


def test_digits_inside_strings_are_text() -> None:
    check(b'{"' + b"1" * 500 + b'":"' + b"9" * 5000 + b'"}')
