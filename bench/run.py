"""`make bench`: the workerd benchmark (bench/workerd.mjs) and the host decoder throughput, in
one run, written under .cache/bench/ (results.json and RESULTS.md); generated results are not
tracked. `--summary` also copies the summary to bench/RESULTS.md, to commit with a dated note.

    python bench/run.py [--quick] [--rounds N] [--only cpu,ttfb,...] [--before-src DIR] [--summary]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import knockouts  # noqa: E402  (bench/knockouts.py, beside this file)

OUT = ROOT / ".cache" / "bench"
RESULTS_JSON = OUT / "results.json"
RESULTS_MD = OUT / "RESULTS.md"
SUMMARY = ROOT / "bench" / "RESULTS.md"  # written only with --summary
VARIANTS = ("python_relay", "passthrough", "js_identity", "js_reframer")


def per_token(run: dict[str, Any]) -> float:
    return float(run["cpuMs"]) / float(run["tokens"]) * 1000


def per_request(run: dict[str, Any]) -> float:
    return float(run["cpuMs"]) / float(run["requests"])


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def fmt(value: float, digits: int = 1) -> str:
    return "n/a" if value != value else f"{value:,.{digits}f}"


def cpu_section(cpu: dict[str, Any]) -> list[str]:
    lines = [
        "## CPU of workerd per 1,000 relayed tokens (ms; median over rounds)",
        "",
        "Each variant is a Worker in its own workerd process; CPU is that process's, from the OS;",
        "the built-in model runs in a process of its own. `paced2` = a token every 2 ms (several",
        "streams at once to save wall time; every token is still its own upstream read), `once` =",
        "the whole answer written at once. Reasoning = `@cf/openai/gpt-oss-20b` OpenAI-shaped",
        'chunks, half reasoning, half answer; native = `{"response","tool_calls":[],"p"}` frames.',
        "Over HTTP chunked framing (the model's default) workerd hands the Worker every frame in two",
        "reads, the first ending 32 bytes into the chunk. `/eof` rows: the same answers with no chunked",
        "framing, the body ending with the connection, read as it arrives: one read per paced frame,",
        "4 KiB reads when the answer is there at once. How production frames arrive is not known here.",
        "",
        "| shape / tokens / delivery | Python relay | Python passthrough | JS identity TransformStream | JS re-framer | relay / JS re-framer |",
        "|---|---|---|---|---|---|",
    ]
    before = any("python_relay_before" in cell["runs"] for cell in cpu.values())
    if before:
        lines[-2] += " the relay before (--before-src) | before / JS re-framer |"
        lines[-1] += "---|---|"
    for key, cell in cpu.items():
        runs = cell["runs"]
        figures = {v: med([per_token(r) for r in runs.get(v, [])]) for v in VARIANTS}
        ratio = (
            figures["python_relay"] / figures["js_reframer"]
            if figures["js_reframer"]
            else float("nan")
        )
        failed = sum(r["failed"] for rs in runs.values() for r in rs)
        note = f" ({failed} failed)" if failed else ""
        extra = ""
        if before:
            old = med([per_token(r) for r in runs.get("python_relay_before", [])])
            extra = f" {fmt(old)} | {fmt(old / figures['js_reframer'] if figures['js_reframer'] else float('nan'), 2)}x |"
        lines.append(
            f"| {key}{note} | "
            + " | ".join(fmt(figures[v]) for v in VARIANTS)
            + f" | {fmt(ratio, 2)}x |"
            + extra
        )
    lines += ["", "### CPU per request, 10-token answers (ms; median over rounds)", ""]
    lines += [
        "| shape / delivery | Python relay | Python passthrough | JS identity | JS re-framer | relay over passthrough |",
        "|---|---|---|---|---|---|",
    ]
    for key, cell in cpu.items():
        if cell["tokens"] != 10:
            continue
        figures = {v: med([per_request(r) for r in cell["runs"].get(v, [])]) for v in VARIANTS}
        over = figures["python_relay"] - figures["passthrough"]
        lines.append(
            f"| {key} | "
            + " | ".join(fmt(figures[v], 2) for v in VARIANTS)
            + f" | {fmt(over, 2)} |"
        )
    return lines


def crossings_section(crossings: dict[str, Any]) -> list[str]:
    lines = [
        "## What each piece of glue costs on workerd (CPU per upstream chunk, µs; median)",
        "",
        "The same answers through different glue made only of built-in classes (no code from",
        "strings, which workerd refuses): `bench/workers/js_probe.mjs` and `bench/workers/probe/entry.py`.",
        "",
        "| glue | 1,000 tokens at once (µs/chunk) | 1,000 tokens paced (µs/chunk) | 10-token request (ms) |",
        "|---|---|---|---|",
    ]
    for mode, cells in crossings.items():
        if mode == "loops":
            continue
        once = med([per_token(r) for r in cells.get("1000/once", [])])
        paced = med([per_token(r) for r in cells.get("1000/paced", [])])
        request = med([per_request(r) for r in cells.get("10/once", [])])
        lines.append(f"| {mode} | {fmt(once)} | {fmt(paced)} | {fmt(request, 2)} |")
    loops = crossings.get("loops", {})
    if loops:
        lines += [
            "",
            "Single crossings, called in a loop inside one request (µs per call; median of the runs",
            "that answered 200: a run that failed did not do its loop, and its CPU says nothing):",
            "",
            "| crossing | µs | runs failed |",
            "|---|---|---|",
        ]
        for kind, runs in loops.items():
            good = [float(r["usPerCall"]) for r in runs if r.get("status") == 200]
            lines.append(
                f"| {kind} | {fmt(med(good), 2) if good else 'failed'} | {len(runs) - len(good)} of {len(runs)} |"
            )
    return lines


def table(rows: dict[str, dict[str, Any]], columns: list[str], title: str) -> list[str]:
    lines = [f"| {title} | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name, row in rows.items():
        cells = []
        for c in columns:
            value = row.get(c)
            cells.append(fmt(float(value), 2) if isinstance(value, (int, float)) else str(value))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def cell_ratio(
    cpu: dict[str, Any], key: str, a: str = "python_relay", b: str = "js_reframer"
) -> str:
    cell = cpu.get(key)
    if not cell:
        return "n/a"
    x = med([per_token(r) for r in cell["runs"].get(a, [])])
    y = med([per_token(r) for r in cell["runs"].get(b, [])])
    return f"{x / y:.2f}x ({x:.0f} vs {y:.0f} ms)" if y else "n/a"


def max_kept(conc: dict[str, Any], name: str) -> int:
    """The most streams kept pace, below the first level that was not (the bench bisects)."""
    if name in conc.get("maxKept", {}):
        return int(conc["maxKept"][name])
    return max((r["streams"] for r in conc[name] if r["kept"] == r["streams"]), default=0)


def targets(results: dict[str, Any]) -> list[str]:
    lines = [
        "## Against the targets of issue 14",
        "",
        "| target | measured | met |",
        "|---|---|---|",
    ]
    cpu = results.get("cpu", {})
    if cpu and "error" not in cpu:
        for key in (
            "native/10000/once",
            "reasoning/10000/once",
            "native/1000/paced2",
            "native/10000/paced1",
            "reasoning/1000/paced2",
        ):
            if key in cpu:
                text = cell_ratio(cpu, key)
                ok = text != "n/a" and float(text.split("x")[0]) <= 1.5
                lines.append(
                    f"| relay CPU per token <= 1.5x the JS re-framer, {key} | {text} per 1,000 tokens | {'yes' if ok else 'no'} |"
                )
        for key in ("native/10/once", "reasoning/10/once"):
            if key in cpu:
                cell = cpu[key]["runs"]
                over = med([per_request(r) for r in cell["python_relay"]]) - med(
                    [per_request(r) for r in cell["passthrough"]]
                )
                lines.append(
                    f"| per-request cost over the Python passthrough < 0.5 ms, {key} | {over:.2f} ms | {'yes' if over < 0.5 else 'no'} |"
                )
    t = results.get("ttfb")
    if isinstance(t, dict) and "error" not in t:
        over = t["python_relay"]["median"] - t["passthrough"]["median"]
        if "py_noassets" in t:
            # Like for like: the passthrough has no [assets], so no asset router hop in front of it.
            bare = t["py_noassets"]["median"] - t["passthrough"]["median"]
            lines.append(
                f"| TTFB overhead over the passthrough < 1 ms median | {bare:.2f} ms without the local asset router in front (as the passthrough); {over:.2f} ms with it | {'yes' if bare < 1 else 'no'} |"
            )
        else:
            lines.append(
                f"| TTFB overhead over the passthrough < 1 ms median | {over:.2f} ms | {'yes' if over < 1 else 'no'} |"
            )
    d = results.get("disconnect")
    if isinstance(d, dict) and "error" not in d:
        r = d["python_relay"]
        ok = r["p99"] < 100 and r["neverClosed"] == 0
        lines.append(
            f"| disconnect to upstream closed < 100 ms p99 | p99 {r['p99']:.1f} ms, median {r['median']:.1f} ms, {r['neverClosed']} of {r['runs']} never closed | {'yes' if ok else 'no'} |"
        )
    leaks = results.get("leaks")
    if isinstance(leaks, dict) and "rows" in leaks:
        rows = leaks["rows"]
        last = rows[-1]
        grown = rows[2]["py_objects"] - rows[1]["py_objects"] if len(rows) > 2 else 0
        rss = rows[2]["rss_mb"] - rows[1]["rss_mb"] if len(rows) > 2 else 0.0
        # Objects still held right after a batch may be given back later (workerd's side of a
        # finished request is collected by V8 in its own time): what counts is what is left.
        kept = last["py_objects"] - rows[0]["py_objects"]
        ok = last["live"] == 0 and last["created"] == last["destroyed"] and kept < 100
        lines.append(
            f"| zero leaked objects, flat memory | live {last['live']}, proxies {last['created']}/{last['destroyed']}; second batch: {grown:+,} Python objects, {rss:+.0f} MB RSS; at the end ({last.get('label', 'last')}), against before: {kept:+,} objects | {'yes' if ok else 'no'} |"
        )
    conc = results.get("concurrency")
    if isinstance(conc, dict) and "error" not in conc and "python_relay" in conc:
        a, b = max_kept(conc, "python_relay"), max_kept(conc, "js_reframer")
        ok = a * 1.5 >= b
        ratio = f" ({b / a:.2f}x)" if a else ""
        lines.append(
            f"| concurrency within 1.5x of the JS peer | {a} vs {b} streams kept pace{ratio} | {'yes' if ok else 'no'} |"
        )
    return [*lines, ""]


def statuses(row: dict[str, Any]) -> str:
    counts = row.get("statuses") or {}
    return ", ".join(f"{n} x {code}" for code, n in sorted(counts.items()))


def stages_section(anatomy: dict[str, Any]) -> list[str]:
    """The 10-token request cut off at successive points (bench/knockouts.py): each row's cost
    minus the row above is what that stage adds."""
    found = [
        (f"cut: {what}", anatomy.get(f"py_cut_{name}: POST 10-token answer"))
        for name, (what, _) in knockouts.CUTS.items()
    ]
    found.append(
        (
            "the whole relay (+ the pipe, each frame through Python, the request's end)",
            anatomy.get("relay: POST 10-token answer"),
        )
    )
    rows = [(label, row) for label, row in found if isinstance(row, dict)]
    if len(rows) < 2:
        return []
    out = [
        "### The same 10-token request, cut off at successive points (bench/knockouts.py)",
        "",
        "workerd's clocks stand still while code runs, so no profiler inside the Worker sees time pass;",
        "each row is a copy of src/ that answers at that point, interleaved with the others request by request.",
        "",
        "| stop after | ms per request (median) | added by this stage | statuses |",
        "|---|---|---|---|",
    ]
    previous = None
    for label, row in rows:
        ms = float(row["msPerRequest"])
        added = "" if previous is None else f"{ms - previous:+.2f}"
        out.append(f"| {label} | {ms:.2f} | {added} | {statuses(row)} |")
        previous = ms
    passthrough = anatomy.get("passthrough: POST 10-token answer")
    if isinstance(passthrough, dict):
        out.append(
            f"| (the Python passthrough Worker, for comparison) | {float(passthrough['msPerRequest']):.2f} | | {statuses(passthrough)} |"
        )
    return [*out, ""]


def render(results: dict[str, Any], host: dict[str, Any] | None) -> str:
    m = results["machine"]
    out = [
        "# Benchmark results",
        "",
        f"Run {results['started'][:16].replace('T', ' ')} UTC with `make bench`"
        f"{' --quick' if results.get('quick') else ''} on {m['cpu']}, {m['cores']} cores, Node {m['node']},"
        f" workerd {m['workerd']} (npm), load average before/after: {m['loadavg'].split(' ')[0]} / "
        f"{m.get('loadavgAfter', '?').split(' ')[0]} (a machine shared with other engineers' tests:"
        " the variants are interleaved round by round, and the figures compare as ratios).",
        f"Rounds: {results['rounds']}. Total bench time: {results['totalSeconds']:.0f} s. Raw figures: `.cache/bench/results.json` of that run (not tracked).",
        "",
    ]
    identical = results.get("identity")
    if isinstance(identical, list):
        ok = all(c["identical"] for c in identical)
        cases = ", ".join(
            c["case"] + (" ok" if c["identical"] else " differs at byte %s" % c["firstDiff"])
            for c in identical
        )
        out += [
            f"The JS re-framer's output is byte-identical to the relay's: **{'yes' if ok else 'NO'}** ({cases}).",
            "",
        ]
    out += targets(results)
    if "cpu" in results and "error" not in results["cpu"]:
        out += [*cpu_section(results["cpu"]), ""]
    if isinstance(results.get("anatomy"), dict) and "error" not in results["anatomy"]:
        out += [
            "## Where a request's CPU goes (ms of workerd CPU per request; median, requests interleaved one by one)",
            "",
        ]
        out += [
            *table(
                {k: v for k, v in results["anatomy"].items()},
                ["msPerRequest", "mean", "requests"],
                "request",
            ),
            "",
        ]
        out += stages_section(results["anatomy"])
    if "crossings" in results and "error" not in results["crossings"]:
        out += [*crossings_section(results["crossings"]), ""]
    if "ttfb" in results and "error" not in results["ttfb"]:
        t = results["ttfb"]
        out += [
            "## Time to first byte (ms, request sent to first body byte; 10-token answers at once)",
            "",
        ]
        out += table(t, ["runs", "median", "p99"], "variant")
        out += [
            "",
            f"**Relay over the Python passthrough: {fmt(t['python_relay']['median'] - t['passthrough']['median'], 2)} ms median.**",
            "",
        ]
        if "py_noassets" in t:
            out += [
                "`py_noassets` is the relay without `[assets]`, so without miniflare's asset router in front of it (the",
                "passthrough has none; on Cloudflare the asset routing is not the Worker's): "
                f"**{fmt(t['py_noassets']['median'] - t['passthrough']['median'], 2)} ms over the passthrough.**",
                "",
            ]
    if "disconnect" in results and "error" not in results["disconnect"]:
        out += [
            "## Client disconnect to upstream connection closed (ms; the model's `clientClosedAt` minus the client's leaving)",
            "",
        ]
        out += [
            *table(
                results["disconnect"],
                ["runs", "closed", "neverClosed", "median", "p99", "max"],
                "variant",
            ),
            "",
        ]
    leaks = results.get("leaks")
    if isinstance(leaks, dict) and "rows" in leaks:
        out += [
            "## Live objects and memory (Python relay, `/__local/stats`, workerd RSS from /proc)",
            "",
        ]
        out += [
            "| when | live relays | proxies created / destroyed | relays / ended | clients gone | Python objects | Wasm memory (MB) | workerd RSS (MB) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in leaks["rows"]:
            out.append(
                f"| {r['label']} | {r.get('live')} | {r.get('created')} / {r.get('destroyed')} | {r.get('relays')} / {r.get('relays_ended')} | "
                f"{r.get('clients_gone')} | {r.get('py_objects'):,} | {r.get('wasm_memory_bytes', 0) / 2**20:.1f} | {r['rss_mb']:.1f} |"
            )
        ls = leaks["longStream"]
        out += [
            "",
            f"The long stream: status {ls['status']}, {ls['bytes']:,} bytes in {ls['seconds']:.1f} s.",
        ]
        for name, c in leaks.get("cancelled", {}).items():
            out += [
                f"{name}: cancelled streams {c['count']}; upstream closed before the answer's end: {c['upstreamClosedEarly']};"
                f" upstream ran to the end: {c['upstreamRanToEnd']}."
            ]
        if leaks.get("peerRows"):
            out += [
                "JS re-framer's workerd RSS (MB), same batches: "
                + ", ".join(f"{r['label']}: {r['rss_mb']:.1f}" for r in leaks["peerRows"])
                + "."
            ]
        for key, label in (
            ("secondBatchGrowth", "Python object types grown over the second batch"),
            ("idleGrowth", "grown (or shrunk) over the final idle"),
        ):
            if key in leaks:
                out += [
                    f"{label}: {json.dumps(leaks[key]) if leaks[key] else 'none by 50 or more'}."
                ]
        out.append("")
    cancels = results.get("cancels")
    if isinstance(cancels, dict) and "error" not in cancels:
        out += [
            "## Cancels while other streams run (upstream closed before the answer's end / streams cancelled)",
            "",
            "Half the streams leave after their first token (200 tokens at 10 ms), half complete (20 tokens at 2 ms), N at a time.",
            "",
            "| variant | "
            + " | ".join(f"{r['concurrency']} at a time" for r in next(iter(cancels.values())))
            + " |",
            "|---" * (1 + len(next(iter(cancels.values())))) + "|",
        ]
        for name, rows in cancels.items():
            out.append(
                f"| {name} | "
                + " | ".join(f"{r['upstreamClosedEarly']}/{r['cancelled']}" for r in rows)
                + " |"
            )
        out.append("")
    conc = results.get("concurrency")
    if isinstance(conc, dict) and "error" not in conc:
        out += [
            "## Concurrent streams one workerd process holds (100 tokens each at 20 ms a token)",
            "",
            "A stream keeps pace when it takes at most 1.25x (+50 ms) what the model took to send it.",
            "After the steps 25-400, the gap between the last level kept and the first not kept is halved",
            "down to about 10%; rows in order of streams.",
            "",
            "| variant | streams | kept pace | median tok/s per stream | all streams tok/s | last-byte lag p99 (ms) | workerd CPU (ms) |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, rows in conc.items():
            if name == "maxKept":
                continue
            for r in rows:
                out.append(
                    f"| {name} | {r['streams']} | {r['kept']} | {fmt(r['medianTokensPerSecond'])} | {fmt(r['totalTokensPerSecond'], 0)} | {fmt(r['lastByteLagP99Ms'], 0)} | {fmt(r['cpuMs'], 0)} |"
                )
        out.append("")
    snap = results.get("snapshot")
    if isinstance(snap, list):
        out += [
            "## Restart (`node local/launch.mjs --snapshot MODE`, time to ready as the launcher reports it)",
            "",
            "| mode | ready (ms) | process start to ready (ms) | answers a chat request |",
            "|---|---|---|---|",
        ]
        for r in snap:
            out.append(
                f"| {r['mode']} | {r.get('readyMs', 'n/a')} | {fmt(r.get('processWallMs', float('nan')), 0)} | {'yes' if r.get('works') else 'NO: ' + str(r.get('error') or r.get('detail'))} |"
            )
        out.append("")
    client = results.get("client")
    if isinstance(client, dict):
        out += [
            "## The browser client's parse cost (`public/chat-client.js` in Node, a 4,000-token answer in one read)",
            "",
            f"Exports seen: {', '.join(client.get('exports', []))}; answer {client.get('answerBytes', 0):,} bytes.",
            "",
            "| what | median (ms) | p90 (ms) |",
            "|---|---|---|",
        ]
        for k, v in client.items():
            if isinstance(v, dict):
                out.append(
                    f"| {k} | {fmt(v.get('medianMs', float('nan')), 2)} | {fmt(v.get('p90Ms', float('nan')), 2)} |"
                    if "error" not in v
                    else f"| {k} | error: {v['error']} | |"
                )
        out.append("")
    windows = results.get("windows")
    if isinstance(windows, dict) and "table" in windows:
        out += [
            "## Windowed reads against the JS re-framer (`bench/check.mjs --full`, issue 35)",
            "",
            "CPU per 1,000 tokens, median over 2 rounds; added delay per token (ms) against "
            "the model's schedule. "
            + ("Every target met." if windows["exit"] == 0 else "Some target missed (exit 1)."),
            "",
            "```",
            windows["table"],
            "```",
            "",
        ]
    if host:
        out += [
            "## Host CPython decoder + encoder throughput (`bench/host_throughput.py`, tokens/s through Relay.feed)",
            "",
            "| shape | tokens/s |",
            "|---|---|",
        ]
        out += [
            f"| {k.removesuffix('_tokens_per_s')} | {v:,} |"
            for k, v in host.items()
            if k.endswith("_tokens_per_s")
        ]
        out += ["", f"Host Python {host.get('python')} ({platform.python_implementation()})."]
    errors = [k for k, v in results.items() if isinstance(v, dict) and "error" in v]
    if errors:
        out += ["", "## Parts that failed in this run", ""] + [
            f"- {k}: `{str(results[k]['error']).splitlines()[0]}`" for k in errors
        ]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", default="3")
    parser.add_argument("--only", default="")
    parser.add_argument("--before-src", default="")
    parser.add_argument(
        "--render-only", action="store_true", help="re-render RESULTS.md from results.json"
    )
    parser.add_argument(
        "--summary", action="store_true", help="also write the summary to bench/RESULTS.md"
    )
    args = parser.parse_args()
    host: dict[str, Any] | None = None
    OUT.mkdir(parents=True, exist_ok=True)
    if not args.render_only:
        started = time.monotonic()
        print("host throughput ...", file=sys.stderr)
        done = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "host_throughput.py")],
            capture_output=True,
            text=True,
            check=True,
        )
        host = json.loads(done.stdout.strip().splitlines()[-1])
        command = [
            "node",
            str(ROOT / "bench" / "workerd.mjs"),
            "--out",
            str(RESULTS_JSON),
            "--rounds",
            args.rounds,
        ]
        if args.quick:
            command.append("--quick")
        if args.only:
            command += ["--only", args.only]
        if args.before_src:
            command += ["--before-src", args.before_src]
        with tempfile.TemporaryDirectory(prefix="bench-cuts-") as cuts:
            if not args.only or {"anatomy", "ttfb"} & set(args.only.split(",")):
                command += [
                    "--src",
                    "noassets=noassets",
                ]  # the relay without the asset router in front
            if not args.only or "anatomy" in args.only.split(","):
                for name in knockouts.CUTS:
                    command += ["--src", f"cut_{name}={knockouts.make(Path(cuts), name)}"]
            subprocess.run(command, check=True, env=os.environ.copy())
        results = json.loads(RESULTS_JSON.read_text())
        if not args.only or "windows" in args.only.split(","):
            # Issue 35's bench-check with its reasoning-shape cell and 50 streams at once.
            print("windowed reads (bench/check.mjs --full) ...", file=sys.stderr)
            check = subprocess.run(
                ["node", str(ROOT / "bench" / "check.mjs"), "--full", "--rounds", "2"],
                capture_output=True,
                text=True,
                env=os.environ.copy(),
            )
            results["windows"] = {"table": check.stdout.strip(), "exit": check.returncode}
        results["host"] = host
        results["totalSeconds"] = time.monotonic() - started
        RESULTS_JSON.write_text(json.dumps(results, indent=1) + "\n")
    results = json.loads(RESULTS_JSON.read_text())
    summary = render(results, results.get("host"))
    RESULTS_MD.write_text(summary)
    written = [RESULTS_MD, RESULTS_JSON]
    if args.summary:
        SUMMARY.write_text(summary)
        written.append(SUMMARY)
    print("wrote " + ", ".join(str(path.relative_to(ROOT)) for path in written), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
