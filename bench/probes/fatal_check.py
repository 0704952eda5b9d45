"""After a Pyodide fatal error, is the isolate replaced? (issue 22)

    python bench/probes/fatal_check.py PYODIDE_DIR

Runs bench/workers/fatal on bare workerd, asks it once, lists what `cloudflare:workers` offers
Python, triggers Pyodide's fatal error path, then asks again for 20 s: prints each answer,
whether workerd is still running, and its output about the fatal error."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import httpx
from bare_workerd import free_port, serve

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "bench" / "workers" / "fatal"


def main() -> None:
    port = free_port()
    proc = serve(WORKER, Path(sys.argv[1]), port)
    url = f"http://127.0.0.1:{port}"

    def ask(path: str) -> str:
        try:
            r = httpx.get(url + path, timeout=20)
            return f"{r.status_code} {r.text[:160]!r}"
        except httpx.HTTPError as exc:
            return f"no answer ({type(exc).__name__})"

    try:
        for _ in range(240):
            if not ask("/").startswith("no answer"):
                break
            time.sleep(0.25)
        print("GET /      ", ask("/"))
        print("GET /api   ", ask("/api"))
        print("GET /fatal ", ask("/fatal"))
        t0 = time.monotonic()
        seen: dict[str, int] = {}
        while time.monotonic() - t0 < 20:
            answer = ask("/")
            seen[answer] = seen.get(answer, 0) + 1
            time.sleep(0.2)
        for answer, n in seen.items():
            print(f"GET / x{n}   {answer}")
        print("workerd still running after 20 s:", proc.poll() is None)
    finally:
        proc.terminate()
        out = proc.communicate(timeout=20)[0]
        keep = [
            line
            for line in out.splitlines()
            if any(k in line for k in ("fatal", "abortIsolate", "Default", "Error", "error"))
        ]
        print("workerd's output (lines about the failure, first 12):")
        print("\n".join(line[:300] for line in keep[:12]))


main()
