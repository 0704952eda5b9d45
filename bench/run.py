"""Runs every benchmark in one go and writes bench/RESULTS.md (not part of the test suite).

    make bench            # or: .cache/bootstrap/bin/uv run python bench/run.py
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def node(script: str, *args: str) -> dict[str, Any]:
    out = subprocess.run(["node", "--expose-gc", str(BENCH / script), *args], cwd=ROOT, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    quick = "--quick" in sys.argv
    if "--render" in sys.argv:  # re-render RESULTS.md from the last results.json
        saved = json.loads((BENCH / "results.json").read_text())
        imports, relay, host = saved["imports"], saved["relay"], saved["host"]
        quick = saved.get("quick", False)
    else:
        imports = [node("import_cost.mjs") for _ in range(5)]
        relay = node("relay_bench.mjs", *(["--quick"] if quick else []))
        host = json.loads(subprocess.run([sys.executable, str(BENCH / "host_throughput.py")], capture_output=True, text=True, check=True).stdout)
        saved = {"imports": imports, "relay": relay, "host": host, "quick": quick, "at": f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M}"}
        (BENCH / "results.json").write_text(json.dumps(saved, indent=1) + "\n")

    cpu = relay["cpu_per_1000_tokens_ms"]
    lines = [
        "# Benchmark results",
        "",
        f"Run {saved.get('at') or f'{datetime.now(timezone.utc):%Y-%m-%d %H:%M}'} UTC with `make bench`{' --quick' if quick else ''} on {cpu_model()}, "
        f"{os.cpu_count()} cores, Node {relay['machine']['node']}, Pyodide {relay['machine']['pyodide']}, host {host['python']}. "
        "All relay figures come from one run inside the local runtime, so compare them as ratios.",
        "",
        "## CPU time per 1,000 relayed tokens (ms; median of 5 rounds)",
        "",
        "| tokens per answer | Python relay | passthrough (floor) | JS re-framer | relay / JS | relay over floor / JS over floor |",
        "|---|---|---|---|---|---|",
    ]
    for n, row in cpu.items():
        py, floor, js = row["python_relay"], row["passthrough"], row["js_reframer"]
        # At small sizes the Python passthrough's own per-request cost exceeds the JS peer's
        # whole cost, so "over the floor" says nothing there.
        over = f"{(py - floor) / (js - floor):.1f}x" if js > 2 * floor else "n/a"
        lines.append(f"| {int(n):,} | {py:.1f} | {floor:.1f} | {js:.1f} | {py / js:.1f}x | {over} |")
    identical = all(relay["identical_output"].values())
    ttfb = relay["ttfb_ms"]
    cancel = relay["cancel_ms"]
    lines += [
        "",
        f"The JS re-framer's output is byte-identical to the relay's: {'yes' if identical else 'NO'} (checked each run).",
        "",
        "## Time to first byte (ms, request in to first body chunk out, upstream answering at once)",
        "",
        "| | median | p99 |",
        "|---|---|---|",
        *[f"| {k} | {v['median']:.2f} | {v['p99']:.2f} |" for k, v in ttfb.items()],
        f"| **relay overhead over passthrough** | **{ttfb['python_relay']['median'] - ttfb['passthrough']['median']:.2f}** | |",
        "",
        f"## Disconnect to upstream cancel ({cancel['runs']} runs, mid-stream)",
        "",
        f"median {cancel['median']:.3f} ms, p99 {cancel['p99']:.3f} ms, max {cancel['max']:.3f} ms.",
        "",
        "## Live proxies and memory",
        "",
        "| | live proxies | created / destroyed | Python objects | JS heap (MB) | Wasm memory (MB) |",
        "|---|---|---|---|---|---|",
    ]
    leaks = relay["leaks"]
    rows = [("before 1,000 streams", leaks["streams_1000"]["before"]), ("after 1,000 streams (half cancelled)", leaks["streams_1000"]["after"])]
    rows += [(f"long stream, sample {i + 1}", s) for i, s in enumerate(leaks["one_long_stream"]["samples"])]
    rows.append((f"after one {leaks['one_long_stream']['tokens']:,}-token stream", leaks["one_long_stream"]["after"]))
    for label, s in rows:
        lines.append(f"| {label} | {s['live']} | {s['created']} / {s['destroyed']} | {s['py_objects']:,} | {s['heap_mb']:.1f} | {s['wasm_mb']:.1f} |")
    lines += [
        "",
        "Mid-stream samples include the in-flight stream's own objects (its relay pipe);"
        " the JS heap step before the long stream is the benchmark model's cache of its pre-encoded frames.",
    ]
    ours = statistics.median(i["ours_ms"] for i in imports)
    stdlib = statistics.median(i["stdlib_ms"] for i in imports)
    per_module = {name: statistics.median(i["per_module_ms"][name] for i in imports) for name in imports[0]["per_module_ms"]}
    lines += [
        "",
        "## Import cost inside Pyodide (median of 5 fresh starts from the runtime's snapshot)",
        "",
        f"Our modules: **{ours:.0f} ms**; the stdlib modules they use, imported first: {stdlib:.0f} ms.",
        "",
        "| module | ms |",
        "|---|---|",
        *[f"| {name} | {ms:.1f} |" for name, ms in per_module.items()],
        "",
        "## Host CPython: decoder + encoder throughput",
        "",
        f"{host['native_tokens_per_s']:,.0f} tokens/s for native frames, {host['openai_tokens_per_s']:,.0f} tokens/s for OpenAI-shaped frames "
        f"(Relay.feed() one frame at a time, best of 3 runs of 100,000 tokens).",
        "",
    ]
    lines += ["", (BENCH / "HISTORY.md").read_text()]
    (BENCH / "RESULTS.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
