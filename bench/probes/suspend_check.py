"""Is the Wasm stack pointer fix safe with suspended JSPI tasks? (issue 22)

    python bench/probes/suspend_check.py PYODIDE_DIR [--requests 2000] [--concurrency 64]

Runs bench/workers/suspend on bare workerd (one isolate) with the Pyodide bundle in
PYODIDE_DIR, sends requests that each suspend the Wasm stack several times inside a C frame
(run_sync in sorted()'s key), many at once so that tasks suspend and resume in every order,
and prints the stack pointer before and after, wrong answers and 5xx."""

from __future__ import annotations

import argparse
import asyncio
import collections
import random
import time
from pathlib import Path

import httpx
from bare_workerd import free_port, serve

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "bench" / "workers" / "suspend"


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pyodide_dir")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()
    port = free_port()
    proc = serve(WORKER, Path(args.pyodide_dir), port)
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(timeout=60) as client:
            for _ in range(240):
                try:
                    sp0 = int((await client.get(url + "/sp")).text)
                    break
                except httpx.HTTPError:
                    await asyncio.sleep(0.25)
            else:
                raise SystemExit("workerd did not answer")
            statuses: collections.Counter[str] = collections.Counter()
            todo = list(range(args.requests))
            rng = random.Random(1)

            async def worker() -> None:
                while todo and sum(n for k, n in statuses.items() if not k.startswith("200")) < 100:
                    todo.pop()
                    try:
                        r = await client.get(
                            f"{url}/run/{rng.randint(0, 12)}/{rng.randint(1, 6)}", timeout=10
                        )
                        statuses[f"{r.status_code} {r.text[:20]}"] += 1
                    except httpx.HTTPError as exc:
                        statuses[type(exc).__name__] += 1

            t0 = time.monotonic()
            await asyncio.gather(*(worker() for _ in range(args.concurrency)))
            print(
                f"{sum(statuses.values())} of {args.requests} requests (stopping after 100 failures), {args.concurrency} at once, {time.monotonic() - t0:.1f} s: {dict(statuses)}"
            )
            try:
                sp1 = int((await client.get(url + "/sp", timeout=10)).text)
                print(
                    f"stack pointer {sp0} -> {sp1}: {(sp0 - sp1) / args.requests:+.1f} bytes per request"
                )
            except (httpx.HTTPError, ValueError) as exc:
                print(f"stack pointer {sp0} -> unreadable ({exc!r})")
    finally:
        proc.terminate()
        out = proc.communicate(timeout=20)[0]
        fatal = out.count("fatal error")
        print(f"'fatal error' in workerd's output: {fatal}")
        if fatal:
            at = out.find("fatal error")
            print(out[max(at - 200, 0) : at + 1500])


asyncio.run(main())
