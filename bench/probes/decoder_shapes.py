"""The decoder's host CPython cost per token for each stream shape Workers AI has sent: native
frames, OpenAI chunks without usage (the older reasoning shape) and the late-2026 chunks (usage on
every delta, a heartbeat every 16). Windowed reads of 14 frames, 2,000 tokens, best of 7.

    uv run --locked python bench/probes/decoder_shapes.py [path/to/src]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

N = 2000
HEAD = (
    '{"id":"chatcmpl-local","object":"chat.completion.chunk","created":1767225600,'
    '"model":"@cf/google/gemma-4-26b-a4b-it-external","choices":[{"index":0,"delta":'
)
TAIL = b'data: {"response":"","usage":{"prompt_tokens":4,"completion_tokens":2000,"total_tokens":2004}}\n\ndata: [DONE]\n\n'


def delta(i: int) -> str:
    return json.dumps({"content": f" tok{i}"}, separators=(",", ":"))


def native() -> list[bytes]:
    frames = [b'data: {"response":"","tool_calls":[],"p":"abc"}\n\n']
    for i in range(N):
        frames.append(
            f'data: {{"response":" tok{i}","tool_calls":[],"p":"abcdefghijklmnopq"}}\n\n'.encode()
        )
    return [*frames, TAIL]


def openai_chunks() -> list[bytes]:
    end = ',"logprobs":null,"finish_reason":null,"stop_reason":null}],"p":"abcdefghijklmnopq"}'
    return [f"data: {HEAD}{delta(i)}{end}\n\n".encode() for i in range(N)] + [TAIL]


def late_2026() -> list[bytes]:
    frames = []
    for i in range(N):
        usage = f'{{"prompt_tokens":4,"completion_tokens":{i + 1},"total_tokens":{i + 5}}}'
        end = (
            f',"logprobs":null,"finish_reason":null,"stop_reason":null,"token_ids":[{1000 + i}]}}],'
            f'"usage":{usage},"p":"abcdefghijklmnopq"}}'
        )
        frames.append(f"data: {HEAD}{delta(i)}{end}\n\n".encode())
        if i % 16 == 15:
            beat = HEAD.split('"choices"')[0] + f'"choices":[],"usage":{usage}}}'
            frames.append(f"data: {beat}\n\n".encode())
    return [*frames, TAIL]


def main() -> None:
    sys.path.insert(0, str(Path(sys.argv[1] if len(sys.argv) > 1 else "src").resolve()))
    from streaming.upstream import UpstreamDecoder

    for name, frames in (
        ("native", native()),
        ("openai, no usage", openai_chunks()),
        ("2026", late_2026()),
    ):
        reads = [b"".join(frames[i : i + 14]) for i in range(0, len(frames), 14)]
        best = float("inf")
        for _ in range(7):
            decoder = UpstreamDecoder()
            started = time.perf_counter()
            parts = sum(len(decoder.feed(read).parts) for read in reads)
            decoder.flush()
            best = min(best, time.perf_counter() - started)
        print(f"{name}: {best / N * 1e6:.2f} us a token ({parts} parts)")


if __name__ == "__main__":
    main()
