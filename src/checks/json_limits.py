"""Limits a client's JSON must meet before json.loads sees it: nesting depth and number size.

json.loads recurses once per nested array or object. In Pyodide the C stack is the Wasm stack,
and it overflows before Python's recursion limit notices: 6,250 nested arrays or 3,490 nested
objects (a 14 KB body) were a fatal error that took the isolate and every stream in it down.
A number literal is handed to int() or float() whole; past 4,300 digits int() refuses with a
message about sys.set_int_max_str_digits(), and a 310-digit integer overflows math.isfinite.

So the raw bytes are scanned first, without recursion and in a few C-speed passes (bytes
replace, translate, split and find): the scan runs on every request, so it must cost less
than the json.loads it protects. It measures the bytes outside strings only, so brackets and
digits inside a message's text never count.
"""

from __future__ import annotations

from itertools import accumulate, count
from operator import sub

from base.errors import ApiError

MAX_DEPTH = 32  # our bodies need 4; JSON schemas for tools rarely pass 10
MAX_NUMBER_DIGITS = 100  # any double prints in 17 significant digits and an exponent of 3

# Kept: quotes (to find strings), brackets (depth) and what makes up or ends a number literal
# outside strings (digits, commas; a key's closing quote precedes a value).
_KEEP = b'"[]{},0123456789'
_NOT_KEPT = bytes(c for c in range(256) if c not in _KEEP)
# While escapes are paired, a backslash must stay next to the character it escapes.
_NOT_KEPT_NOR_ESCAPE = bytes(c for c in range(256) if c not in _KEEP + b"\\/bfnrtu")
# Depth does not care which kind of bracket opens or closes: json.loads recurses on both.
_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = b",0123456789"
# Every digit as "0", so a too long number is one substring search; brackets and commas end it.
_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_TOO_LONG = b"0" * (MAX_NUMBER_DIGITS + 1)


def outside_strings(data: bytes) -> bytes:
    """The bytes of `data` outside JSON strings that matter here: brackets, commas, digits.

    Escapes are paired from the left as a JSON lexer pairs them: every escaped backslash goes,
    then every escaped quote, so the quotes left are the ones that open and close strings.
    Where the body stops being JSON the result may be wrong past that point, but json.loads
    stops there too, so the scan never misses a level or a digit that json.loads would reach.
    """
    if b"\\" in data:
        data = data.translate(None, _NOT_KEPT_NOR_ESCAPE)
        if b"\\\\" in data:
            data = data.replace(b"\\\\", b"")
        if b'\\"' in data:
            data = data.replace(b'\\"', b"")
    kept = data.translate(None, _NOT_KEPT)
    if b'"' in kept:
        kept = b"".join(kept.split(b'"')[::2])
    return kept


def deepest(brackets: bytes) -> int:
    """The highest level a string of "[" and "]" reaches (10,000 closes take about 1 ms).

    Split at each "]", the i-th piece is the run of "[" before the i-th close, so the level
    at the end of that run is (opens so far) - i; the highest level is always at such an end.
    """
    return int(max(map(sub, accumulate(map(len, brackets.split(b"]"))), count())))


def check(data: bytes) -> None:
    """Refuse, with 400 invalid_json, a body nested too deep or holding a too long number."""
    outside = outside_strings(data)
    brackets = outside.translate(_BRACKETS, _NOT_BRACKETS)
    if brackets.count(b"[") > MAX_DEPTH and deepest(brackets) > MAX_DEPTH:
        raise ApiError(
            400,
            "invalid_json",
            f"request body nests arrays and objects more than {MAX_DEPTH} levels deep; "
            f"the limit is {MAX_DEPTH}",
        )
    if _TOO_LONG in outside.translate(_ZEROS):
        raise ApiError(
            400,
            "invalid_json",
            f"request body holds a number with more than {MAX_NUMBER_DIGITS} digits; "
            f"the limit is {MAX_NUMBER_DIGITS}",
        )
