"""What OWNER_DAILY_TOKENS costs a chat request: workerd's CPU (all its processes, from /proc)
per request, for short streamed chats, with no budget and with one (a check before the model,
a count after: two Durable Object calls). Starts the launcher itself, once per case.

.venv/bin/python bench/probes/budget_cost.py [requests]
"""

from __future__ import annotations

import json
import os
import secrets
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
TICK = os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for child in Path("/proc").glob("[0-9]*"):
            try:
                if int((child / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    out.append(int(child.name))
                    todo.append(int(child.name))
            except (OSError, ValueError, IndexError):
                continue
    return out


def cpu_ms(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            if "workerd" not in Path(f"/proc/{pid}/comm").read_text():
                continue
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            continue
    return total * 1000 / TICK


def run(
    budget: str | None,
    requests: int,
    extra: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> list[float]:
    args = ["node", "local/launch.mjs", "--port", "0", "--pace", "0", "--exit-on-stdin-eof"]
    args += ["--ratelimit", "1000000/60", "--var", "AI_FALLBACK_MODELS="]
    if budget:
        args += ["--var", f"OWNER_DAILY_TOKENS={budget}"]
    for key, value in (extra or {}).items():
        args += ["--var", f"{key}={value}"]
    process = subprocess.Popen(
        args, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    url = ""
    for line in process.stdout:
        if line.startswith("{") and '"message":"ready"' in line:
            url = json.loads(line)["url"].rstrip("/")
            break
    # Its log lines are read away, or the pipe fills and the launcher stops.
    threading.Thread(target=lambda: [None for _ in process.stdout or []], daemon=True).start()
    pids = descendants(process.pid)
    who = {
        "sec-fetch-site": "same-origin",
        "x-owner-token": secrets.token_hex(16),
        **(headers or {}),
    }
    body = {"messages": [{"role": "user", "content": "[[pace:0]] hi"}], "max_tokens": 8}
    per_round = []
    try:
        with httpx.Client(base_url=url, headers=who, timeout=60) as http:
            for _ in range(30):  # warm up
                http.post("/api/v1/chat", json=body).raise_for_status()
            for _ in range(5):
                time.sleep(1)  # the counts of the warm-up settle
                before = cpu_ms(pids)
                for _ in range(requests):
                    http.post("/api/v1/chat", json=body).raise_for_status()
                time.sleep(1)
                per_round.append((cpu_ms(pids) - before) / requests)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)
    return per_round


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    for name, budget in (
        ("no budget", None),
        ("budget", "1000000000"),
        ("no budget", None),
        ("budget", "1000000000"),
    ):
        rounds = run(budget, n)
        print(
            f"{name:10} ms of workerd CPU per chat: median {statistics.median(rounds):.2f}"
            f" (rounds {', '.join(f'{r:.2f}' for r in rounds)})",
            flush=True,
        )
