#!/usr/bin/env node
// `make bench-check` (issue 35): the relay's workerd CPU per 1,000 tokens against the JS
// re-framer's, interleaved in one run through workerd's real Ai class (the built-in model in a
// process of its own), with the added delay per token and client gone -> model connection
// closed. Variants, each a Worker in its own workerd process: `relay` (src/ as configured:
// windowed reads), `relay_off` (the same src/ with STREAM_WINDOW_MS=0: one read per network
// chunk, the relay before windows), `js_reframer` (bench/workers/js_reframer.mjs) and
// `passthrough` (Python, body untouched: the floor). Rows run variant by variant within each
// cell (in the reverse order every other round), cell by cell within each round, so host load
// spreads over all of them; a ratio is the median of the rounds' paired ratios.
//
//   node bench/check.mjs [--rounds 5] [--full] [--out .cache/bench/check.json]
//
// --full (what `make bench` runs): also a reasoning-shape cell at 150 tok/s and 50 streams at once.
// Prints one final line, and exits 1 when a target of issue 35 is missed:
//   bench-check: 150tps=<x>x 50tps=<x>x whole=<x>x delay_p50_ms=<n> delay_max_ms=<n> cancel_p99_ms=<n>
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { chatBody, cpuOf, getJson, miniflareOnWorkerd, pool, post, startMiniflare, startModel } from "./workerd.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values: args } = parseArgs({ options: {
  rounds: { type: "string", default: "5" },
  full: { type: "boolean", default: false },
  out: { type: "string", default: path.join(ROOT, ".cache", "bench", "check.json") },
  // More copies of src/ as relay variants: --src name=/path/to/src (a mechanism to compare).
  src: { type: "string", multiple: true, default: [] },
  // Extra vars for the `relay` variant, repeatable: --var STREAM_WINDOW_MS=80
  var: { type: "string", multiple: true, default: [] },
  // Only these cells (comma-separated keys), for a quicker comparison of variants.
  cells: { type: "string" },
  // Leave out these variants (comma-separated: relay_off, passthrough) for a quicker run.
  skip: { type: "string", default: "" },
} });
const ROUNDS = Number(args.rounds);
const TARGETS = { r150: 0.6, r50: 1.0, whole: 0.3, delayP50: 60, delayMax: 150, cancelP99: 100 };
const PY_FLAGS = ["python_workers", "python_workers_20260610", "enable_request_signal"];
const COMPAT_DATE = "2025-11-01";
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length ? (s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2) : NaN; };
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]; };
const say = (...parts) => process.stderr.write(`[check ${new Date().toISOString().slice(11, 19)}] ${parts.join(" ")}\n`);
const load = () => fs.readFileSync("/proc/loadavg", "utf8").trim();

async function options(name, modelUrl) {
  const ai = { binding: "AI", remoteProxyConnectionString: new URL(modelUrl) };
  const workers = path.join(ROOT, "bench", "workers");
  const launch = await import(pathToFileURL(path.join(ROOT, "local", "launch.mjs")).href);
  const relayVars = { LOCAL_DEV_STATS: "1", AI_MAX_TOKENS_LIMIT: "200000", AI_MAX_TOKENS_DEFAULT: "120000", UPSTREAM_TIMEOUT_SECONDS: "60" };
  const extra = Object.fromEntries(args.var.map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));
  const ratelimit = { "*": { limit: 1000000000, period: 60 } };
  if (name === "relay") return launch.workerOptions({ vars: { ...relayVars, ...extra }, modelUrl, ratelimit });
  if (name === "relay_off") return launch.workerOptions({ vars: { ...relayVars, STREAM_WINDOW_MS: "0" }, modelUrl, ratelimit });
  const src = args.src.find((s) => s.startsWith(`${name}=`));
  if (src) {
    const base = await launch.workerOptions({ vars: { ...relayVars, ...extra }, modelUrl, ratelimit });
    return { ...base, name, ...launch.pythonModules(path.join(path.resolve(src.slice(name.length + 1)), "entry.py")) };
  }
  if (name === "passthrough") {
    return { name, compatibilityDate: COMPAT_DATE, compatibilityFlags: PY_FLAGS, modulesRoot: path.join(workers, "passthrough"),
      modules: [{ type: "PythonModule", path: path.join(workers, "passthrough", "entry.py") }], ai };
  }
  // miniflare 5 follows no imports from a scriptPath: both modules are named.
  const modules = ["js_reframer.mjs", "reframer.mjs"].map((f) => ({ type: "ESModule", path: path.join(workers, f) }));
  return { name, modules, modulesRoot: workers, compatibilityDate: COMPAT_DATE, compatibilityFlags: ["enable_request_signal"], ai };
}

async function start(name, modelUrl, mf) {
  const { instance, url, pid } = await startMiniflare(mf, await options(name, modelUrl), name);
  const isRelay = name.startsWith("relay") || args.src.some((s) => s.startsWith(`${name}=`));
  return { name, mf: instance, base: url, url: new URL(isRelay ? "/api/v1/chat" : "/", url), pid, isRelay,
    agent: new http.Agent({ keepAlive: true, maxSockets: Infinity }) };
}

// A streamed POST that dates every token as it arrives (its event or frame marker).
function timedPost(variant, body) {
  const marker = Buffer.from(variant.name === "passthrough" ? "data: {" : "event: content_block_delta");
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
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
      res.on("end", () => resolve({ status: res.statusCode, arrivals, bytes: buffer.length, body: Buffer.concat(parts) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(data);
  });
}

// Added delay of each token: arrival - k/rate, less the stream's smallest such offset.
function delays(arrivals, rate) {
  const offsets = arrivals.map((at, k) => at - (k * 1000) / rate);
  const floor = Math.min(...offsets);
  return offsets.map((o) => o - floor);
}

const byVariantTokens = (key) => cells().find((c) => c.key === key)?.tokens ?? 1;

function cells() {
  const list = [
    { key: "r150", shape: "native", tokens: 600, rate: 150, streams: 6 },
    { key: "r50", shape: "native", tokens: 250, rate: 50, streams: 6 },
    { key: "whole", shape: "native", tokens: 1000, rate: 0, streams: 1, requests: 4 },
    { key: "v1whole", shape: "native", tokens: 1000, rate: 150, streams: 6, v1: true, relayOnly: true },
    // Per-request cost (the Free plan's 10 ms): 10-token answers one after another, at once.
    { key: "req10", shape: "native", tokens: 10, rate: 0, streams: 1, requests: 20 },
  ];
  if (args.full) {
    list.push({ key: "reasoning150", shape: "reasoning", tokens: 600, rate: 150, streams: 6 });
    list.push({ key: "r150x50", shape: "native", tokens: 300, rate: 150, streams: 50 });
  }
  return args.cells ? list.filter((c) => args.cells.split(",").includes(c.key)) : list;
}

let nonce = 0;
function bodyFor(cell) {
  const base = chatBody({ tokens: cell.tokens, shape: cell.shape, tag: `chk-${++nonce}` });
  const content = base.messages[0].content.replace("[[pace:0]]", cell.rate ? `[[pace:0]][[rate:${cell.rate}]]` : "[[pace:0]]");
  return { ...base, messages: [{ role: "user", content }] };
}

async function runCell(v, cell) {
  const n = cell.requests ?? cell.streams;
  const bodies = Array.from({ length: n }, () => bodyFor(cell));
  await sleep(100);
  const before = cpuOf(v.pid).ms;
  let results;
  if (cell.v1) {
    const url = new URL("/v1/chat/completions", v.base);
    results = await pool(bodies, cell.streams, (b) => post({ ...v, url }, { ...b, stream: false }));
  } else {
    results = await pool(bodies, cell.streams, (b) => timedPost(v, b));
  }
  await sleep(30);
  const cpuMs = cpuOf(v.pid).ms - before;
  const tokens = n * cell.tokens;
  const failed = results.filter((r) => r.status !== 200).length;
  const got = cell.v1 ? null : results.map((r) => r.arrivals.length);
  const d = cell.rate && !cell.v1 ? results.flatMap((r) => delays(r.arrivals, cell.rate)) : [];
  return { cpuMs, tokens, msPer1k: (cpuMs / tokens) * 1000, failed, short: got ? got.filter((g) => g < cell.tokens * (cell.shape === "native" ? 1 : 0.5)).length : 0, delays: d };
}

async function identity(relay, peer) {
  const checks = [];
  for (const cell of [{ shape: "native", tokens: 200, rate: 0 }, { shape: "reasoning", tokens: 200, rate: 0 }, { shape: "native", tokens: 120, rate: 150 },
    { shape: "reasoning", tokens: 120, rate: 150 }, { shape: "native", tokens: 40, rate: 50 }, { shape: "native", tokens: 3, rate: 0 }]) {
    const body = bodyFor(cell);
    const [a, b] = [await timedPost(relay, body), await timedPost(peer, body)];
    checks.push({ case: `${cell.shape}/${cell.tokens}/${cell.rate || "once"}`, identical: a.body.equals(b.body), relayBytes: a.body.length, peerBytes: b.body.length });
  }
  return checks;
}

async function cancels(v, modelUrl, streams = 40, concurrency = 8) {
  const left = new Map();
  await pool(Array.from({ length: streams }, (_, i) => i), concurrency, async (i) => {
    const tag = `cancel-${v.name}-${i}-${++nonce}`;
    const body = chatBody({ tokens: 400, tag });
    body.messages[0].content = body.messages[0].content.replace("[[pace:0]]", "[[pace:0]][[rate:50]]");
    const r = await post(v, body, { leaveAfterFirst: true });
    left.set(tag, r.leftAt);
    await sleep(200);
  });
  await sleep(1500);
  const calls = await getJson(new URL("__local/calls", modelUrl));
  const ms = [];
  let never = 0;
  for (const call of calls) {
    const tag = call.inputs?.messages?.at(-1)?.content?.match(/run-(cancel-\S+)/)?.[1];
    if (!tag || !left.has(tag)) continue;
    if (call.clientClosedAt == null) { never += 1; continue; }
    ms.push(Math.max(0, call.clientClosedAt - left.get(tag)));
  }
  return { streams, closed: ms.length, never, p50: median(ms), p99: pct(ms, 99), max: Math.max(...ms) };
}

async function main() {
  const t0 = performance.now();
  const mf = await miniflareOnWorkerd();
  const model = await startModel();
  const loadBefore = load();
  const skip = args.skip.split(",").filter(Boolean);
  const names = ["relay", "relay_off", ...args.src.map((s) => s.slice(0, s.indexOf("="))), "js_reframer", "passthrough"].filter((n) => !skip.includes(n));
  const variants = [];
  let ok = true;
  const results = { started: new Date().toISOString(), rounds: ROUNDS, full: args.full, loadBefore, vars: args.var, cells: {} };
  try {
    for (const name of names) { variants.push(await start(name, model.url, mf)); say(`${name}: workerd pid ${variants.at(-1).pid}`); }
    const by = Object.fromEntries(variants.map((v) => [v.name, v]));
    for (const v of variants) for (const shape of ["native", "reasoning"]) await timedPost(v, bodyFor({ shape, tokens: 200, rate: 0 }));
    results.identity = await identity(by.relay, by.js_reframer);
    for (const c of results.identity) if (!c.identical) { ok = false; say(`NOT byte-identical: ${JSON.stringify(c)}`); }
    say(`identity: ${results.identity.map((c) => `${c.case} ${c.identical ? "ok" : "DIFFERS"}`).join(", ")}`);
    for (let round = 0; round < ROUNDS; round++) {
      say(`round ${round + 1}/${ROUNDS}, load ${load()}`);
      // The order alternates round by round, so no variant always runs first (or last) in a cell.
      const order = round % 2 ? [...variants].reverse() : variants;
      for (const cell of cells()) {
        for (const v of order) {
          if (cell.relayOnly && !v.isRelay) continue;
          const r = await runCell(v, cell);
          ((results.cells[cell.key] ??= {})[v.name] ??= []).push(r);
          if (r.failed || r.short) { ok = false; say(`${cell.key} ${v.name}: ${r.failed} failed, ${r.short} short`); }
        }
      }
    }
    if (!args.cells) {
      say("cancels");
      results.cancels = { relay: await cancels(by.relay, model.url), relay_off: await cancels(by.relay_off, model.url) };
    }
  } finally {
    for (const v of variants) { v.agent.destroy(); await v.mf.dispose().catch(() => {}); }
    model.child.kill();
  }
  results.loadAfter = load();
  results.wallS = (performance.now() - t0) / 1000;
  // Summary: median over rounds of ms per 1,000 tokens; delays pooled over rounds.
  const summary = {};
  for (const [key, byVariant] of Object.entries(results.cells)) {
    summary[key] = {};
    for (const [name, runs] of Object.entries(byVariant)) {
      const all = runs.flatMap((r) => r.delays);
      summary[key][name] = { msPer1k: median(runs.map((r) => r.msPer1k)), perRound: runs.map((r) => +r.msPer1k.toFixed(1)),
        msPerRequest: median(runs.map((r) => r.cpuMs / (r.tokens / byVariantTokens(key)))),
        ...(all.length ? { delayP50: median(all), delayP99: pct(all, 99), delayMax: Math.max(...all) } : {}) };
    }
  }
  results.summary = summary;
  fs.mkdirSync(path.dirname(args.out), { recursive: true });
  fs.writeFileSync(args.out, JSON.stringify(results, null, 1));
  const table = ["cell | variant | ms CPU / 1k tokens (median; rounds) | / js_reframer | delay p50 / p99 / max ms"];
  for (const [key, rows] of Object.entries(summary)) {
    for (const [name, s] of Object.entries(rows)) {
      const peers = results.cells[key].js_reframer;
      const paired = peers ? median(results.cells[key][name].map((r, i) => r.msPer1k / peers[i].msPer1k)) : null;
      table.push(`${key} | ${name} | ${s.msPer1k.toFixed(1)} (${s.perRound.join(", ")}) | ${paired != null ? paired.toFixed(2) + "x" : "-"} | ${s.delayP50 != null ? `${s.delayP50.toFixed(0)} / ${s.delayP99.toFixed(0)} / ${s.delayMax.toFixed(0)}` : "-"}`);
    }
  }
  // The Free plan's 10 ms: what a request costs before its tokens, then per token at 150 tok/s.
  for (const name of ["relay", "relay_off", "js_reframer"]) {
    const base = summary.req10?.[name]?.msPerRequest;
    const per = summary.r150?.[name]?.msPer1k / 1000;
    if (base != null && per) table.push(`free plan | ${name} | ${base.toFixed(2)} ms a 10-token request, ${per.toFixed(3)} ms a token at 150 tok/s | ~${Math.max(0, Math.floor(10 + (10 - base) / per))} tokens within 10 ms`);
  }
  for (const [name, c] of Object.entries(results.cancels ?? {})) table.push(`cancel | ${name} | closed ${c.closed}/${c.streams}, never ${c.never} | p50 ${c.p50?.toFixed(1)} ms, p99 ${c.p99?.toFixed(1)} ms, max ${c.max?.toFixed(1)} ms`);
  table.push(`load before / after: ${loadBefore} / ${results.loadAfter}; wall ${results.wallS.toFixed(0)} s; raw: ${path.relative(ROOT, args.out)}`);
  console.log(table.join("\n"));
  if (args.cells) return ok ? 0 : 1; // a partial run: no verdict on the targets
  // Each ratio is the median over rounds of that round's relay / JS re-framer: the two ran side by
  // side in the same round, under the same load, which a ratio of two medians does not keep.
  const ratio = (key) => median(results.cells[key].relay.map((r, i) => r.msPer1k / results.cells[key].js_reframer[i].msPer1k));
  const r150 = ratio("r150"), r50 = ratio("r50"), whole = ratio("whole");
  const p50 = summary.r150.relay.delayP50, max = summary.r150.relay.delayMax, cancel = results.cancels.relay.p99;
  if (results.cancels.relay.never) ok = false;
  const misses = [[r150 <= TARGETS.r150, "150tps"], [r50 <= TARGETS.r50, "50tps"], [whole <= TARGETS.whole, "whole"],
    [p50 <= TARGETS.delayP50, "delay_p50"], [max <= TARGETS.delayMax, "delay_max"], [cancel <= TARGETS.cancelP99, "cancel_p99"]].filter(([met]) => !met).map(([, k]) => k);
  if (misses.length) { ok = false; say(`missed: ${misses.join(", ")}`); }
  console.log(`bench-check: 150tps=${r150.toFixed(2)}x 50tps=${r50.toFixed(2)}x whole=${whole.toFixed(2)}x delay_p50_ms=${Math.round(p50)} delay_max_ms=${Math.round(max)} cancel_p99_ms=${Math.round(cancel)}`);
  return ok ? 0 : 1;
}

main().then((code) => process.exit(code), (err) => { console.error(err); process.exit(1); });
