"""The `stop` parameter every door takes: a string or an array of strings, bounded; the relay
cuts the answer on them (streaming/stop.py)."""

from __future__ import annotations

from base.errors import invalid

MAX_STOPS = 16
MAX_STOP_CHARS = 256


def parse_stop(name: str, value: object) -> tuple[str, ...]:
    """A string or an array of strings (OpenAI's `stop`); null, "" and [] mean none."""
    if value is None or value == "":
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise invalid(name, "must be a string or an array of strings")
    if len(items) > MAX_STOPS:
        raise invalid(name, f"at most {MAX_STOPS} stop strings, got {len(items)}")
    for i, s in enumerate(items):
        if s == "":
            raise invalid(f"{name}[{i}]", "must not be empty")
        if len(s) > MAX_STOP_CHARS:
            raise invalid(f"{name}[{i}]", f"at most {MAX_STOP_CHARS} characters, got {len(s)}")
    return tuple(dict.fromkeys(items))  # each once, in the order given
