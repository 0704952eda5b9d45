#!/usr/bin/env node
// The benchmark on workerd: four Workers, each in its own workerd process (one Miniflare
// instance each), all behind workerd's real Ai class whose remote side is the built-in model
// (local/model.mjs) in a process of its own, so its CPU is never counted. CPU is the workerd
// process's own, read from the OS (/proc/<pid>/stat utime+stime in clock ticks, and the
// nanosecond sum_exec_runtime of its threads from /proc/<pid>/task/*/schedstat). Variants
// run interleaved round by round (A B C D A B C D ...), so host drift spreads over all of them.
//
//   node bench/workerd.mjs [--out .cache/bench/results.json] [--rounds 3] [--quick] [--only a,b]
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values: args } = parseArgs({ strict: process.argv[1] === fileURLToPath(import.meta.url), allowPositionals: true, options: {
  out: { type: "string", default: path.join(ROOT, ".cache", "bench", "results.json") },
  rounds: { type: "string", default: "3" },
  quick: { type: "boolean", default: false },
  only: { type: "string", default: "" },
  // A/B: another copy of src/ (e.g. `git worktree add /tmp/before HEAD~1`, then /tmp/before/src)
  // run as one more variant, python_relay_before, interleaved with the rest.
  "before-src": { type: "string", default: "" },
  // More copies of src/ as variants of their own, repeatable: --src nolog=/tmp/k/nolog/src
  // (knock-out experiments: each is a python_relay with one piece changed, interleaved).
  src: { type: "string", multiple: true, default: [] },
} });
const EXTRA_SRC = Object.fromEntries(args.src.map((spec) => { const i = spec.indexOf("="); return [`py_${spec.slice(0, i)}`, spec.slice(i + 1)]; }));
const QUICK = args.quick;
const ROUNDS = Number(args.rounds);
const ONLY = new Set(args.only ? args.only.split(",") : []);
const wanted = (part) => ONLY.size === 0 || ONLY.has(part);

// The Python variants run on the Worker's runtime (wrangler.toml): Pyodide 314.
const PY_FLAGS = ["python_workers", "python_workers_20260610", "enable_request_signal"];
const NATIVE = "@cf/google/gemma-4-26b-a4b-it";
const REASONING = "@cf/openai/gpt-oss-20b";
const CLK_TCK = 100; // getconf CLK_TCK on Linux
const now = () => performance.timeOrigin + performance.now(); // epoch ms, as the model records
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]; };
const say = (...parts) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${parts.join(" ")}\n`);

// ---------------------------------------------------------------- processes and their CPU

function childrenOf(pid) {
  const out = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === pid) out.push(Number(entry));
    } catch { /* gone */ }
  }
  return out;
}

function comm(pid) {
  try { return fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim(); } catch { return ""; }
}

/** A Miniflare instance on workerd, started from these (v4-shaped) options, with the pid of the
 * workerd process it started (the one whose CPU the benches read). */
export async function startMiniflare(mf, options, label = options.name ?? "a Worker") {
  const before = new Set(childrenOf(process.pid));
  const instance = new mf.Miniflare(mf.convertV4MiniflareOptions({ host: "127.0.0.1", port: 0, log: new mf.Log(mf.LogLevel.WARN), ...options }));
  const url = await instance.ready;
  const fresh = childrenOf(process.pid).filter((p) => !before.has(p));
  const pid = fresh.find((p) => comm(p).startsWith("workerd")) ?? fresh[0];
  if (!pid) throw new Error(`no workerd process found for ${label}`);
  return { instance, url, pid, comm: comm(pid) };
}

/** The probes' loop (bench/probes): POST {kind, n} to `url` for each kind, `rounds` times, and
 * give each kind's µs of the workerd process's CPU per step, a figure per round (after one
 * warm-up request of `warm` steps each). */
export async function stepCosts({ url, pid, kinds, n, rounds, warm }) {
  const run = async (kind, count) => {
    const r = await fetch(url, { method: "POST", body: JSON.stringify({ kind, n: count }) });
    const text = await r.text();
    if (r.status !== 200) throw new Error(`${kind}: ${r.status} ${text.slice(0, 500)}`);
  };
  for (const kind of kinds) await run(kind, warm);
  const rows = {};
  for (let round = 0; round < rounds; round++) {
    for (const kind of kinds) {
      const before = cpuOf(pid).ms;
      await run(kind, n);
      (rows[kind] ??= []).push(((cpuOf(pid).ms - before) * 1000) / n);
    }
  }
  return rows;
}

/** CPU of a process so far: ticks (utime+stime, 10 ms) and ns (its threads' run time). */
export function cpuOf(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const tickMs = ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
  let ns = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try { ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]); } catch { /* thread gone */ }
  }
  return { tickMs, ms: ns / 1e6 };
}

function rssMb(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(status.match(/VmRSS:\s+(\d+)/)?.[1] ?? 0);
  return kb / 1024;
}

export async function startModel() {
  const child = spawn(process.execPath, [path.join(ROOT, "local", "model.mjs"), "--port", "0", "--pace", "0"], { stdio: ["pipe", "pipe", "inherit"] });
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    child.stdout.on("data", (d) => { seen += d; const m = seen.match(/on (http:\/\/127\.0\.0\.1:\d+\/)/); if (m) resolve(m[1]); });
    child.once("exit", (code) => reject(new Error(`model exited ${code}`)));
  });
  return { child, url, pid: child.pid };
}

// ---------------------------------------------------------------- the four Workers

const COMPAT_DATE = "2025-11-01";

async function variantOptions(name, modelUrl) {
  const ai = { binding: "AI", remoteProxyConnectionString: new URL(modelUrl) };
  const workers = path.join(ROOT, "bench", "workers");
  if (name === "python_relay") {
    const { workerOptions } = await import(pathToFileURL(path.join(ROOT, "local", "launch.mjs")).href);
    // Limits raised so that 10,000- and 100,000-token answers are not cut by max_tokens.
    // The rate limit is the deployment's brake, not what is measured: lifted here.
    return workerOptions({ vars: { LOCAL_DEV_STATS: "1", AI_MAX_TOKENS_LIMIT: "200000", AI_MAX_TOKENS_DEFAULT: "120000", UPSTREAM_TIMEOUT_SECONDS: "60" }, modelUrl, ratelimit: { "*": { limit: 1000000000, period: 60 } } });
  }
  if (name === "python_relay_before" || name in EXTRA_SRC) {
    const options = await variantOptions("python_relay", modelUrl);
    if (EXTRA_SRC[name] === "noassets") {
      // The same Worker without [assets]: locally every request then skips miniflare's asset
      // router, whose CPU runs in the same workerd process (on Cloudflare it is not the Worker's).
      const { assets, ...rest } = options;
      return { ...rest, name };
    }
    const dir = path.resolve(name in EXTRA_SRC ? EXTRA_SRC[name] : args["before-src"]);
    const { pythonModules } = await import(pathToFileURL(path.join(ROOT, "local", "launch.mjs")).href);
    return { ...options, name, ...pythonModules(path.join(dir, "entry.py")) };
  }
  if (name === "passthrough") {
    return {
      name, compatibilityDate: COMPAT_DATE, compatibilityFlags: PY_FLAGS,
      modulesRoot: path.join(workers, "passthrough"),
      modules: [{ type: "PythonModule", path: path.join(workers, "passthrough", "entry.py") }], ai,
    };
  }
  if (name === "probe") {
    return {
      name, compatibilityDate: COMPAT_DATE, compatibilityFlags: PY_FLAGS,
      modulesRoot: path.join(workers, "probe"), bindings: { SOME_VAR: "1" },
      modules: [{ type: "PythonModule", path: path.join(workers, "probe", "entry.py") }], ai,
    };
  }
  const script = { js_probe: "js_probe.mjs", js_identity: "js_identity.mjs", js_reframer: "js_reframer.mjs" }[name];
  // miniflare 5 follows no imports from a scriptPath: every module is named.
  const files = name === "js_reframer" ? [script, "reframer.mjs"] : [script];
  const modules = files.map((f) => ({ type: "ESModule", path: path.join(workers, f) }));
  return { name, modules, modulesRoot: workers, compatibilityDate: COMPAT_DATE, compatibilityFlags: ["enable_request_signal"], ai };
}

const PATHS = { python_relay: "/api/v1/chat", python_relay_before: "/api/v1/chat", passthrough: "/", js_identity: "/", js_reframer: "/", ...Object.fromEntries(Object.keys(EXTRA_SRC).map((k) => [k, "/api/v1/chat"])) };

export async function startVariant(name, modelUrl, Miniflare, Log, LogLevel) {
  const started = performance.now();
  // miniflare 5 takes its own options; convertV4MiniflareOptions reads the v4 shape used here.
  const { convertV4MiniflareOptions } = await import("miniflare");
  const options = await variantOptions(name, modelUrl);
  const { instance: mf, url, pid, comm: command } = await startMiniflare({ Miniflare, Log, LogLevel, convertV4MiniflareOptions }, options, name);
  const readyMs = performance.now() - started;
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  return { name, mf, url: new URL(PATHS[name] ?? "/", url), pid, comm: command, agent, readyMs };
}

// ---------------------------------------------------------------- requests

let nonce = 0;

/** A chat request body: answers of `tokens` tokens (half of them reasoning for gpt-oss). */
// A 2 MiB conversation as real clients send one (issue 21): 200k tokens of history and a 1 MB
// image, then a 10-token answer; and the same history too long for gpt-oss's 128k window,
// which the budget refuses (400) after reading, parsing and checking the whole body.
const IMAGE_2MIB = "data:image/png;base64," + Buffer.concat([Buffer.from("\x89PNG\r\n\x1a\n", "latin1"), Buffer.alloc(1_000_000, 7)]).toString("base64");
const HISTORY_2MIB = [{ role: "user", content: "lorem ipsum ".repeat(33_000) }, { role: "assistant", content: "noted ".repeat(66_000) }];
export function bigBody({ refused = false } = {}) {
  const turn = { role: "user", content: [{ type: "text", text: `[[tokens:10]][[pace:0]] run-${++nonce}` }, { type: "image_url", image_url: { url: IMAGE_2MIB } }] };
  return JSON.stringify({ model: refused ? REASONING : NATIVE, messages: [...HISTORY_2MIB, refused ? { role: "user", content: "lorem ipsum ".repeat(110_000) } : turn], max_tokens: 110 });
}

export function chatBody({ tokens, pace = 0, shape = "native", tag = "", wire = "" }) {
  let directive;
  let model;
  if (shape === "native") { directive = `[[tokens:${tokens}]]`; model = NATIVE; }
  else { const think = Math.floor(tokens / 2); directive = `[[think:${think}]][[tokens:${tokens - think}]]`; model = REASONING; }
  const content = `${directive}[[pace:${pace}]]${wire ? `[[wire:${wire}]]` : ""} run-${tag || ++nonce}`;
  return { model, messages: [{ role: "user", content }], max_tokens: tokens + 100 };
}

/**
 * POST a body; resolves with status, byte count, the bytes (keep) and times (epoch ms).
 * leaveAfterFirst: destroy the connection on the first body chunk (a client leaving).
 */
export async function post(variant, body, options = {}) {
  // A kept-alive socket the server closed just as we reused it ends before any response:
  // that is the harness's race, not the Worker's failure, so it is retried once.
  try { return await postOnce(variant, body, options); } catch (err) {
    if (err?.code !== "ECONNRESET" && !/socket hang up/.test(String(err))) throw err;
    return postOnce(variant, body, options);
  }
}

function postOnce(variant, body, { keep = false, leaveAfterFirst = false } = {}) {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const sentAt = now();
    const req = http.request(variant.url, { method: "POST", agent: leaveAfterFirst ? false : variant.agent, headers: { "content-type": "application/json", "content-length": data.length } }, (res) => {
      const parts = [];
      let bytes = 0;
      let firstAt = null;
      res.on("data", (chunk) => {
        if (firstAt === null) {
          firstAt = now();
          if (leaveAfterFirst) {
            req.destroy();
            resolve({ status: res.statusCode, sentAt, firstAt, leftAt: firstAt, bytes: chunk.length });
            return;
          }
        }
        bytes += chunk.length;
        if (keep) parts.push(chunk);
      });
      res.on("end", () => resolve({ status: res.statusCode, sentAt, firstAt, endAt: now(), bytes, body: keep ? Buffer.concat(parts) : null }));
      res.on("error", (err) => { if (!leaveAfterFirst) reject(err); });
    });
    req.on("error", (err) => { if (!leaveAfterFirst) reject(err); else resolve({ status: 0, error: String(err), sentAt, bytes: 0 }); });
    req.end(data);
  });
}

// A streamed POST that dates every token as it arrives (each `variant.marker`, else its event or
// frame marker: the passthrough's model frames, everyone else's content_block_delta events).
export function timedPost(variant, body) {
  const marker = Buffer.from(variant.marker ?? (variant.name === "passthrough" ? "data: {" : "event: content_block_delta"));
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const sentAt = now();
    const req = http.request(variant.url, { method: "POST", agent: variant.agent, headers: { "content-type": "application/json", "content-length": data.length } }, (res) => {
      const parts = [];
      let buffer = Buffer.alloc(0);
      let from = 0;
      const arrivals = [];
      res.on("data", (chunk) => {
        const at = now();
        parts.push(chunk);
        buffer = Buffer.concat([buffer, chunk]);
        let i;
        while ((i = buffer.indexOf(marker, from)) !== -1) { arrivals.push(at); from = i + marker.length; }
      });
      res.on("end", () => resolve({ status: res.statusCode, sentAt, arrivals, bytes: buffer.length, body: Buffer.concat(parts) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(data);
  });
}

// Added delay of each token: arrival - k/rate, less the stream's smallest such offset.
export function delays(arrivals, rate) {
  const offsets = arrivals.map((at, k) => at - (k * 1000) / rate);
  const floor = Math.min(...offsets);
  return offsets.map((o) => o - floor);
}

export async function pool(items, concurrency, fn) {
  const results = new Array(items.length);
  let next = 0;
  async function worker() { while (next < items.length) { const i = next++; results[i] = await fn(items[i], i); } }
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

export function getJson(url, agent) {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: agent ?? false }, (res) => {
      const parts = [];
      res.on("data", (c) => parts.push(c));
      res.on("end", () => { try { resolve(JSON.parse(Buffer.concat(parts).toString("utf8"))); } catch (err) { reject(err); } });
    }).on("error", reject);
  });
}

// ---------------------------------------------------------------- 1. CPU per token and per request

// Each cell: answers of `tokens` tokens, `requests` of them, `concurrency` at a time. Paced cells
// run several streams at once only to keep the wall time down: each token is still its own read.
function cells() {
  const list = [];
  for (const shape of ["native", "reasoning"]) {
    list.push({ shape, tokens: 10, pace: 0, requests: QUICK ? 20 : 40, concurrency: 1 });
    list.push({ shape, tokens: 1000, pace: 0, requests: QUICK ? 3 : 4, concurrency: 1 });
    list.push({ shape, tokens: 10000, pace: 0, requests: 1, concurrency: 1 });
    list.push({ shape, tokens: 10, pace: 2, requests: QUICK ? 20 : 60, concurrency: 10 });
    list.push({ shape, tokens: 1000, pace: 2, requests: QUICK ? 4 : 10, concurrency: 10 });
    // A paced 10,000-token answer takes ~12 s of wall time per variant: native frames only.
    if (shape === "native" && !QUICK) list.push({ shape, tokens: 10000, pace: 1, requests: 1, concurrency: 1 });
  }
  // The same answers on a wire without HTTP chunked framing ([[wire:eof]]): workerd's HTTP client
  // reads every chunk in two (the first read ends 32 bytes into it), and a body read to the
  // connection's close arrives as the socket has it: one read per paced frame, 4 KiB reads at once.
  // How the production binding's frames reach a Worker is not known here; these rows bound it.
  for (const shape of ["native", "reasoning"]) {
    list.push({ shape, tokens: 1000, pace: 2, requests: QUICK ? 4 : 10, concurrency: 10, wire: "eof" });
    list.push({ shape, tokens: 10000, pace: 0, requests: 1, concurrency: 1, wire: "eof" });
  }
  return list.map((c) => ({ ...c, key: `${c.shape}/${c.tokens}/${c.pace ? `paced${c.pace}` : "once"}${c.wire ? `/${c.wire}` : ""}` }));
}

async function runCell(variant, cell) {
  const bodies = Array.from({ length: cell.requests }, () => chatBody(cell));
  await sleep(50); // let the last cell's stragglers (timers, cleanup) settle first
  const before = cpuOf(variant.pid);
  const t0 = performance.now();
  // A request that fails counts as failed in its row (the table says so): it does not end the run.
  const results = await pool(bodies, cell.concurrency, (b) => post(variant, b).catch((err) => {
    say(`cpu ${variant.name} ${cell.key}: ${err}`);
    return { status: 0, error: String(err), bytes: 0 };
  }));
  await sleep(20);
  const after = cpuOf(variant.pid);
  const bad = results.filter((r) => r.status !== 200).length;
  return {
    cpuMs: after.ms - before.ms, tickMs: after.tickMs - before.tickMs, wallMs: performance.now() - t0,
    requests: cell.requests, tokens: cell.requests * cell.tokens, failed: bad, bytesOut: results.reduce((n, r) => n + r.bytes, 0),
  };
}

async function cpuBench(variants) {
  const out = {};
  const list = cells();
  for (let round = 0; round < ROUNDS; round++) {
    say(`cpu round ${round + 1}/${ROUNDS}`);
    for (const cell of list) {
      for (const v of variants) {
        const r = await runCell(v, cell);
        ((out[cell.key] ??= { ...cell, runs: {} }).runs[v.name] ??= []).push(r);
      }
    }
  }
  return out;
}

async function identityCheck(relay, peer) {
  const checks = [];
  for (const cell of [{ shape: "native", tokens: 200 }, { shape: "reasoning", tokens: 200 }, { shape: "native", tokens: 3, pace: 1 }]) {
    const body = chatBody({ ...cell, tag: `identity-${cell.shape}-${cell.tokens}` });
    const [a, b] = [await post(relay, body, { keep: true }), await post(peer, body, { keep: true })];
    checks.push({ case: `${cell.shape}/${cell.tokens}`, identical: a.body.equals(b.body), relayBytes: a.body.length, peerBytes: b.body.length,
      firstDiff: a.body.equals(b.body) ? null : [...a.body].findIndex((x, i) => x !== b.body[i]) });
  }
  return checks;
}

// ---------------------------------------------------------------- 1b. what each crossing costs

const JS_MODES = ["direct", "transform", "identity_transform", "transform_then_identity", "text_streams", "reader_loop", "sink_identity"];
// The then-chain and asyncio modes come last: per-chunk promises in Python crashed Pyodide under
// concurrency in most runs (bench/notes/GLUE-NOTES.md), and every later row of that process then fails.
const PY_MODES = ["hello", "direct", "py_transform_same", "py_transform_bytes", "py_transform_text", "py_sink_identity",
  "py_transform_noop", "py_sink_void", "py_sink_void_bound", "py_sink_void_wait", "py_sink_relay", "py_sink_relay_wait",
  "py_async_identity", "py_async_identity_wait", "py_then_identity_void", "py_then_identity", "py_then_identity_wait", "py_then_identity_bytes"];
// Modes and loops that crashed Pyodide here (promises through Python per chunk, or 50,000 awaits in
// one request) run only when named: a crash takes every later row of that process with it.
// microtask_pycatch (50,000 promise.catch() from Python) answered 500 and left the probe answering
// 500 to every later request (make bench, 2026-11-22 20:30).
const CRASH_PRONE = new Set(["py_async_identity", "py_async_identity_wait", "py_then_identity_void", "py_then_identity",
  "py_then_identity_wait", "py_then_identity_bytes", "microtask_chain", "microtask_await", "microtask_pythen", "microtask_pycatch"]);
// BENCH_PY_MODES / BENCH_JS_MODES / BENCH_LOOPS=a,b: run only those (a shorter interleaved run).
const pickModes = (all, env) => (process.env[env] ? process.env[env].split(",").filter((m) => all.includes(m)) : all.filter((m) => !CRASH_PRONE.has(m))); // in the order given

async function crossingsBench(jsProbe, pyProbe, jsReframer = null) {
  const out = {};
  const rows = [...pickModes(JS_MODES, "BENCH_JS_MODES").map((m) => [jsProbe, m]), ...pickModes(PY_MODES, "BENCH_PY_MODES").map((m) => [pyProbe, m]),
    ...(jsReframer ? [[jsReframer, "reframer"]] : [])];
  for (let round = 0; round < Math.min(ROUNDS, 2); round++) {
    for (const [v, mode] of rows) {
      for (const [tokens, requests, pace] of [[1000, QUICK ? 2 : 4, 0], [10, QUICK ? 10 : 30, 0], [1000, QUICK ? 2 : 6, 2]]) {
        if (mode === "hello" && tokens !== 10) continue;
        const key = `${v.name.startsWith("js_") ? "js" : "py"}:${mode}`;
        const cell = `${tokens}/${pace ? "paced" : "once"}`;
        if (process.env.BENCH_SAY_ROWS) say(`crossings round ${round + 1} ${key} ${cell}`);
        await sleep(30);
        const before = cpuOf(v.pid);
        const results = await pool(Array.from({ length: requests }, () => ({ ...chatBody({ tokens, pace }), mode })), pace ? requests : 1, (b) => post(v, b));
        await sleep(20);
        const after = cpuOf(v.pid);
        const bad = results.filter((r) => r.status !== 200).length;
        (((out[key] ??= {})[cell] ??= []).push({ cpuMs: after.ms - before.ms, requests, tokens: tokens * requests, failed: bad, bytesOut: results.reduce((n, r) => n + r.bytes, 0) }));
      }
    }
  }
  // Single crossings in a loop inside one request: CPU per crossing.
  const LOOPS = pickModes(["env_getattr", "py_loop", "js_to_py", "js_to_py_2args", "py_to_js", "py_attr", "to_js_bytes", "to_bytes", "str_to_js",
    "microtask_queue", "microtask_queue_chain", "microtask_settimeout", "microtask_promise_void", "microtask_promise_return", "microtask_pycatch",
    "microtask_chain", "microtask_await", "microtask_pythen"], "BENCH_LOOPS");
  const n = QUICK ? 20000 : 50000;
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of LOOPS) {
      await sleep(30);
      const before = cpuOf(pyProbe.pid);
      const r = await post(pyProbe, { mode: kind.startsWith("microtask") ? `entries:${kind}` : `loop:${kind}`, n });
      const after = cpuOf(pyProbe.pid);
      ((out.loops ??= {})[kind] ??= []).push({ usPerCall: ((after.ms - before.ms) * 1000) / n, status: r.status });
    }
  }
  return out;
}

// ---------------------------------------------------------------- 1b'. glue probes: bytes per read, cancels

// How many bytes one read of the upstream returns: the default reader, a BYOB reader with a
// 64 KiB buffer, and readAtLeast(N, 64 KiB), for a whole answer written at once and a paced one.
async function glueReadsBench(pyProbe) {
  const out = {};
  for (const kind of ["default", "byob", "atleast4096", "atleast65536"]) {
    for (const [tokens, pace] of [[1000, 0], [1000, 2]]) {
      const r = await post(pyProbe, { ...chatBody({ tokens, pace }), mode: `reads:${kind}` }, { keep: true });
      const row = r.status === 200 ? JSON.parse(r.body.toString("utf8")) : { status: r.status, body: r.body.toString("utf8").slice(0, 300) };
      out[`${kind} ${tokens}/${pace ? `paced${pace}` : "once"}`] = row;
      say(`reads ${kind} ${tokens}/${pace}: ${JSON.stringify(row)}`);
    }
  }
  return out;
}

// cancelsBench for probe modes: rows of [variant, mode] (mode null: the Worker as it is). For
// the probe, its glue counters are read before and after each level (proxies made/destroyed,
// which ending each stream took).
async function glueCancelsBench(rows, modelUrl, levels, streams) {
  const out = [];
  const statsOf = async (v) => JSON.parse((await post(v, { mode: "stats" }, { keep: true })).body.toString("utf8"));
  for (const c of levels) {
    for (const [v, mode] of rows) {
      const label = mode ? `${v.name}:${mode}` : v.name;
      const before = mode ? await statsOf(v) : null;
      const left = new Set();
      const n = c === 1 ? Math.min(streams, 20) : streams;
      const items = Array.from({ length: n }, (_, i) => `gx-${label.replace(/[^\w]/g, "_")}-${c}-${i}`);
      const t0 = performance.now();
      await pool(items, c, (tag, i) => {
        const leaves = i % 2 === 1;
        if (leaves) left.add(tag);
        const body = chatBody({ tokens: leaves ? 200 : 20, pace: leaves ? 10 : 2, tag });
        return post(v, mode ? { ...body, mode } : body, { leaveAfterFirst: leaves });
      });
      const wallMs = performance.now() - t0;
      await sleep(2500);
      const calls = await getJson(new URL("__local/calls", modelUrl));
      let early = 0;
      let ranToEnd = 0;
      for (const call of calls) {
        const tag = call.inputs?.messages?.at(-1)?.content?.match(/run-(gx-\S+)/)?.[1];
        if (!tag || !left.has(tag)) continue;
        if (call.clientClosedAt != null) early += 1; else if (call.finishedAt != null) ranToEnd += 1;
      }
      const row = { variant: label, concurrency: c, streams: n, cancelled: left.size, upstreamClosedEarly: early, ranToEnd, wallMs };
      if (mode) {
        const after = await statsOf(v);
        row.stats = Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - (before[k] ?? 0)]).filter(([, d]) => d));
      }
      out.push(row);
      say(`glue cancels ${label} at ${c}: ${early}/${left.size} closed early ${row.stats ? JSON.stringify(row.stats) : ""}`);
    }
  }
  return out;
}

// ---------------------------------------------------------------- 1c. where a request's CPU goes

// The relay's per-request cost taken apart from outside: requests that stop earlier and earlier.
function rawRequest(url, method, body, contentType = "application/json") {
  return new Promise((resolve, reject) => {
    const data = body === null ? null : Buffer.from(body);
    const req = http.request(url, { method, agent: false, headers: data ? { "content-type": contentType, "content-length": data.length } : {} }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode));
    });
    req.on("error", reject);
    req.end(data ?? undefined);
  });
}

async function anatomyBench(relay, passthrough, before, extra = []) {
  const kinds = {};
  for (const v of extra) {
    kinds[`${v.name}: POST 10-token answer`] = [v, () => rawRequest(new URL("/api/v1/chat", v.url), "POST", JSON.stringify(chatBody({ tokens: 10 })))];
    kinds[`${v.name}: GET /api/v1/models`] = [v, () => rawRequest(new URL("/api/v1/models", v.url), "GET", null)];
  }
  for (const [tag, v] of [["relay", relay], ["before", before]]) {
    if (!v) continue;
    const chat = new URL("/api/v1/chat", v.url);
    Object.assign(kinds, {
      [`${tag}: GET /api/v1/models (shell + settings + routing)`]: [v, () => rawRequest(new URL("/api/v1/models", v.url), "GET", null)],
      [`${tag}: POST invalid JSON (+ body read, 400)`]: [v, () => rawRequest(chat, "POST", "{nope")],
      [`${tag}: POST [[error:3040]] (+ validation, env.AI.run, 429)`]: [v, () => rawRequest(chat, "POST", JSON.stringify({ ...chatBody({ tokens: 10 }), messages: [{ role: "user", content: "[[error:3040]]" }] }))],
      [`${tag}: POST 10-token answer`]: [v, () => rawRequest(chat, "POST", JSON.stringify(chatBody({ tokens: 10 })))],
      [`${tag}: POST 2 MiB conversation with an image, 10-token answer`]: [v, () => rawRequest(chat, "POST", bigBody())],
      [`${tag}: POST 2 MiB conversation over the window (read, parse, check, 400)`]: [v, () => rawRequest(chat, "POST", bigBody({ refused: true }))],
    });
  }
  const chat = new URL("/api/v1/chat", relay.url);
  Object.assign(kinds, {
    "passthrough: POST 10-token answer": [passthrough, () => rawRequest(passthrough.url, "POST", JSON.stringify(chatBody({ tokens: 10 })))],
    // The floor for the same upstream call: body read as text, json.loads, to_js, env.AI.run.
    "passthrough: POST 2 MiB conversation with an image, 10-token answer": [passthrough, () => rawRequest(passthrough.url, "POST", bigBody())],
  });
  // Interleaved request by request (each kind once per turn), each request's CPU read alone,
  // so that drift on this shared machine spreads over every kind alike.
  const n = QUICK ? 60 : 150;
  const out = {};
  const statuses = {};
  for (let i = 0; i < n; i++) {
    for (const [label, [v, send]] of Object.entries(kinds)) {
      const before = cpuOf(v.pid);
      const status = await send();
      await sleep(3);
      (out[label] ??= []).push(cpuOf(v.pid).ms - before.ms);
      (statuses[label] ??= {})[status] = (statuses[label][status] ?? 0) + 1;
    }
  }
  return Object.fromEntries(Object.entries(out).map(([k, xs]) => [k, { msPerRequest: median(xs), mean: xs.reduce((a, b) => a + b, 0) / xs.length, requests: xs.length, statuses: statuses[k] }]));
}

// ---------------------------------------------------------------- 2. time to first byte

async function ttfbBench(variants, runs) {
  const out = Object.fromEntries(variants.map((v) => [v.name, []]));
  for (let i = 0; i < runs; i++) {
    for (const v of variants) {
      const r = await post(v, chatBody({ tokens: 10 }));
      out[v.name].push(r.firstAt - r.sentAt);
    }
  }
  return Object.fromEntries(Object.entries(out).map(([k, xs]) => [k, { runs: xs.length, median: median(xs), p99: pct(xs, 99) }]));
}

// ---------------------------------------------------------------- 3. disconnect -> upstream closed

async function disconnectBench(variants, modelUrl, runs) {
  const left = {};
  for (let i = 0; i < runs; i++) {
    for (const v of variants) {
      const tag = `leave-${v.name}-${i}`;
      const r = await post(v, chatBody({ tokens: 2000, pace: 5, tag }), { leaveAfterFirst: true });
      if (r.leftAt) left[tag] = { variant: v.name, leftAt: r.leftAt };
    }
  }
  await sleep(3000);
  const calls = await getJson(new URL("__local/calls", modelUrl));
  const out = Object.fromEntries(variants.map((v) => [v.name, { delays: [], neverClosed: 0, ranToEnd: 0 }]));
  for (const call of calls) {
    const text = call.inputs?.messages?.at(-1)?.content ?? "";
    const tag = text.match(/run-(leave-\S+)/)?.[1];
    if (!tag || !left[tag]) continue;
    const entry = out[left[tag].variant];
    if (call.clientClosedAt == null) { entry.neverClosed += 1; if (call.finishedAt != null) entry.ranToEnd += 1; }
    else entry.delays.push(call.clientClosedAt - left[tag].leftAt);
  }
  return Object.fromEntries(Object.entries(out).map(([k, e]) => [k, {
    runs: e.delays.length + e.neverClosed, closed: e.delays.length, neverClosed: e.neverClosed, ranToEnd: e.ranToEnd, median: median(e.delays), p99: pct(e.delays, 99), max: Math.max(...e.delays),
  }]));
}

// ---------------------------------------------------------------- 4. live objects and memory

const typeGrowth = (a, b) => Object.fromEntries(Object.entries(b.py_types ?? {})
  .map(([k, n]) => [k, n - (a.py_types?.[k] ?? 0)]).filter(([, d]) => Math.abs(d) >= 50).sort((x, y) => y[1] - x[1]));

async function leakBench(relay, peer, streams, modelUrl) {
  const statsUrl = new URL("/__local/stats", relay.url);
  const sample = async (label) => ({ label, ...(await getJson(statsUrl)), rss_mb: rssMb(relay.pid), at: now() });
  const rows = [await sample("before")];
  const peerRows = [{ label: "before", rss_mb: rssMb(peer.pid) }];
  const left = { [relay.name]: new Set(), [peer.name]: new Set() };
  // A cancelled stream leaves after its first token, ~2 s before its end (200 tokens at 10 ms).
  for (const batch of [1, 2]) {
    for (const v of [relay, peer]) {
      const items = Array.from({ length: streams }, (_, i) => `leak-${v.name}-${batch}-${i}`);
        // 25 at a time, well within what either Worker keeps pace with (a saturated Worker reads
      // the upstream so late that the model has sent everything before the cancel arrives).
      await pool(items, Number(process.env.BENCH_LEAK_CONCURRENCY ?? 25), (tag, i) => {
        const leaves = i % 2 === 1;
        if (leaves) left[v.name].add(tag);
        return post(v, chatBody({ tokens: leaves ? 200 : 20, pace: leaves ? 10 : 2, tag }), { leaveAfterFirst: leaves });
      });
      await sleep(2000);
      const label = `after ${batch === 1 ? "" : "another "}${streams} streams (half cancelled)`;
      if (v === relay) rows.push(await sample(label)); else peerRows.push({ label, rss_mb: rssMb(peer.pid) });
    }
  }
  // Did each cancelled stream close its upstream before the answer's end?
  const calls = await getJson(new URL("__local/calls", modelUrl));
  const cancelled = {};
  for (const v of [relay, peer]) cancelled[v.name] = { count: left[v.name].size, upstreamClosedEarly: 0, upstreamRanToEnd: 0 };
  for (const call of calls) {
    const tag = call.inputs?.messages?.at(-1)?.content?.match(/run-(leak-\S+)/)?.[1];
    const name = tag && [relay.name, peer.name].find((n) => left[n].has(tag));
    if (!name) continue;
    if (call.clientClosedAt != null) cancelled[name].upstreamClosedEarly += 1; else cancelled[name].upstreamRanToEnd += 1;
  }
  const long = post(relay, chatBody({ tokens: QUICK ? 20000 : 100000 }));
  let done = false;
  long.then(() => { done = true; });
  let n = 0;
  while (!done) {
    await sleep(1000);
    if (!done) rows.push(await sample(`during the long stream (${++n})`));
  }
  const r = await long;
  await sleep(500);
  rows.push(await sample(`after one ${QUICK ? "20,000" : "100,000"}-token stream`));
  return { rows, peerRows, cancelled,
    secondBatchGrowth: typeGrowth(rows[1], rows[2]), longStream: { status: r.status, bytes: r.bytes, seconds: (r.endAt - r.sentAt) / 1000 } };
}

// ---------------------------------------------------------------- 4b. cancels while other streams run

// Does a client's leaving reach the upstream when other streams run at the same time? Batches of
// streams, half leaving after their first token (200 tokens at 10 ms, ~2 s before their end),
// half completing (20 tokens at 2 ms), `concurrency` at a time.
async function cancelsBench(variants, modelUrl, levels, streams) {
  const out = Object.fromEntries(variants.map((v) => [v.name, []]));
  for (const c of levels) {
    for (const v of variants) {
      const left = new Set();
      const items = Array.from({ length: streams }, (_, i) => `cx-${v.name}-${c}-${i}`);
      await pool(items, c, (tag, i) => {
        const leaves = i % 2 === 1;
        if (leaves) left.add(tag);
        return post(v, chatBody({ tokens: leaves ? 200 : 20, pace: leaves ? 10 : 2, tag }), { leaveAfterFirst: leaves });
      });
      await sleep(2500);
      const calls = await getJson(new URL("__local/calls", modelUrl));
      let early = 0;
      for (const call of calls) {
        const tag = call.inputs?.messages?.at(-1)?.content?.match(/run-(cx-\S+)/)?.[1];
        if (tag && left.has(tag) && call.clientClosedAt != null) early += 1;
      }
      out[v.name].push({ concurrency: c, cancelled: left.size, upstreamClosedEarly: early });
      say(`cancels ${v.name} at ${c}: ${early}/${left.size} closed early`);
    }
  }
  return out;
}

// ---------------------------------------------------------------- 5. concurrency

// N streams at once, each 100 tokens at 20 ms a token (50 tokens/s, a fast model's pace). A
// stream keeps pace when it takes at most 1.25x what the model needed to send it (so the
// model's own lag on this 2-core machine is not charged to the Worker).
async function concurrencyBench(variants, modelUrl, steps) {
  const out = Object.fromEntries(variants.map((v) => [v.name, []]));
  const level = async (v, n) => {
    const tags = Array.from({ length: n }, (_, i) => `conc-${v.name}-${n}-${i}-${++nonce}`);
    const before = cpuOf(v.pid);
    const t0 = now();
    const results = await Promise.all(tags.map((tag) => post(v, chatBody({ tokens: 100, pace: 20, tag })).catch((err) => ({ status: 0, error: String(err) }))));
    const wall = now() - t0;
    const after = cpuOf(v.pid);
    const calls = await getJson(new URL("__local/calls", modelUrl));
    const byTag = new Map();
    for (const c of calls) { const t = c.inputs?.messages?.at(-1)?.content?.match(/run-(conc-\S+)/)?.[1]; if (t) byTag.set(t, c); }
    let kept = 0;
    const rates = [];
    const lags = [];
    results.forEach((r, i) => {
      const call = byTag.get(tags[i]);
      if (r.status !== 200 || !call || call.finishedAt == null) return;
      const modelMs = call.finishedAt - call.startedAt;
      const clientMs = r.endAt - r.sentAt;
      rates.push(100 / (clientMs / 1000));
      lags.push(r.endAt - call.finishedAt);
      if (clientMs <= modelMs * 1.25 + 50) kept += 1;
    });
    const row = { streams: n, kept, failed: n - rates.length, medianTokensPerSecond: median(rates), minTokensPerSecond: Math.min(...rates),
      totalTokensPerSecond: (rates.length * 100) / (wall / 1000), lastByteLagP99Ms: pct(lags, 99), cpuMs: after.ms - before.ms, wallMs: wall };
    out[v.name].push(row);
    say(`concurrency ${v.name} ${n}: kept ${kept}/${n}, ${row.totalTokensPerSecond.toFixed(0)} tok/s, lag p99 ${row.lastByteLagP99Ms?.toFixed(0)} ms`);
    await sleep(500);
    return kept === n;
  };
  const held = await largestLevels(variants, steps, level);
  for (const v of variants) out[v.name].sort((a, b) => a.streams - b.streams);
  out.maxKept = held;
  return out;
}

/**
 * The largest level (e.g. streams at once) each variant holds, `level(v, n)` saying whether it
 * holds n: the coarse steps, interleaved, until a level is not held, then the gap between the
 * last level held and the first one not held halved down to about 10% (the coarse steps alone
 * put the ratio anywhere in [lo/hi', hi/lo']). Returns {variant name: level}.
 */
export async function largestLevels(variants, steps, level) {
  const bounds = Object.fromEntries(variants.map((v) => [v.name, { lo: 0, hi: null }]));
  for (const n of steps) {
    for (const v of variants) {
      const b = bounds[v.name];
      if (b.hi !== null) continue;
      if (await level(v, n)) b.lo = n; else b.hi = n;
    }
  }
  for (;;) {
    const open = variants.filter((v) => { const b = bounds[v.name]; return b.hi !== null && b.hi - b.lo > Math.max(10, b.lo * 0.1); });
    if (!open.length) break;
    for (const v of open) {
      const b = bounds[v.name];
      const n = Math.round((b.lo + b.hi) / 20) * 10;
      if (n <= b.lo || n >= b.hi) { b.hi = b.lo; continue; }
      if (await level(v, n)) b.lo = n; else b.hi = n;
    }
  }
  return Object.fromEntries(variants.map((v) => [v.name, bounds[v.name].lo]));
}

// ---------------------------------------------------------------- 6. restart from the snapshot

function launchOnce(mode) {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, [path.join(ROOT, "local", "launch.mjs"), "--port", "0", "--snapshot", mode, "--exit-on-stdin-eof", "--pace", "0"], { stdio: ["pipe", "pipe", "pipe"] });
    let seen = "";
    let errors = "";
    const timer = setTimeout(() => { child.kill(); resolve({ mode, ok: false, error: `not ready in 120 s: ${(seen + errors).slice(-400)}` }); }, 120_000);
    child.stderr.on("data", (d) => { errors += d; });
    child.stdout.on("data", async (d) => {
      seen += d;
      const line = seen.split("\n").find((l) => l.includes('"message":"ready"') || l.includes('"level":"error"'));
      if (!line || child.readyHandled) return;
      child.readyHandled = true;
      clearTimeout(timer);
      const info = JSON.parse(line);
      const wallMs = performance.now() - started;
      let works = false;
      let detail = info.message;
      if (info.url) {
        const url = new URL("/api/v1/chat", info.url);
        const r = await post({ url, agent: false }, chatBody({ tokens: 5 }), { keep: true }).catch((err) => ({ status: 0, body: Buffer.from(String(err)) }));
        works = r.status === 200 && r.body.toString().includes("event: done");
        detail = `${r.status}`;
      }
      child.stdin.end();
      child.once("exit", () => resolve({ mode: info.snapshot ?? mode, ok: Boolean(info.url), works, readyMs: info.ms, processWallMs: wallMs, detail }));
      setTimeout(() => child.kill(), 5000).unref();
    });
  });
}

async function snapshotBench() {
  const rows = [];
  for (const mode of ["save", "load", "off", "load", "off", "load"]) {
    say(`launch --snapshot ${mode}`);
    rows.push(await launchOnce(mode));
  }
  return rows;
}

// ---------------------------------------------------------------- 7. the browser client's parse cost

async function clientParseBench(relay) {
  const body = (await post(relay, chatBody({ tokens: 4000 }), { keep: true })).body;
  let mod;
  try { mod = await import(pathToFileURL(path.join(ROOT, "public", "chat-client.js")).href); } catch (err) { return { error: `import failed: ${err.message}` }; }
  const out = { exports: Object.keys(mod).sort(), answerBytes: body.length };
  const time = async (label, fn) => {
    try {
      for (let i = 0; i < 5; i++) await fn();
      const xs = [];
      for (let i = 0; i < 40; i++) { const t = performance.now(); await fn(); xs.push(performance.now() - t); }
      out[label] = { medianMs: median(xs), p90Ms: pct(xs, 90) };
    } catch (err) { out[label] = { error: String(err?.message ?? err) }; }
  };
  if (typeof mod.streamChat === "function") {
    const fakeFetch = async () => new Response(new ReadableStream({ start(c) { c.enqueue(new Uint8Array(body)); c.close(); } }), { headers: { "content-type": "text/event-stream" } });
    await time("streamChat", async () => {
      const r = await mod.streamChat({ messages: [] }, { url: "http://x/api/v1/chat", fetch: fakeFetch });
      if (r.outcome !== "complete") throw new Error(`outcome ${r.outcome}`);
    });
  }
  if (typeof mod.readEvents === "function") {
    await time("readEvents", async () => {
      const stream = new ReadableStream({ start(c) { c.enqueue(new Uint8Array(body)); c.close(); } });
      let n = 0;
      for await (const _ of mod.readEvents(stream)) n += 1;
      if (n < 4000) throw new Error(`only ${n} events`);
    });
  }
  if (typeof mod.SSEParser === "function") {
    const text = body.toString("utf8");
    await time("SSEParser.feed", async () => { const p = new mod.SSEParser(); p.feed(text); p.end?.(); });
  }
  return out;
}

// ---------------------------------------------------------------- main

/** Miniflare running the pinned workerd through local/workerd (the offline Pyodide bundle), no snapshot. */
export async function miniflareOnWorkerd() {
  const { Miniflare, Log, LogLevel, convertV4MiniflareOptions } = await import("miniflare");
  const workerd = (await import("workerd")).default;
  process.env.REAL_WORKERD = workerd.default ?? workerd;
  process.env.MINIFLARE_WORKERD_PATH = path.join(ROOT, "local", "workerd");
  process.env.WRANGLER_SEND_METRICS ??= "false";
  delete process.env.LOCAL_PYTHON_SNAPSHOT;
  return { Miniflare, Log, LogLevel, convertV4MiniflareOptions };
}

async function main() {
  const { Miniflare, Log, LogLevel } = await miniflareOnWorkerd();
  const t0 = performance.now();
  const model = await startModel();
  const results = {
    started: new Date().toISOString(), quick: QUICK, rounds: ROUNDS,
    machine: { cpu: fs.readFileSync("/proc/cpuinfo", "utf8").match(/model name\s*:\s*(.*)/)?.[1], cores: fs.readFileSync("/proc/cpuinfo", "utf8").match(/^processor/gm).length,
      node: process.version, workerd: fs.readFileSync(path.join(ROOT, "node_modules", "workerd", "package.json"), "utf8").match(/"version":\s*"([^"]+)"/)?.[1],
      loadavg: fs.readFileSync("/proc/loadavg", "utf8").trim() },
  };
  // Only probe parts wanted: start only the Workers they use (glue_cancels compares with the relay and the JS peer).
  const PROBE_PARTS = ["crossings", "glue_reads", "glue_cancels"];
  const probeOnly = ONLY.size > 0 && [...ONLY].every((p) => PROBE_PARTS.includes(p));
  const names = probeOnly ? (wanted("glue_cancels") && process.env.BENCH_GLUE_PEERS !== "0" ? ["python_relay", "js_reframer"] : [])
    : ["python_relay", ...(args["before-src"] ? ["python_relay_before"] : []), ...Object.keys(EXTRA_SRC), "passthrough", "js_identity", "js_reframer"];
  const variants = [];
  try {
    for (const name of names) {
      variants.push(await startVariant(name, model.url, Miniflare, Log, LogLevel));
      say(`${name}: workerd pid ${variants.at(-1).pid} (${variants.at(-1).comm}), ready in ${variants.at(-1).readyMs.toFixed(0)} ms`);
    }
    const by = Object.fromEntries(variants.map((v) => [v.name, v]));
    results.variants = variants.map((v) => ({ name: v.name, pid: v.pid, comm: v.comm, readyMs: v.readyMs }));
    // Warm every variant up (Pyodide's first request imports and compiles).
    for (const v of variants) for (const shape of ["native", "reasoning"]) await post(v, chatBody({ tokens: 200, shape }));
    const idleBefore = variants.map((v) => cpuOf(v.pid).ms);
    await sleep(1000);
    results.idleCpuMsPerSecond = Object.fromEntries(variants.map((v, i) => [v.name, cpuOf(v.pid).ms - idleBefore[i]]));
    const part = async (key, label, fn) => {
      if (!wanted(key)) return;
      say(label);
      // Each part reads only the calls it made: the built-in model forgets the earlier ones,
      // whose inputs (5,000 kept) outgrow what one JSON string can hold after the big parts.
      await fetch(new URL("__local/calls", model.url), { method: "DELETE" }).catch(() => {});
      try { results[key] = await fn(); } catch (err) { say(`${key} failed: ${err?.stack ?? err}`); results[key] = { error: String(err?.stack ?? err) }; }
    };
    if (PROBE_PARTS.some(wanted)) {
      const probes = [await startVariant("js_probe", model.url, Miniflare, Log, LogLevel), await startVariant("probe", model.url, Miniflare, Log, LogLevel)];
      // The JS re-framer (the peer the relay competes with) as one more row of the crossings table.
      if (wanted("crossings")) probes.push(by.js_reframer ?? await startVariant("js_reframer", model.url, Miniflare, Log, LogLevel));
      for (const v of probes) await post(v, { ...chatBody({ tokens: 100 }), mode: "direct" });
      await part("crossings", "crossings", () => crossingsBench(probes[0], probes[1], probes[2]));
      // The glue parts run only when named in --only (they are investigations, not the benchmark).
      if (ONLY.has("glue_reads")) await part("glue_reads", "glue: bytes per read", () => glueReadsBench(probes[1]));
      const glueModes = (process.env.BENCH_GLUE_MODES ?? "py_then_identity,py_then_identity_wait").split(",");
      const peers = [by.python_relay, by.js_reframer].filter(Boolean).map((v) => [v, null]);
      if (ONLY.has("glue_cancels")) await part("glue_cancels", "glue: cancels while other streams run",
        () => glueCancelsBench([...glueModes.map((m) => [probes[1], m]), ...peers], model.url, [1, 5, 12, 25], Number(process.env.BENCH_GLUE_STREAMS ?? 50)));
      for (const v of probes) if (v !== by.js_reframer) { v.agent.destroy(); await v.mf.dispose().catch(() => {}); }
    }
    await part("anatomy", "per-request anatomy", () => anatomyBench(by.python_relay, by.passthrough, by.python_relay_before, variants.filter((v) => v.name in EXTRA_SRC)));
    await part("identity", "identical output check", () => identityCheck(by.python_relay, by.js_reframer));
    // Knock-out copies (bench/knockouts.py, named cut_*) only take part in the anatomy.
    const measured = variants.filter((v) => !v.name.startsWith("py_cut_"));
    // py_noassets (--src noassets=noassets): the relay without miniflare's asset router in front,
    // like the passthrough. Measured for the time to first byte (the hop costs wall time locally,
    // and on Cloudflare the asset routing is not the Worker's); per token it is the relay.
    await part("cpu", "cpu", () => cpuBench(measured.filter((v) => v.name !== "py_noassets")));
    await part("ttfb", "ttfb", () => ttfbBench(measured, QUICK ? 50 : 200));
    await part("disconnect", "disconnect", () => disconnectBench([by.python_relay, ...(by.python_relay_before ? [by.python_relay_before] : []), by.js_reframer], model.url, QUICK ? 40 : 200));
    await part("leaks", "leaks", () => leakBench(by.python_relay, by.js_reframer, QUICK ? 200 : 1000, model.url));
    await part("cancels", "cancels while other streams run", () => cancelsBench([by.python_relay, ...(by.python_relay_before ? [by.python_relay_before] : []), by.js_reframer], model.url, [1, 5, 12, 25], QUICK ? 40 : 100));
    await part("concurrency", "concurrency", () => concurrencyBench([by.python_relay, by.js_reframer], model.url, QUICK ? [50, 200] : [25, 50, 100, 150, 200, 300, 400]));
    await part("client", "client parse", () => clientParseBench(by.python_relay));
    if (results.leaks?.rows && !process.env.BENCH_SKIP_IDLE) {
      // Timers the Worker left behind (e.g. a 60 s timeout) run out within 65 s of idling.
      say("leaks: idle 65 s, then the last sample");
      const statsUrl = new URL("/__local/stats", by.python_relay.url);
      const last = results.leaks.rows.at(-1);
      await sleep(65_000);
      const idle = { label: "65 s idle after everything", ...(await getJson(statsUrl)), rss_mb: rssMb(by.python_relay.pid), at: now() };
      results.leaks.rows.push(idle);
      results.leaks.idleGrowth = typeGrowth(last, idle);
    }
  } finally {
    for (const v of variants) { v.agent.destroy(); await v.mf.dispose().catch(() => {}); }
    model.child.stdin.end();
    model.child.kill();
  }
  if (wanted("snapshot")) results.snapshot = await snapshotBench().catch((err) => ({ error: String(err?.stack ?? err) }));
  results.totalSeconds = (performance.now() - t0) / 1000;
  results.machine.loadavgAfter = fs.readFileSync("/proc/loadavg", "utf8").trim();
  fs.writeFileSync(args.out, JSON.stringify(results, null, 1) + "\n");
  say(`wrote ${args.out} in ${results.totalSeconds.toFixed(0)} s`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
}
