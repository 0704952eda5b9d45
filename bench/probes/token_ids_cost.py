"""What decoding token ids costs /v1/embeddings: on the host (the decoder alone), and on workerd
(a request of ids against the same texts sent as strings, medians of interleaved requests).

node local/launch.mjs --port 8831 --pace 0 --ratelimit 1000000/60 &   # a fresh isolate
.venv/bin/python bench/probes/token_ids_cost.py http://127.0.0.1:8831
"""

from __future__ import annotations

import statistics
import sys
import time
import timeit
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from doors.embeddings.token_ids import TABLE_FILE, TokenTable, table

MODEL = "@cf/baai/bge-m3"
# A long English text's ids without tiktoken: the table's own tokens, cycled (" the", " of", ...).
WORDS = [1820, 315, 323, 311, 264, 304, 374, 430, 369, 449]


def ids(count: int) -> list[int]:
    return [WORDS[i % len(WORDS)] for i in range(count)]


def host() -> None:
    load = min(timeit.repeat(lambda: TokenTable(TABLE_FILE.read_bytes()), number=20, repeat=3))
    print(f"host: read + check the table {load / 20 * 1e3:.2f} ms")
    loaded = table()
    for count in (100, 8191):
        batch: list[object] = list(ids(count))
        took = min(timeit.repeat(lambda: loaded.decode(batch), number=50, repeat=3)) / 50  # noqa: B023
        print(f"host: decode {count} ids {took * 1e3:.3f} ms ({took / count * 1e9:.0f} ns an id)")


def post(http: httpx.Client, body: object) -> float:
    start = time.perf_counter()
    response = http.post("/v1/embeddings", json={"model": MODEL, "input": body})
    took = time.perf_counter() - start
    assert response.status_code == 200, response.text
    return took * 1e3


def workerd(url: str) -> None:
    loaded = table()
    cases = {
        "1 x 8191 ids": [ids(8191)],
        "100 x 8191 ids": [ids(8191)] * 100,
        "4 short texts": [ids(12)] * 4,
    }
    with httpx.Client(base_url=url, timeout=120) as http:
        first = post(http, [ids(12)])
        print(f"workerd: first request with ids in this isolate (reads the table) {first:.1f} ms")
        for name, body in cases.items():
            texts = [loaded.decode(list(b)) for b in body]
            as_ids, as_text = [], []
            for _ in range(9 if len(body) > 10 else 30):
                as_ids.append(post(http, body))
                as_text.append(post(http, texts))
            a, t = statistics.median(as_ids), statistics.median(as_text)
            print(
                f"workerd: {name:16} ids {a:7.1f} ms  text {t:7.1f} ms  difference {a - t:6.1f} ms"
            )


if __name__ == "__main__":
    host()
    if len(sys.argv) > 1:
        workerd(sys.argv[1])
