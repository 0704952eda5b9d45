"""What the JSON limits scan costs next to the json.loads it protects, on 64 KB bodies.

.venv/bin/python bench/probes/json_limits_cost.py
"""

from __future__ import annotations

import contextlib
import json
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from base.errors import ApiError
from checks.json_limits import check


def messages(text: str, count: int = 50) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": text}] * count}).encode()


BODIES = {
    "50 messages of prose": messages("Hello world, how are you today? " * 38),
    "50 messages of code, quotes, backslashes": messages('print("a\\\\b", x["k"])\n' * 40),
    "hostile: 65,536 [": b"[" * 65536,
    'hostile: 16,384 {"":': b'{"":' * 16384,
    "hostile: 21,000 [] side by side": b"[" + b"[]," * 21000 + b"[]]",
    "hostile: 1,000 chains 31 deep": b"[" + b",".join([b"[" * 31 + b"]" * 31] * 1000) + b"]",
    "hostile: 32,000 numbers": b"[" + b"1," * 32000 + b"1]",
    "hostile: 21,000 strings": b"[" + b'"",' * 21000 + b'""]',
}


def per_call(function: object, body: bytes, number: int = 200) -> float:
    def run() -> None:
        with contextlib.suppress(ApiError, ValueError, RecursionError):
            function(body)  # type: ignore[operator]

    return min(timeit.repeat(run, number=number, repeat=3)) / number


def main() -> None:
    print(f"{'body':42} {'bytes':>7} {'scan us':>9} {'json.loads us':>14}")
    for name, body in BODIES.items():
        scan, parse = per_call(check, body), per_call(json.loads, body)
        print(f"{name:42} {len(body):7} {scan * 1e6:9.1f} {parse * 1e6:14.1f}")


if __name__ == "__main__":
    main()
