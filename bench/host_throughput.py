"""Decoder + encoder throughput on host CPython: tokens per second through Relay.feed()."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from chat_events import ChatEncoder  # noqa: E402
from relay import Relay, Timing  # noqa: E402

TIMING = Timing(ping_after=15, give_up_after=60)
WORDS = ["stream", "edge", "token", "relay", "python", "worker", "event", "byte"]


def frames(n: int, shape: str) -> list[bytes]:
    out = []
    for i in range(n):
        text = (" " if i else "") + WORDS[i % len(WORDS)]
        frame: dict[str, object]
        if shape == "native":
            frame = {"response": text, "p": "abcdefgh"}
        elif shape == "native_real":  # what Workers AI sends today (issue 10)
            frame = {"response": text, "tool_calls": [], "p": "abcdefghijklmnopqrstuvwxyz"[: 3 + i % 20]}
        elif shape == "openai_reasoning":  # gpt-oss / kimi: reasoning first, p on every chunk
            delta = {"content": None, "reasoning_content": text} if i < n // 2 else {"content": text}
            frame = {"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": None}], "p": "abcdefgh"}
        else:
            frame = {"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
        out.append(b"data: " + json.dumps(frame, separators=(",", ":")).encode() + b"\n\n")
    return out + [b"data: [DONE]\n\n"]


def run(shape: str, n: int = 100_000) -> float:
    chunks = frames(n, shape)
    best = 0.0
    for _ in range(3):
        relay = Relay(ChatEncoder(), TIMING, now=0.0)
        start = time.perf_counter()
        for chunk in chunks:
            relay.feed(chunk)
        best = max(best, n / (time.perf_counter() - start))
    return best


if __name__ == "__main__":
    shapes = ["native", "native_real", "openai", "openai_reasoning"]
    print(json.dumps({**{f"{s}_tokens_per_s": round(run(s)) for s in shapes}, "python": sys.version.split()[0]}))
