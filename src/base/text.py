"""Text that UTF-8 can carry: what goes to the model and into storage never holds a lone
surrogate."""

from __future__ import annotations

import re
from typing import Any

# A surrogate code point left in a Python str is a lone one: json.loads joins escaped pairs.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """Lone surrogates as U+FFFD, as a browser's TextEncoder sends them: a JS client that cut
    a string inside an emoji still gets its answer, and UTF-8 can encode what goes upstream."""
    # isascii() is a C scan many times faster than the regex: a base64 image or most prose
    # skips the search (a 2 MiB conversation went from 15 to <1 ms on the host).
    if text.isascii() or _LONE_SURROGATE.search(text) is None:
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def well_formed_json(value: Any) -> Any:
    """A parsed JSON value with well_formed() on every string (keys too): what UTF-8 can carry
    to the model. Integers a JS Number cannot hold are js_values' business, at the boundary.
    Recursing is safe: a body is nested at most json_limits' depth before it is parsed."""
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, list):
        return [well_formed_json(item) for item in value]
    if isinstance(value, dict):
        return {well_formed(str(key)): well_formed_json(item) for key, item in value.items()}
    return value
