"""Python values as JavaScript will read them: what to_js() needs done first. Plain Python,
so the host tests reach it; the shell (js_glue.js_object) applies it at the boundary."""

from __future__ import annotations

from typing import Any

# Pyodide hands a Python int to JS as a Number only while its magnitude is below 2**53 - 1;
# from there on as a BigInt, which JSON.stringify (in workerd's Ai class) refuses: measured on
# workerd, 9007199254740991 in a tool's schema was a 502. As a double it is the same number
# (exact up to 2**53; past it, the double any JSON parser reads from the digits).
_BIGINT_FROM = 2**53 - 1


def js_numbers(value: Any) -> Any:
    """`value` with every int that would become a BigInt as a float; containers are copied
    only on the way (dicts and lists; anything else, a JS object included, is left as is)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value) if abs(value) >= _BIGINT_FROM else value
    if isinstance(value, dict):
        return {key: js_numbers(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [js_numbers(item) for item in value]
    return value
