"""What a /v1/embeddings request of many texts costs on workerd, split into calls of 100: wall
time and the workerd process's CPU per request, against a model that answers at once and one
whose every call takes LATENCY ms ([[pace:N]] in a call's last text: local/model.mjs).

Run once per value of embedding_batches.AT_ONCE (edit it, then a fresh launcher each time):

node local/launch.mjs --port 8834 --pace 0 --ratelimit 1000000/60 &
.venv/bin/python bench/probes/embedding_batches_cost.py http://127.0.0.1:8834 <workerd pid>
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import httpx

MODEL = "@cf/baai/bge-base-en-v1.5"  # 768 numbers a vector
LATENCY = 150  # ms a call, about what one batch of 100 short texts takes on Workers AI
TICK = os.sysconf("SC_CLK_TCK")


def cpu_ms(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICK  # utime + stime


def texts(n: int, latency: int, round_: int) -> list[str]:
    out = [f"round {round_} chunk {i}: a few words of a document" for i in range(n)]
    if latency:
        for end in range(min(99, n - 1), n, 100):
            out[end] += f" [[pace:{latency}]]"
        if n % 100:
            out[-1] += f" [[pace:{latency}]]"
    return out


def main(url: str, pid: int) -> None:
    cases = [
        ("2048 texts, base64, model at once", 2048, 0, "base64"),
        (f"2048 texts, base64, {LATENCY} ms a call", 2048, LATENCY, "base64"),
        (f"250 texts, base64, {LATENCY} ms a call", 250, LATENCY, "base64"),
        ("2048 texts, float, model at once", 2048, 0, "float"),
    ]
    rounds = 7
    results: dict[str, tuple[list[float], list[float]]] = {c[0]: ([], []) for c in cases}
    with httpx.Client(base_url=url, timeout=300) as http:
        http.post("/v1/embeddings", json={"model": MODEL, "input": texts(300, 0, -1)})  # warm
        for r in range(rounds):
            for name, n, latency, encoding in cases:
                body = {"model": MODEL, "input": texts(n, latency, r), "encoding_format": encoding}
                before, start = cpu_ms(pid), time.perf_counter()
                response = http.post("/v1/embeddings", json=body)
                wall = (time.perf_counter() - start) * 1e3
                assert response.status_code == 200, response.text[:300]
                assert len(response.json()["data"]) == n
                results[name][0].append(wall)
                results[name][1].append(cpu_ms(pid) - before)
    for name, (walls, cpus) in results.items():
        print(
            f"{name:38} wall {statistics.median(walls):7.0f} ms"
            f"  workerd CPU {statistics.median(cpus):6.0f} ms  (medians of {rounds})"
        )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
