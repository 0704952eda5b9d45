"""UpstreamDecoder on input shapes that were superlinear (issue 22): seconds per case, host CPython.

    .venv/bin/python bench/probes/decoder_linear.py            # every case, best of 3
    .venv/bin/python bench/probes/decoder_linear.py --src DIR  # the decoder of another checkout's src/
    .venv/bin/python bench/probes/decoder_linear.py --check    # exit 1 on an x2 above 3.5 (make bench)

Each case is also run at half its size: a linear decoder takes about twice as long for twice
the input (the "x2" column), a quadratic one about four times. These were tests with a bound
in seconds (tests/test_streaming/test_upstream.py) until issue 44: a clock bound measures the
machine as much as the code, so the tests check the same shapes' output and this checks speed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

WORD = {"response": "token", "p": "abcdefgh"}


def native(n: int, end: bytes) -> bytes:
    frame = b"data: " + json.dumps(WORD, separators=(",", ":")).encode()
    return (frame + end + end) * n + b"data: [DONE]" + end + end


def long_line(size: int) -> bytes:
    text = "x" * size
    return b"data: " + json.dumps({"response": text}).encode() + b"\n\n" + b"data: [DONE]\n\n"


def cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def mixed(n: int) -> bytes:
    ends = (b"\r", b"\n", b"\r\n")
    frame = b"data: " + json.dumps(WORD, separators=(",", ":")).encode()
    return b"".join(frame + ends[i % 3] + ends[(i + 1) % 3] for i in range(n)) + b"data: [DONE]\n\n"


# name -> (input of a given scale, the scale); every case is one list of reads.
CASES: dict[str, tuple[Callable[[int], list[bytes]], int]] = {
    "one 4 MiB line in 1 KiB reads": (lambda s: cut(long_line(s), 1024), 4 * 1024 * 1024),
    "one 4 MiB line in 64 KiB reads": (lambda s: cut(long_line(s), 65536), 4 * 1024 * 1024),
    "64k events, CR line ends, one read": (lambda s: [native(s, b"\r")], 65536),
    "64k events, CR line ends, 4 KiB reads": (lambda s: cut(native(s, b"\r"), 4096), 65536),
    "64k events, CRLF line ends, one read": (lambda s: [native(s, b"\r\n")], 65536),
    "64k events, mixed line ends, 4 KiB reads": (lambda s: cut(mixed(s), 4096), 65536),
    "64k events, LF line ends, one read": (lambda s: [native(s, b"\n")], 65536),
    "64k events, LF line ends, 1 read per event": (
        lambda s: cut(native(s, b"\n"), len(native(1, b"\n")) - 16),
        65536,
    ),
}


def decode(module: ModuleType, reads: list[bytes]) -> int:
    decoder = module.UpstreamDecoder()
    parts = 0
    for read in reads:
        parts += len(decoder.feed(read).parts)
    parts += len(decoder.flush().parts)
    return parts


def best(module: ModuleType, reads: list[bytes], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        decode(module, reads)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--src", type=Path, default=Path(__file__).resolve().parents[2] / "src")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="exit 1 when a case's x2 is over 3.5")
    args = parser.parse_args()
    sys.path.insert(0, str(args.src.resolve()))
    # streaming/upstream.py since issue 44's floors; upstream.py or workers_ai/ before.
    for name in ("streaming.upstream", "streaming.upstream", "upstream"):
        if (args.src / (name.replace(".", "/") + ".py")).is_file():
            module = importlib.import_module(name)
            break
    else:
        raise SystemExit(f"no upstream decoder under {args.src}")
    print(f"decoder: {Path(module.__file__ or '').resolve()}  python {sys.version.split()[0]}")
    print("| case | seconds | x2 (time at full size / at half) |\n|---|---:|---:|")
    superlinear = []
    for name, (make, scale) in CASES.items():
        half = best(module, make(scale // 2), args.rounds)
        # A ratio of two times of a few ms is noise: --check grows the input until half the
        # case takes 50 ms (a quadratic decoder gets there sooner and shows x4 all the same).
        while args.check and half < 0.05 and scale < 64 * 1024 * 1024:
            scale *= 2
            half = best(module, make(scale // 2), args.rounds)
        full = best(module, make(scale), args.rounds)
        grown = f" (x{scale // CASES[name][1]} the input)" if scale != CASES[name][1] else ""
        print(f"| {name}{grown} | {full:.3f} | {full / half:.1f} |", flush=True)
        if full / half > 3.5:
            superlinear.append(f"{name}: x{full / half:.1f}")
    if args.check and superlinear:
        raise SystemExit(
            "superlinear (x2 over 3.5: linear is ~2, quadratic ~4): " + "; ".join(superlinear)
        )


if __name__ == "__main__":
    main()
