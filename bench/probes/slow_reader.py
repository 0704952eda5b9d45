"""Slow readers on workerd (issue 35): where a paused client's backlog sits, and how big.

    .venv/bin/python bench/probes/slow_reader.py [--port 8835] [--fresh] [--tokens 50000]
        [--paced-tokens 7500] [--pause 40] [--clients 10] [--only NAME ...] [--repeat R]
        [--out FILE]

Starts `node local/launch.mjs --pace 0` on --port (the real Ai class, the built-in model in a
process of its own; --fresh: a new one for each group of scenarios, so each RSS figure starts
from a fresh workerd) and runs on /api/v1/chat ("chat") and /v1/chat/completions ("v1"):

- "fast":         one client reads an answer of --tokens tokens (sent at once) as it comes;
- "slow":         the same request on a socket with a 4 KiB receive buffer, nothing read for
                  --pause seconds, then everything;
- "fast xN", "slow xN" (and "slow xN again", on the same workerd): --clients of them at once;
- "paced fast", "paced slow": --paced-tokens tokens at 150 tok/s ([[rate:150]]);
- "chat paced leave", "v1 paced leave", "chat paced leave xN": paused paced clients that close
  their sockets unread after half the pause; "v1 leave xN" the same with answers sent at once.

Every second it samples workerd's RSS and the model's (/proc/<pid>/status), the Worker's
/__local/stats (live relays, relays ended, clients gone, window reads, Wasm memory), the
model's /__local/calls (chunks sent: does the model keep sending while the client does not
read?) and the kernel's socket queues (/proc/net/tcp: bytes queued on both ends of the
clients' connections and of the model's). A slow client's bytes must equal a fast read's (ids
and `created` masked on /v1), end with `done` / `[DONE]` and hold every token. Prints one JSON
line per sample and one summary line ("## ") per scenario; exits 1 when an answer was wrong.
Figures: bench/notes/2026-11-26-slow-readers.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MODEL = "@cf/google/gemma-4-26b-a4b-it"
CHAT = "/api/v1/chat"
COMPLETIONS = "/v1/chat/completions"
RCVBUF = 4096  # the slow client's receive buffer (the kernel doubles it)


# --- processes and kernel queues -------------------------------------------------------------


def find_pid(pattern: str, parent: int | None = None) -> int | None:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        if pattern not in cmd:
            continue
        ppid = int(re.search(r"PPid:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
        if parent is None or ppid == parent:
            return int(entry)
    return None


def rss_kb(pid: int | None) -> int:
    if pid is None:
        return -1
    try:
        m = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    except OSError:
        return -1
    return int(m.group(1)) if m else -1


def tcp_table() -> list[tuple[int, int, int, int]]:
    """(local port, remote port, tx_queue, rx_queue) of every IPv4 TCP socket."""
    rows = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        lport = int(f[1].split(":")[1], 16)
        rport = int(f[2].split(":")[1], 16)
        tx, rx = (int(x, 16) for x in f[4].split(":"))
        rows.append((lport, rport, tx, rx))
    return rows


def load_avg() -> str:
    return Path("/proc/loadavg").read_text().split(" 1/")[0].rsplit(" ", 1)[0]


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


# --- one HTTP/1.1 client on a raw socket -----------------------------------------------------


def dechunk(raw: bytes) -> tuple[int, bytes]:
    head, _, rest = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" not in head.lower():
        return status, rest
    out = bytearray()
    at = 0
    while True:
        eol = rest.index(b"\r\n", at)
        size = int(rest[at:eol].split(b";")[0], 16)
        if size == 0:
            return status, bytes(out)
        out += rest[eol + 2 : eol + 2 + size]
        at = eol + 2 + size + 2


@dataclass
class Client:
    port: int
    path: str
    prompt: str
    max_tokens: int
    small_buffer: bool = True
    sock: socket.socket = field(init=False)
    local_port: int = 0
    raw: bytes = b""
    opened: float = 0.0
    first_read: float = 0.0
    body_end: float = 0.0  # when the chunked body's last chunk came
    done_at: float = 0.0  # when the connection closed

    def open(self) -> None:
        body: dict[str, Any] = {
            "messages": [{"role": "user", "content": self.prompt}],
            "max_tokens": self.max_tokens,
        }
        if self.path == COMPLETIONS:
            body.update(model=MODEL, stream=True)
        data = json.dumps(body).encode()
        s = socket.socket()
        if self.small_buffer:  # before connect: it sets the window the client offers
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        s.connect(("127.0.0.1", self.port))
        self.local_port = s.getsockname()[1]
        s.sendall(
            b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s"
            % (self.path.encode(), len(data), data)
        )
        self.sock = s
        self.opened = time.time()

    def read_all(self) -> None:
        self.first_read = time.time()
        parts = []
        tail = b""
        while chunk := self.sock.recv(1 << 16):
            parts.append(chunk)
            tail = (tail + chunk)[-7:]
            if not self.body_end and tail.endswith(b"\r\n0\r\n\r\n"):
                self.body_end = time.time()
        self.sock.close()
        self.raw = b"".join(parts)
        self.done_at = time.time()

    def leave(self) -> None:
        self.sock.close()


def masked(path: str, body: bytes) -> bytes:
    if path == COMPLETIONS:
        body = re.sub(rb'"id":"chatcmpl-[0-9a-f]+"', b'"id":"chatcmpl-X"', body)
        body = re.sub(rb'"created":\d+', b'"created":0', body)
    return body


def complete(path: str, body: bytes, tokens: int) -> str | None:
    """None when the answer is whole, else what is wrong."""
    if path == CHAT:
        if not body.endswith(b"event: done\ndata: {}\n\n"):
            return f"does not end with done: {body[-120:]!r}"
        n = body.count(b"event: content_block_delta\n")
        if n != tokens:
            return f"{n} deltas, not {tokens}"
        if b'"index":%d,' % (tokens - 1) not in body or b'"stop_reason":"stop"' not in body:
            return "last index or stop_reason missing"
    else:
        if not body.endswith(b"data: [DONE]\n\n"):
            return f"does not end with [DONE]: {body[-120:]!r}"
        n = body.count(b'"delta":{"content":')
        if n != tokens:
            return f"{n} content deltas, not {tokens}"
        if b'"finish_reason":"stop"' not in body:
            return "no finish_reason stop"
    return None


# --- the runtime and the sampler -------------------------------------------------------------


class Runtime:
    def __init__(self, port: int) -> None:
        node = sorted((ROOT / ".cache" / "bootstrap" / "node" / "node_modules").glob("node-*/bin"))
        env = dict(os.environ)
        if node:
            env["PATH"] = f"{node[-1]}{os.pathsep}{env['PATH']}"
        args = ["node", "local/launch.mjs", "--port", str(port), "--pace", "0"]
        args += ["--exit-on-stdin-eof", "--ratelimit", "1000000/60"]
        args += ["--var", "AI_MAX_TOKENS_LIMIT=1000000", "--var", "AI_MAX_TOKENS_DEFAULT=1024"]
        self.proc = subprocess.Popen(
            args, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{") and '"message":"ready"' in line:
                ready = json.loads(line)
                break
        else:
            raise SystemExit("the launcher did not start")
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.model_url = str(ready["model"]).rstrip("/")
        self.model_port = int(self.model_url.rsplit(":", 1)[1])
        self.workerd = find_pid(f"--socket-addr=entry=127.0.0.1:{port}")
        self.model = find_pid("local/model.mjs", parent=self.proc.pid)

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=20)


class Sampler:
    """One sample a second, in a thread, until stop()."""

    def __init__(self, rt: Runtime, clients: list[Client], marker: str) -> None:
        self.rt = rt
        self.clients = clients
        self.marker = marker
        self.samples: list[dict[str, Any]] = []
        self.t0 = time.time()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def sample(self) -> dict[str, Any]:
        rt = self.rt
        stats = get_json(rt.url + "/__local/stats")
        calls = [
            c
            for c in get_json(rt.model_url + "/__local/calls")
            if self.marker in json.dumps(c["inputs"].get("messages", ""))
        ]
        tcp = tcp_table()
        ports = {c.local_port for c in self.clients}
        s = {
            "t": round(time.time() - self.t0, 1),
            "workerd_rss_mb": round(rss_kb(rt.workerd) / 1024, 1),
            "model_rss_mb": round(rss_kb(rt.model) / 1024, 1),
            "wasm_mb": round(stats.get("wasm_memory_bytes", 0) / 2**20, 1),
            "live": stats["live"],
            "relays": stats["relays"],
            "relays_ended": stats["relays_ended"],
            "clients_gone": stats["clients_gone"],
            "window_reads": stats["window_reads"],
            # the model's side: chunks written by all calls of this scenario, how many finished
            "model_chunks_sent": sum(c["chunksSent"] for c in calls),
            "model_chunks_total": sum(c["chunksTotal"] for c in calls),
            "model_finished": sum(c["finishedAt"] is not None for c in calls),
            "model_closed_early": sum(c["clientClosedAt"] is not None for c in calls),
            # kernel queues: workerd -> client (send queue on workerd's socket + the client's
            # receive queue), model -> workerd (model's send queue + workerd's receive queue)
            "kq_client_kb": round(
                sum(
                    tx + rx
                    for lp, rp, tx, rx in tcp
                    if (lp == rt.port and rp in ports) or (lp in ports and rp == rt.port)
                )
                / 1024,
                1,
            ),
            "kq_model_kb": round(
                sum(tx + rx for lp, rp, tx, rx in tcp if rt.model_port in (lp, rp)) / 1024, 1
            ),
        }
        return s

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                s = self.sample()
            except Exception as exc:  # a sample lost is not a result lost
                s = {"t": round(time.time() - self.t0, 1), "error": repr(exc)}
            self.samples.append(s)
            print(json.dumps(s), flush=True)
            self._stop.wait(max(0.0, 1.0 - (time.time() - self.t0) % 1.0))

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        self._thread.join()
        return self.samples


# --- scenarios -------------------------------------------------------------------------------


def prompt(tokens: int, rate: int, tag: str) -> str:
    # [[rate:0]] is no rate (the launcher's --pace 0: at once): the same word count, so the
    # same usage, as the paced prompt; the tag is one word too.
    return f"[[tokens:{tokens}]][[rate:{rate}]] {tag}"


def run_scenario(
    rt: Runtime,
    name: str,
    path: str,
    tokens: int,
    rate: int,
    n: int,
    pause: float,
    mode: str,
) -> dict[str, Any]:
    """mode: fast (read at once), slow (pause, then read), leave (pause/2, then close)."""
    marker = f"{name.replace(' ', '-')}-{int(time.time() * 1000)}"
    clients = [
        Client(rt.port, path, prompt(tokens, rate, f"{marker}-{i}"), tokens + 100, mode != "fast")
        for i in range(n)
    ]
    time.sleep(2)
    base = Sampler(rt, [], "-none-").sample()
    print(f"# {name}: {path}, {n} x {tokens} tokens, rate {rate or 'at once'}, {mode}", flush=True)
    sampler = Sampler(rt, clients, marker)
    for c in clients:
        c.open()
    sampler.start()
    left_at = 0.0
    if mode == "fast":
        threads = [threading.Thread(target=c.read_all) for c in clients]
    elif mode == "slow":
        time.sleep(pause)
        threads = [threading.Thread(target=c.read_all) for c in clients]
    else:
        time.sleep(pause / 2)
        left_at = time.time()
        for c in clients:
            c.leave()
        threads = []
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # after: until the Worker's relays are all released and the model's calls settled, then 5 s
    deadline = time.time() + 60
    while time.time() < deadline:
        last = sampler.samples[-1] if sampler.samples else {}
        if (
            last.get("live") == 0
            and last.get("model_finished", 0) + last.get("model_closed_early", 0) >= n
        ):
            break
        time.sleep(0.5)
    time.sleep(5)
    samples = sampler.stop()
    calls = [
        c for c in get_json(rt.model_url + "/__local/calls") if marker in json.dumps(c["inputs"])
    ]
    result: dict[str, Any] = {
        "name": name,
        "path": path,
        "tokens": tokens,
        "rate": rate,
        "clients": n,
        "mode": mode,
        "pause_s": pause if mode != "fast" else 0,
        "load_before": base,
        "samples": samples,
        "loadavg": load_avg(),
    }
    good = [s for s in samples if "error" not in s]
    result["workerd_rss_mb_before"] = base["workerd_rss_mb"]
    result["workerd_rss_mb_peak"] = max(s["workerd_rss_mb"] for s in good)
    result["workerd_rss_mb_after"] = good[-1]["workerd_rss_mb"]
    result["wasm_mb_peak"] = max(s["wasm_mb"] for s in good)
    result["kq_client_kb_peak"] = max(s["kq_client_kb"] for s in good)
    result["kq_model_kb_peak"] = max(s["kq_model_kb"] for s in good)
    result["live_after"] = good[-1]["live"]
    # when the model finished (s after the requests were sent) and when the relays ended
    t0 = clients[0].opened
    finished = [c["finishedAt"] / 1000 - t0 for c in calls if c["finishedAt"] is not None]
    result["model_finished_s"] = round(max(finished), 1) if finished else None
    ended = [s["t"] for s in good if s["relays_ended"] - base["relays_ended"] >= n]
    result["relays_ended_s"] = ended[0] if ended else None
    if mode == "leave":
        closed = [c["clientClosedAt"] / 1000 - left_at for c in calls if c["clientClosedAt"]]
        result["model_closed_after_leave_ms"] = [round(x * 1000) for x in closed]
        result["model_chunks_at_close"] = [(c["chunksAtClose"], c["chunksTotal"]) for c in calls]
        result["clients_gone"] = good[-1]["clients_gone"] - base["clients_gone"]
    else:
        bodies = []
        for c in clients:
            status, body = dechunk(c.raw)
            bodies.append(body)
            problem = complete(path, body, tokens) if status == 200 else f"status {status}"
            result.setdefault("problems", []).append(problem)
        result["body_bytes"] = [len(b) for b in bodies]
        # from the first read to the body's end, and to the connection's close
        result["read_s"] = [round(c.body_end - c.first_read, 1) for c in clients]
        result["eof_s"] = [round(c.done_at - c.first_read, 1) for c in clients]
        result["bodies"] = [masked(path, b) for b in bodies]
        result["ok"] = all(p is None for p in result["problems"])
    return result


def summary(r: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in r.items() if k not in ("samples", "bodies", "load_before")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8835)
    ap.add_argument("--tokens", type=int, default=50000)
    ap.add_argument("--paced-tokens", type=int, default=7500)
    ap.add_argument("--pause", type=float, default=40.0)
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--fresh", action="store_true", help="a new workerd for each group")
    ap.add_argument("--only", nargs="*", help="scenario names to run (default: all)")
    ap.add_argument("--repeat", type=int, default=1, help="run the scenarios this many times")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    n = args.clients
    Plan = list[tuple[str, str, int, int, int, str]]
    groups: list[Plan] = []
    for path in (CHAT, COMPLETIONS):
        door = "chat" if path == CHAT else "v1"
        groups += [
            [(f"{door} fast", path, args.tokens, 0, 1, "fast")],
            [(f"{door} slow", path, args.tokens, 0, 1, "slow")],
            [(f"{door} fast x{n}", path, args.tokens, 0, n, "fast")],
            # twice on one workerd: what the first left, the second reuses (or not)
            [
                (f"{door} slow x{n}", path, args.tokens, 0, n, "slow"),
                (f"{door} slow x{n} again", path, args.tokens, 0, n, "slow"),
            ],
            [(f"{door} paced fast", path, args.paced_tokens, 150, 1, "fast")],
            [(f"{door} paced slow", path, args.paced_tokens, 150, 1, "slow")],
        ]
    groups += [
        [(f"chat paced slow x{n}", CHAT, args.paced_tokens, 150, n, "slow")],
        [
            ("chat paced leave", CHAT, args.paced_tokens, 150, 1, "leave"),
            ("v1 paced leave", COMPLETIONS, args.paced_tokens, 150, 1, "leave"),
            (f"chat paced leave x{n}", CHAT, args.paced_tokens, 150, n, "leave"),
        ],
        # at once: the model has long finished; what the leave releases is the body's backlog
        [(f"v1 leave x{n}", COMPLETIONS, args.tokens, 0, n, "leave")],
    ]
    groups = [[s for s in g if not args.only or s[0] in args.only] for g in groups]
    groups = [g for g in groups if g]
    if not args.fresh:
        groups = [[s for g in groups for s in g]]
    groups = [
        [
            (f"{s[0]} #{i + 1}" if args.repeat > 1 else s[0], *s[1:])
            for i in range(args.repeat)
            for s in g
        ]
        for g in groups
    ]
    results: list[dict[str, Any]] = []
    # The reference bytes of each answer: a fast read at once, on the same workerd after the
    # scenario (the pace does not change the bytes: one event per token either way).
    refs: dict[tuple[str, int], bytes] = {}
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, load {load_avg()}")
    for group in groups:
        rt = Runtime(args.port)
        print(f"# workerd pid {rt.workerd}, model pid {rt.model}, load {load_avg()}", flush=True)
        try:
            for name, path, tokens, rate, k, mode in group:
                r = run_scenario(rt, name, path, tokens, rate, k, args.pause, mode)
                if mode == "fast" and rate == 0:
                    refs[(path, tokens)] = r["bodies"][0]
                if mode != "leave":
                    if (path, tokens) not in refs:
                        ref = run_scenario(rt, "ref", path, tokens, 0, 1, 0, "fast")
                        refs[(path, tokens)] = ref["bodies"][0]
                    r["problems"] = [
                        p
                        or (None if b == refs[(path, tokens)] else "bytes differ from a fast read")
                        for p, b in zip(r["problems"], r["bodies"], strict=True)
                    ]
                    r["ok"] = all(p is None for p in r["problems"])
                results.append(r)
                print("## " + json.dumps(summary(r)), flush=True)
        finally:
            rt.stop()
    print("\n# summary")
    for r in results:
        print(json.dumps(summary(r)))
    if args.out:
        args.out.write_text(json.dumps([summary(r) | {"samples": r["samples"]} for r in results]))
    sys.exit(0 if all(r.get("ok", True) for r in results) else 1)


if __name__ == "__main__":
    main()
