"""Decoder + encoder throughput on host CPython: tokens per second through Relay.feed().

.venv/bin/python bench/host_throughput.py          # tokens/s through Relay.feed
.venv/bin/python bench/host_throughput.py frames   # us per frame through UpstreamDecoder.feed
"""

from __future__ import annotations

import json
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from common.chat_events import ChatEncoder
from streaming.relay import Relay, Timing
from streaming.upstream import UpstreamDecoder

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
            frame = {
                "response": text,
                "tool_calls": [],
                "p": "abcdefghijklmnopqrstuvwxyz"[: 3 + i % 20],
            }
        elif shape == "openai_reasoning":  # gpt-oss / kimi: reasoning first, p on every chunk
            delta = (
                {"content": None, "reasoning_content": text} if i < n // 2 else {"content": text}
            )
            frame = {
                "id": "x",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                "p": "abcdefgh",
            }
        else:
            frame = {
                "id": "x",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
            }
        out.append(b"data: " + json.dumps(frame, separators=(",", ":")).encode() + b"\n\n")
    return [*out, b"data: [DONE]\n\n"]


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


# One frame of each kind, byte for byte as local/model.mjs streams them.
ONE_FRAME = {
    "reasoning": b'data: {"id":"chatcmpl-local","object":"chat.completion.chunk","created":1767225600,'
    b'"model":"@cf/openai/gpt-oss-20b","choices":[{"index":0,"delta":{"reasoning_content":" Let","content":null},'
    b'"logprobs":null,"finish_reason":null,"stop_reason":null}],"p":"abcdefg"}\n\n',
    "content": b'data: {"id":"chatcmpl-local","object":"chat.completion.chunk","created":1767225600,'
    b'"model":"@cf/openai/gpt-oss-20b","choices":[{"index":0,"delta":{"content":" stream"},'
    b'"logprobs":null,"finish_reason":null,"stop_reason":null}],"p":"abcdefghij"}\n\n',
    "native": b'data: {"response":" stream","tool_calls":[],"p":"abcdefghijk"}\n\n',
}
# On workerd a frame reaches the Worker in ~2 reads, the first ending mid-line, ~27 bytes in.
SPLIT_AT = 27


def per_frame(kind: str, *, split: bool, number: int = 20_000, repeat: int = 7) -> float:
    """Microseconds per frame through UpstreamDecoder.feed: the best of ``repeat`` runs."""
    frame = ONE_FRAME[kind]
    head, tail = frame[:SPLIT_AT], frame[SPLIT_AT:]
    decoder = UpstreamDecoder()
    feed = decoder.feed
    feed(frame)  # past the think-tag check of the first text

    def whole() -> None:
        for _ in range(number):
            feed(frame)

    def halves() -> None:
        for _ in range(number):
            feed(head)
            feed(tail)

    return min(timeit.repeat(halves if split else whole, number=1, repeat=repeat)) / number * 1e6


if __name__ == "__main__" and sys.argv[1:] == ["frames"]:
    print(
        json.dumps(
            {
                **{
                    f"{kind}_{how}_us": round(per_frame(kind, split=how == "split"), 3)
                    for kind in ONE_FRAME
                    for how in ("whole", "split")
                },
                "python": sys.version.split()[0],
            }
        )
    )
elif __name__ == "__main__":
    shapes = ["native", "native_real", "openai", "openai_reasoning"]
    print(
        json.dumps(
            {
                **{f"{s}_tokens_per_s": round(run(s)) for s in shapes},
                "python": sys.version.split()[0],
            }
        )
    )
