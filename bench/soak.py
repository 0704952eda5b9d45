"""`make soak`: days of traffic on ONE isolate, compressed into minutes (issue 22).

    python bench/soak.py [--requests 200000] [--short] [--concurrency 16] [--samples 40]
                         [--pyodide-dir DIR] [--out DIR]

Runs the Worker with `node local/launch.mjs --snapshot off` (one workerd, one isolate; the
built-in model at 1 ms a token; a rate limit no soak reaches) and sends a seeded mix: fuzzed
bodies (tests/fuzz.py), streams and whole answers in both APIs, clients that leave mid-stream,
slow readers, every error path of the built-in model, and the small routes. Between batches it
lets the traffic drain and reads the Worker's /__local/stats (after a gc.collect(): Python
objects by type, what the collection freed, Wasm memory, the Wasm stack pointer), workerd's RSS,
and counts fatal errors in workerd's output and unexpected 5xx. Writes samples.json, soak.md
(a table) and soak.png under --out (default .cache/soak/<UTC time>).

--pyodide-dir defaults to $WORKERD_PYODIDE_DIR. On Pyodide 0.28.2 (the old runtime) an isolate
died of the Wasm stack leak after a few tens of thousands of requests; Pyodide 314 has no leak
(bench/notes/2026-11-25-soak-pyodide-314.md).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from fuzz import body_at  # noqa: E402  (tests/fuzz.py: the seeded hostile bodies)

CHAT = "/api/v1/chat"
COMPLETIONS = "/v1/chat/completions"
REASONER = "@cf/openai/gpt-oss-20b"
FATAL_MARKS = ("fatal error", "NoGilError", "no 'Default' class", "workerd restarted")
JSON = {"content-type": "application/json"}
# Per-request types of ours (and the SDK's Default with its env wrapper, and closure cells): each
# should be back to its start after a collection once the traffic has drained.
PER_REQUEST = (
    "RelayPipe",
    "Relay",
    "UpstreamDecoder",
    "Timing",
    "IncrementalDecoder",
    "JsByteSource",
    "RequestLog",
    "RequestBody",
    "Default",
    "_EnvWrapper",
    "cell",
)


@dataclass
class Tally:
    by_kind: collections.Counter[str] = field(default_factory=collections.Counter)
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    unexpected_5xx: list[str] = field(default_factory=list)
    no_answer: collections.Counter[str] = field(default_factory=collections.Counter)
    explained: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Log:
    """workerd's output, read as it comes: fatal errors counted, the first ones kept."""

    fatal: int = 0
    lines: int = 0
    first_fatal: list[str] = field(default_factory=list)
    # The Worker's recent error and warning lines (an upstream failure's detail), searched by
    # request id for each unexpected 5xx (explain()); the error paths of the mix write hundreds
    # a batch, so the first ones alone would not hold the line of a 5xx late in the run.
    recent: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=50_000))
    # Lines that are not the Worker's JSON (workerd's and the launcher's own), the first ones.
    other: list[str] = field(default_factory=list)
    others: int = 0

    def read(self, stream: Any) -> None:
        for line in stream:
            self.lines += 1
            if '"level":"error"' in line or '"level":"warning"' in line:
                self.recent.append(line.rstrip()[:1000])
            elif not line.startswith("{"):
                self.others += 1
                if len(self.other) < 200:
                    self.other.append(line.rstrip()[:1000])
            if any(mark in line for mark in FATAL_MARKS):
                self.fatal += 1
                if len(self.first_fatal) < 20:
                    self.first_fatal.append(line.rstrip()[:400])


def explain(tally: Tally, log: Log) -> None:
    """The Worker's log lines of each unexpected 5xx not explained yet (before they roll off)."""
    for entry in tally.unexpected_5xx:
        rid = entry.split(" ", 4)[3]
        if rid and rid not in tally.explained:
            found = [line for line in list(log.recent) if f'"request_id":"{rid}"' in line]
            if found:
                tally.explained[rid] = found


def chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}], **extra}


# (status, body, x-request-id): the id finds the Worker's own log lines for an unexpected 5xx.
Answer = tuple[int, bytes, str]


def answer(r: httpx.Response, body: bytes) -> Answer:
    return r.status_code, body, r.headers.get("x-request-id", "")


async def post(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> Answer:
    r = await client.post(path, json=body)
    return answer(r, r.content)


async def stream_all(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], slow: float = 0.0
) -> Answer:
    async with client.stream("POST", path, json=body) as r:
        parts = []
        # Decoded: an error answer may come compressed, and its body is what the report shows.
        async for chunk in r.aiter_bytes():
            parts.append(chunk)
            if slow:
                await asyncio.sleep(slow)
        return answer(r, b"".join(parts))


async def leave_early(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> Answer:
    """A client that reads the first bytes of a long answer and closes the connection."""
    async with client.stream("POST", path, json=body) as r:
        async for chunk in r.aiter_raw():
            return answer(r, chunk)
        return answer(r, b"")


Send = Callable[[httpx.AsyncClient, random.Random, int], Awaitable[Answer]]


def fuzz_body(seed: int) -> Send:
    async def send(client: httpx.AsyncClient, rng: random.Random, i: int) -> Answer:
        path, body = body_at(seed, i)
        r = await client.post(path, content=body, headers=JSON)
        return answer(r, r.content)

    return send


def tokens(rng: random.Random) -> str:
    return f"[[tokens:{rng.randint(1, 12)}]] hello"


# (kind, weight, 5xx statuses that kind may answer, how to send it)
MIX: list[tuple[str, int, frozenset[int], Send]] = [
    ("fuzz", 14, frozenset(), fuzz_body(22)),
    ("chat_stream", 14, frozenset(), lambda c, r, i: stream_all(c, CHAT, chat(tokens(r)))),
    (
        "chat_reasoning",
        4,
        frozenset(),
        lambda c, r, i: stream_all(c, CHAT, chat("[[think:3]] hi", model=REASONER, max_tokens=12)),
    ),
    (
        "openai_stream",
        10,
        frozenset(),
        lambda c, r, i: stream_all(c, COMPLETIONS, chat(tokens(r), stream=True)),
    ),
    ("openai_whole", 8, frozenset(), lambda c, r, i: post(c, COMPLETIONS, chat(tokens(r)))),
    (
        "openai_tools",
        2,
        frozenset(),
        lambda c, r, i: stream_all(
            c,
            COMPLETIONS,
            chat(
                "[[tool:get_weather]] weather?",
                stream=True,
                model=REASONER,
                tools=[
                    {
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "parameters": {
                                "type": "object",
                                "properties": {"city": {"type": "string"}},
                            },
                        },
                    }
                ],
            ),
        ),
    ),
    (
        "cancel_chat",
        5,
        frozenset(),
        lambda c, r, i: leave_early(c, CHAT, chat("[[tokens:400]] [[pace:5]] long")),
    ),
    (
        "cancel_openai",
        3,
        frozenset(),
        lambda c, r, i: leave_early(
            c, COMPLETIONS, chat("[[tokens:400]] [[pace:5]] long", stream=True)
        ),
    ),
    (
        "slow_reader",
        2,
        frozenset(),
        lambda c, r, i: stream_all(c, CHAT, chat("[[tokens:20]] [[pace:0]] slow"), slow=0.01),
    ),
    ("error_3040", 3, frozenset(), lambda c, r, i: post(c, CHAT, chat("[[error:3040]] busy"))),
    (
        "error_5007",
        1,
        frozenset({502}),
        lambda c, r, i: post(c, COMPLETIONS, chat("[[error:5007]] gone")),
    ),
    ("error_5021", 1, frozenset(), lambda c, r, i: post(c, CHAT, chat("[[error:5021]] long"))),
    ("fault_throw", 2, frozenset({502}), lambda c, r, i: post(c, CHAT, chat("[[fault:throw]] x"))),
    (
        "fault_midstream",
        3,
        frozenset(),
        lambda c, r, i: stream_all(c, CHAT, chat("[[fault:midstream]] [[tokens:8]] x")),
    ),
    (
        "fault_midstream_whole",
        1,
        frozenset({502}),
        lambda c, r, i: post(c, COMPLETIONS, chat("[[fault:midstream]] [[tokens:8]] x")),
    ),
    (
        "fault_malformed",
        2,
        frozenset(),
        lambda c, r, i: stream_all(
            c, COMPLETIONS, chat("[[fault:malformed]] [[tokens:6]] x", stream=True)
        ),
    ),
    (
        "fault_nodone",
        1,
        frozenset(),
        lambda c, r, i: stream_all(c, CHAT, chat("[[fault:nodone]] [[tokens:6]] x")),
    ),
    (
        "fault_split",
        2,
        frozenset(),
        lambda c, r, i: stream_all(c, CHAT, chat("[[fault:split]] [[tokens:12]] x")),
    ),
    (
        "fault_nostream",
        1,
        frozenset(),
        lambda c, r, i: stream_all(c, CHAT, chat("[[fault:nostream]] [[tokens:6]] x")),
    ),
    ("models", 4, frozenset(), lambda c, r, i: get(c, "/api/v1/models")),
    ("health", 2, frozenset(), lambda c, r, i: get(c, "/api/v1/health")),
    ("v1_models", 2, frozenset(), lambda c, r, i: get(c, "/v1/models")),
    ("not_found", 2, frozenset(), lambda c, r, i: get(c, "/api/nope")),
    ("bad_json", 4, frozenset(), lambda c, r, i: raw_post(c, CHAT, b'{"messages": [')),
]


async def get(client: httpx.AsyncClient, path: str) -> Answer:
    r = await client.get(path)
    return answer(r, r.content)


async def raw_post(client: httpx.AsyncClient, path: str, body: bytes) -> Answer:
    r = await client.post(path, content=body, headers=JSON)
    return answer(r, r.content)


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children[ppid].append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def workerd_rss(launcher: int) -> int:
    """Bytes resident in the workerd processes under the launcher."""
    total = 0
    for pid in descendants(launcher):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() != "workerd":
                continue
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        m = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
        total += int(m.group(1)) * 1024 if m else 0
    return total


def start(pyodide_dir: str, log: Log) -> tuple[subprocess.Popen[str], str, str]:
    env = dict(os.environ, WORKERD_PYODIDE_DIR=pyodide_dir)
    proc = subprocess.Popen(
        [
            "node",
            "local/launch.mjs",
            "--port",
            "0",
            "--snapshot",
            "off",
            "--pace",
            "1",
            "--ratelimit",
            "1000000000/10",
            "--exit-on-stdin-eof",
        ],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 180
    for line in proc.stdout:
        if '"message":"ready"' in line:
            ready = json.loads(line)
            threading.Thread(target=log.read, args=(proc.stdout,), daemon=True).start()
            return proc, str(ready["url"]).rstrip("/"), str(ready["model"]).rstrip("/")
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise SystemExit("the launcher did not get ready")


async def sample(
    client: httpx.AsyncClient,
    model_url: str,
    launcher: int,
    done: int,
    t0: float,
    tally: Tally,
    log: Log,
) -> dict[str, Any]:
    # Let what is in flight end (relays release their proxies on the next turn), then read.
    deadline = time.monotonic() + 10
    while True:
        stats: dict[str, Any] = (await client.get("/__local/stats", timeout=60)).json()
        if stats["live"] == 0 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    # The built-in model keeps what it received, for tests: let it go, it is not the Worker.
    await client.delete(model_url + "/__local/calls")
    return {
        "requests": done,
        "seconds": round(time.monotonic() - t0, 1),
        "py_objects": stats["py_objects"],
        "gc_collected": stats.get("gc_collected"),
        "py_types": stats["py_types"],
        "live": stats["live"],
        "relays": stats["relays"],
        "relays_ended": stats["relays_ended"],
        "wasm_memory": stats.get("wasm_memory_bytes"),
        "stack_pointer": stats.get("wasm_stack_pointer"),
        "rss": workerd_rss(launcher),
        "fatal": log.fatal,
        "unexpected_5xx": len(tally.unexpected_5xx),
        "no_answer": sum(tally.no_answer.values()),
    }


async def soak(
    args: argparse.Namespace, out: Path, url: str, model_url: str, launcher: int, log: Log
) -> tuple[list[dict[str, Any]], Tally]:
    rng = random.Random(args.seed)
    kinds = [m for m in MIX for _ in range(m[1]) if not args.kinds or m[0] in args.kinds]
    tally = Tally()
    samples: list[dict[str, Any]] = []
    # A connection idle for a few seconds (while a sample is taken) is not reused: httpx keeps
    # one 5 s by default, and a request sent as the server closes an idle connection gets no
    # answer, which is the client's race, not the Worker's (bench/notes/2026-11-24-soak.md).
    limits = httpx.Limits(
        max_connections=args.concurrency,
        max_keepalive_connections=args.concurrency,
        keepalive_expiry=1.0,
    )
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        t0 = time.monotonic()
        samples.append(await sample(client, model_url, launcher, 0, t0, tally, log))
        batch = max(1, args.requests // args.samples)
        done = 0
        while done < args.requests:
            todo = list(range(done, min(done + batch, args.requests)))
            todo.reverse()

            async def worker(todo: list[int] = todo) -> None:
                while todo:
                    i = todo.pop()
                    kind, _, allowed, send = rng.choice(kinds)
                    tally.by_kind[kind] += 1
                    try:
                        status, body, rid = await send(client, rng, i)
                    except httpx.HTTPError as exc:
                        tally.no_answer[f"{kind} {type(exc).__name__}"] += 1
                        continue
                    tally.statuses[f"{kind} {status}"] += 1
                    if (
                        status >= 500
                        and status not in allowed
                        and len(tally.unexpected_5xx) < 10_000
                    ):
                        tally.unexpected_5xx.append(f"#{i} {kind} {status} {rid} {body[:200]!r}")

            await asyncio.gather(*(worker() for _ in range(args.concurrency)))
            done = min(done + batch, args.requests)
            explain(tally, log)
            s = await sample(client, model_url, launcher, done, t0, tally, log)
            samples.append(s)
            print(
                f"[soak] {done:>7} requests {s['seconds']:>7.1f} s  objects {s['py_objects']}  wasm {s['wasm_memory'] / 2**20:.1f} MiB"
                f"  sp {s['stack_pointer']}  rss {s['rss'] / 2**20:.0f} MiB  fatal {s['fatal']}  5xx {s['unexpected_5xx']}"
                f"  no answer {s['no_answer']}  relay pipes alive {s['py_types'].get('RelayPipe', 0)}",
                flush=True,
            )
            # Written after every batch, so a run stopped early still leaves its figures.
            write_outputs(args, out, samples, tally, log, time.monotonic() - t0)
            if log.fatal:
                print("[soak] workerd reported a fatal error: stopping", flush=True)
                break
    return samples, tally


def write_outputs(
    args: argparse.Namespace,
    out: Path,
    samples: list[dict[str, Any]],
    tally: Tally,
    log: Log,
    took: float,
) -> str:
    (out / "samples.json").write_text(
        json.dumps(
            {
                "samples": samples,
                "statuses": dict(tally.statuses),
                "unexpected_5xx": tally.unexpected_5xx[:200],
                "no_answer": dict(tally.no_answer),
                "fatal_lines": log.first_fatal,
                "unexpected_5xx_log": tally.explained,
                "other_lines": log.other,
            },
            indent=1,
        )
    )
    text = report(args, out, samples, tally, log, took)
    plot(out, samples)
    return text


def growth(first: dict[str, Any], last: dict[str, Any]) -> list[tuple[str, int, int]]:
    names = set(first["py_types"]) | set(last["py_types"])
    rows = [(n, int(first["py_types"].get(n, 0)), int(last["py_types"].get(n, 0))) for n in names]
    return sorted((r for r in rows if r[1] != r[2]), key=lambda r: -abs(r[2] - r[1]))[:20]


def report(
    args: argparse.Namespace,
    out: Path,
    samples: list[dict[str, Any]],
    tally: Tally,
    log: Log,
    took: float,
) -> str:
    first, warm, last = samples[0], samples[min(1, len(samples) - 1)], samples[-1]
    done = last["requests"]
    mib = 2**20
    lines = [
        f"# Soak: {done:,} requests on one isolate ({datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC)"
        + ("" if done >= args.requests else f" (of {args.requests:,} asked: figures so far)"),
        "",
        f"`python bench/soak.py --requests {args.requests} --concurrency {args.concurrency} --samples {args.samples} --seed {args.seed}`,"
        f" Pyodide bundle `{args.pyodide_dir}`; {took / 60:.1f} min, {done / took:.0f} requests/s.",
        "",
        f"- fatal Pyodide errors in workerd's output: **{log.fatal}**",
        f"- unexpected 5xx: **{len(tally.unexpected_5xx)}**; requests with no answer (connection reset/closed): {sum(tally.no_answer.values())}"
        + (f" ({dict(tally.no_answer.most_common(6))})" if tally.no_answer else ""),
        f"- Wasm stack pointer: {first['stack_pointer']} -> {last['stack_pointer']}"
        f" ({(first['stack_pointer'] - last['stack_pointer']) / max(done, 1):+.2f} bytes per request)",
        f"- Python objects after gc.collect(): {first['py_objects']:,} at start, {warm['py_objects']:,} after the first batch,"
        f" {last['py_objects']:,} at the end ({(last['py_objects'] - warm['py_objects']) / max(done - warm['requests'], 1):+.4f} per request after the first batch)",
        f"- Wasm memory: {first['wasm_memory'] / mib:.1f} -> {warm['wasm_memory'] / mib:.1f} -> {last['wasm_memory'] / mib:.1f} MiB;"
        f" workerd RSS {first['rss'] / mib:.0f} -> {warm['rss'] / mib:.0f} -> {last['rss'] / mib:.0f} MiB",
        f"- relays made {last['relays']:,}, ended {last['relays_ended']:,}, live at the end {last['live']}",
        "",
        "| requests | s | Python objects | freed by gc.collect() | Wasm MiB | stack pointer | workerd RSS MiB | fatal | unexpected 5xx | no answer |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in samples:
        lines.append(
            f"| {s['requests']:,} | {s['seconds']} | {s['py_objects']:,} | {s['gc_collected']} | {s['wasm_memory'] / mib:.2f} |"
            f" {s['stack_pointer']} | {s['rss'] / mib:.0f} | {s['fatal']} | {s['unexpected_5xx']} | {s['no_answer']} |"
        )
    lines += ["", "Python object types whose count changed from the first batch to the end:", ""]
    lines += ["| type | after batch 1 | end |", "|---|---|---|"]
    lines += [f"| {n} | {a} | {b} |" for n, a, b in growth(warm, last)] or ["| (none) | | |"]
    lines += ["", "Per-request types after gc.collect():", ""]
    lines += ["| type | start | after batch 1 | end | most at a sample |", "|---|---|---|---|---|"]
    for name in PER_REQUEST:
        counts = [int(s["py_types"].get(name, 0)) for s in samples]
        lines.append(
            f"| {name} | {counts[0]} | {counts[min(1, len(counts) - 1)]} | {counts[-1]} | {max(counts)} |"
        )
    lines += ["", "Requests by kind and status:", "", "| kind | statuses |", "|---|---|"]
    per_kind: dict[str, list[str]] = collections.defaultdict(list)
    for key, n in sorted(tally.statuses.items()):
        kind, status = key.rsplit(" ", 1)
        per_kind[kind].append(f"{status}: {n:,}")
    lines += [f"| {k} | {', '.join(v)} |" for k, v in per_kind.items()]
    if tally.unexpected_5xx:
        lines += ["", "First unexpected 5xx (the Worker's log lines of each below it):", ""]
        for u in tally.unexpected_5xx[:10]:
            lines.append(f"- `{u}`")
            lines += [f"  - `{line}`" for line in tally.explained.get(u.split(" ", 4)[3], [])]
    if log.other:
        lines += [
            "",
            f"Lines of workerd's output that are not the Worker's ({log.others}), the first:",
            "",
        ]
        lines += ["```", *log.other[:20], "```"]
    if log.first_fatal:
        lines += ["", "First fatal lines:", "", "```", *log.first_fatal, "```"]
    text = "\n".join(lines) + "\n"
    (out / "soak.md").write_text(text)
    return text


def plot(out: Path, samples: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [s["requests"] / 1000 for s in samples]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    panels = [
        (axes[0][0], "Python objects after gc.collect()", [s["py_objects"] for s in samples]),
        (axes[0][1], "Wasm memory (MiB)", [s["wasm_memory"] / 2**20 for s in samples]),
        (axes[1][0], "Wasm stack pointer (bytes)", [s["stack_pointer"] for s in samples]),
        (axes[1][1], "workerd RSS (MiB)", [s["rss"] / 2**20 for s in samples]),
    ]
    for ax, title, y in panels:
        ax.plot(x, y, marker=".")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("requests (thousands)")
    fatal, bad = samples[-1]["fatal"], samples[-1]["unexpected_5xx"]
    fig.suptitle(
        f"Soak on one isolate: {samples[-1]['requests']:,} requests, {fatal} fatal errors, {bad} unexpected 5xx"
    )
    fig.tight_layout()
    fig.savefig(out / "soak.png", dpi=90)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--short", action="store_true", help="a quick check: 3,000 requests, 6 samples")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--pyodide-dir", default=os.environ.get("WORKERD_PYODIDE_DIR", ""))
    ap.add_argument("--out", default="")
    ap.add_argument(
        "--kinds",
        type=lambda text: set(text.split(",")),
        default=set(),
        help="only these kinds of the mix, comma-separated (a targeted run)",
    )
    args = ap.parse_args()
    if unknown := args.kinds - {m[0] for m in MIX}:
        ap.error(f"--kinds {sorted(unknown)} not in the mix: {[m[0] for m in MIX]}")
    if args.short:
        args.requests, args.samples = 3000, 6
    out = Path(
        args.out
        or ROOT / ".cache" / "soak" / f"{datetime.datetime.now(datetime.UTC):%Y%m%dT%H%M%S}"
    )
    out.mkdir(parents=True, exist_ok=True)
    log = Log()
    proc, url, model_url = start(args.pyodide_dir, log)
    print(
        f"[soak] {url} (Pyodide bundle {args.pyodide_dir or 'downloaded'}); {args.requests:,} requests, {args.concurrency} at once; out {out}",
        flush=True,
    )
    t0 = time.monotonic()
    try:
        samples, tally = asyncio.run(soak(args, out, url, model_url, proc.pid, log))
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    print(write_outputs(args, out, samples, tally, log, time.monotonic() - t0))
    print(f"[soak] wrote {out}/soak.md, soak.png, samples.json")
    if log.fatal or tally.unexpected_5xx:
        sys.exit(1)


if __name__ == "__main__":
    main()
