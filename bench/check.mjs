#!/usr/bin/env node
// `make bench-check` (issues 35 and 42): the relay's workerd CPU against the JS recipe's, on bare
// workerd (bench/bare.mjs: no miniflare, workerd's own Ai class, the built-in model in a process
// of its own), interleaved in one run, with the added delay per token, client gone -> model
// connection closed, the streams one process holds and what a paused reader holds in the isolate
// (bench/paused.mjs: JS heap + buffers through the inspector, not the process RSS). Variants,
// each a Worker in its own workerd process: `relay` (src/ as wrangler.toml configures it),
// `relay_off` (the same with STREAM_WINDOW_MS=0: one read per network chunk), `js_reframer`
// (bench/workers/js_reframer.mjs: the JS recipe, env.AI.run() through a TransformStream) and
// `passthrough` (Python, body untouched: the floor). Rows run variant by variant within each
// cell (in the reverse order every other round), cell by cell within each round, so host load
// spreads over all of them; a ratio is the median of the rounds' paired ratios.
//
//   node bench/check.mjs [--rounds 5] [--full] [--out .cache/bench/check.json]
//
// --full (what `make bench` runs): also a reasoning-shape cell at 150 tok/s and 50 streams at once.
// Prints one final line, and exits 1 when a target of issue 42 is missed:
//   bench-check: 150tps=<x>x 50tps=<x>x whole=<x>x live150=<x>x req=<x>x streams=<x>x
//     delay_p50_ms=<n> delay_max_ms=<n> cancel_p99_ms=<n> paused_kb=<n>
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { peerSpec, relaySpec, startBare } from "./bare.mjs";
import { freePort, inspect, inspectorArgs } from "./inspector.mjs";
import { pausedReaders } from "./paused.mjs";
import { chatBody, cpuOf, delays, getJson, largestLevels, pool, post, startModel, timedPost } from "./workerd.mjs";

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
  // The parts after the cells (comma-separated: cancels, paused, streams); all unless --cells is
  // given, none then. `--cells none --parts paused` measures paused readers alone.
  parts: { type: "string" },
} });
const ROUNDS = Number(args.rounds);
const TARGETS = { r150: 0.6, r50: 1.0, whole: 0.3, live150: 0.6, req: 2.0, streams: 1.0, delayP50: 60, delayMax: 150, cancelP99: 100, pausedKb: 256 };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length ? (s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2) : NaN; };
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]; };
const say = (...parts) => process.stderr.write(`[check ${new Date().toISOString().slice(11, 19)}] ${parts.join(" ")}\n`);
const load = () => fs.readFileSync("/proc/loadavg", "utf8").trim();

async function spec(name) {
  const relayVars = { AI_MAX_TOKENS_LIMIT: "200000", AI_MAX_TOKENS_DEFAULT: "120000", UPSTREAM_TIMEOUT_SECONDS: "60" };
  const extra = Object.fromEntries(args.var.map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));
  // The limits are the deployment's brake, not what is measured: lifted (they are still asked).
  const ratelimit = { limit: 1000000000, period: 60 };
  if (name === "relay") return relaySpec({ vars: { ...relayVars, ...extra }, ratelimit });
  if (name === "relay_off") return relaySpec({ vars: { ...relayVars, STREAM_WINDOW_MS: "0" }, ratelimit });
  const src = args.src.find((s) => s.startsWith(`${name}=`));
  if (src) return relaySpec({ src: src.slice(name.length + 1), vars: { ...relayVars, ...extra }, ratelimit });
  return peerSpec(name);
}

async function start(name, modelUrl) {
  const bare = await startBare(name, await spec(name), modelUrl);
  const isRelay = name.startsWith("relay") || args.src.some((s) => s.startsWith(`${name}=`));
  return { name, bare, base: bare.url, url: new URL(isRelay ? "/api/v1/chat" : "/", bare.url), pid: bare.pid, isRelay,
    agent: new http.Agent({ keepAlive: true, maxSockets: Infinity }) };
}

const byVariantTokens = (key) => cells().find((c) => c.key === key)?.tokens ?? 1;

function cells() {
  const list = [
    { key: "r150", shape: "native", tokens: 600, rate: 150, streams: 6 },
    { key: "r50", shape: "native", tokens: 250, rate: 50, streams: 6 },
    { key: "whole", shape: "native", tokens: 1000, rate: 0, streams: 1, requests: 4 },
    { key: "v1whole", shape: "native", tokens: 1000, rate: 150, streams: 6, v1: true, relayOnly: true },
    // The stream Workers AI sends in late 2026 (local/model.mjs [[shape:2026]]).
    { key: "live150", shape: "2026", tokens: 600, rate: 150, streams: 6 },
    // Per-request cost (the Free plan's 10 ms): 5-token answers one after another, at once.
    { key: "req5", shape: "native", tokens: 5, rate: 0, streams: 1, requests: 30 },
  ];
  if (args.full) {
    list.push({ key: "reasoning150", shape: "reasoning", tokens: 600, rate: 150, streams: 6 });
    list.push({ key: "r150x50", shape: "native", tokens: 300, rate: 150, streams: 50 });
  }
  return args.cells ? list.filter((c) => args.cells.split(",").includes(c.key)) : list;
}

let nonce = 0;
function bodyFor(cell) {
  // "2026" and "2026r" (with reasoning): the late-2026 stream of a native and a reasoning model.
  const late = cell.shape.startsWith("2026");
  const shape = late ? (cell.shape === "2026r" ? "reasoning" : "native") : cell.shape;
  const base = chatBody({ tokens: cell.tokens, shape, tag: `chk-${++nonce}` });
  const content = base.messages[0].content.replace("[[pace:0]]", (cell.rate ? `[[pace:0]][[rate:${cell.rate}]]` : "[[pace:0]]") + (late ? "[[shape:2026]]" : ""));
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
  return { cpuMs, tokens, msPer1k: (cpuMs / tokens) * 1000, failed, short: got ? got.filter((g) => g < cell.tokens * (cell.shape === "reasoning" ? 0.5 : 1)).length : 0, delays: d };
}

async function identity(relay, peer) {
  const checks = [];
  for (const cell of [{ shape: "native", tokens: 200, rate: 0 }, { shape: "reasoning", tokens: 200, rate: 0 }, { shape: "native", tokens: 120, rate: 150 },
    { shape: "reasoning", tokens: 120, rate: 150 }, { shape: "native", tokens: 40, rate: 50 }, { shape: "native", tokens: 3, rate: 0 },
    { shape: "2026", tokens: 200, rate: 0 }, { shape: "2026r", tokens: 200, rate: 0 }, { shape: "2026", tokens: 120, rate: 150 }]) {
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

// N streams at once, each 100 tokens at 50 tok/s: a level is held when every stream completes
// and the p99 of the added delay per token stays within the delay bound. Coarse steps for both
// variants, interleaved, then the gap halved to ~10%. Returns the largest level held.
async function heldStreams(variants, steps = [25, 50, 100, 150, 200, 300, 400]) {
  const rows = [];
  const level = async (v, n) => {
    const results = await Promise.all(Array.from({ length: n }, () => timedPost(v, bodyFor({ shape: "native", tokens: 100, rate: 50 })).catch((err) => ({ status: 0, arrivals: [], error: String(err) }))));
    const complete = results.filter((r) => r.status === 200 && r.arrivals.length >= 100);
    const d = complete.flatMap((r) => delays(r.arrivals, 50));
    const p99 = d.length ? pct(d, 99) : Infinity;
    const held = complete.length === n && p99 <= TARGETS.delayMax;
    rows.push({ variant: v.name, streams: n, complete: complete.length, delayP99: p99, held });
    say(`streams ${v.name} ${n}: ${complete.length}/${n} complete, delay p99 ${p99.toFixed(0)} ms, load ${load()}`);
    await sleep(500);
    return held;
  };
  return { rows, held: await largestLevels(variants, steps, level) };
}

// What a paused reader holds in the isolate (bench/paused.mjs): each variant in a workerd process
// of its own with an inspector (the CPU cells' processes run without one), n readers of answers
// long enough that the relay's backlog fills (the kernel's socket buffers take ~4 MB of a paused
// client's answer), the JS heap and backing stores read after a full collection, and the bytes
// the relay's bodies hold (its census).
async function pausedPart(name, modelUrl, { n = 4, tokens = 80000 } = {}) {
  const base = await spec(name);
  const isRelay = base.kind === "python" && base.dir !== path.join(ROOT, "bench", "workers", "passthrough");
  if (isRelay) base.vars = { ...base.vars, LOCAL_DEV_STATS: "1" };  // the census: holds, backlog
  const iport = await freePort();
  const bare = await startBare(`${name}-paused`, base, modelUrl, { extraArgs: inspectorArgs(iport) });
  let inspector = null;
  try {
    const url = new URL(isRelay ? "/api/v1/chat" : "/", bare.url);
    const poke = async () => { await post({ url, agent: false }, chatBody({ tokens: 1 })); };
    for (let i = 0; i < 3; i++) await post({ url, agent: false }, chatBody({ tokens: 2000 }));  // warm
    inspector = await inspect(iport);
    const census = async () => (isRelay ? getJson(new URL("/__local/stats", bare.url)) : null);
    const v = { name, url, pid: bare.pid, poke, inspector, backlog: isRelay ? async () => (await census()).backlog_bytes : null };
    const c0 = await census();
    const r = await pausedReaders(v, modelUrl, { n, tokens, say });
    const c1 = await census();
    return { ...r, holds: c1 ? c1.holds - c0.holds : null };
  } finally {
    inspector?.close();
    await bare.stop();
  }
}

async function main() {
  const t0 = performance.now();
  const model = await startModel();
  const loadBefore = load();
  const skip = args.skip.split(",").filter(Boolean);
  const names = ["relay", "relay_off", ...args.src.map((s) => s.slice(0, s.indexOf("="))), "js_reframer", "passthrough"].filter((n) => !skip.includes(n));
  const variants = [];
  let ok = true;
  const results = { started: new Date().toISOString(), rounds: ROUNDS, full: args.full, loadBefore, vars: args.var, cells: {} };
  try {
    for (const name of names) { variants.push(await start(name, model.url)); say(`${name}: workerd pid ${variants.at(-1).pid}`); }
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
    const parts = (args.parts ?? (args.cells ? "" : "cancels,paused,streams")).split(",");
    if (parts.includes("cancels")) {
      say("cancels");
      results.cancels = { relay: await cancels(by.relay, model.url), ...(by.relay_off ? { relay_off: await cancels(by.relay_off, model.url) } : {}) };
    }
    if (parts.includes("paused")) {
      say("paused readers");
      results.paused = {};
      for (const v of variants.filter((x) => x.name !== "passthrough")) results.paused[v.name] = await pausedPart(v.name, model.url);
      say(`paused: ${JSON.stringify(results.paused)}`);
    }
    if (parts.includes("streams")) {
      say("streams held");
      results.streams = await heldStreams([by.relay, by.js_reframer]);
    }
  } finally {
    for (const v of variants) { v.agent.destroy(); await v.bare.stop().catch(() => {}); }
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
  for (const name of ["relay", "relay_off", "js_reframer", "passthrough"]) {
    const base = summary.req5?.[name]?.msPerRequest;
    const per = summary.live150?.[name]?.msPer1k / 1000;
    if (base != null && per) table.push(`free plan | ${name} | ${base.toFixed(2)} ms a 5-token request, ${per.toFixed(3)} ms a token at 150 tok/s (2026 shape) | ~${Math.max(0, Math.floor(5 + (10 - base) / per))} tokens within 10 ms`);
  }
  for (const [name, p] of Object.entries(results.paused ?? {})) {
    table.push(`paused | ${name} | ${p.streams} readers of ${p.tokens} tokens: +${p.isolateKb.toFixed(0)} KB isolate each (JS heap ${p.heapKb.toFixed(0)}, buffers ${p.backingKb.toFixed(0)}${p.bodyKb != null ? `, bodies ${p.bodyKb.toFixed(0)}` : ""}), RSS +${p.rssKb.toFixed(0)} KB, ${p.holds != null ? `holds ${p.holds}, ` : ""}model finished ${p.modelFinished}/${p.streams}, all whole after resuming: ${p.allComplete}`);
  }
  if (results.streams) table.push(`streams held (100 tokens at 50 tok/s, delay p99 <= ${TARGETS.delayMax} ms) | ${Object.entries(results.streams.held).map(([k, n]) => `${k} ${n}`).join(", ")}`);
  for (const [name, c] of Object.entries(results.cancels ?? {})) table.push(`cancel | ${name} | closed ${c.closed}/${c.streams}, never ${c.never} | p50 ${c.p50?.toFixed(1)} ms, p99 ${c.p99?.toFixed(1)} ms, max ${c.max?.toFixed(1)} ms`);
  table.push(`load before / after: ${loadBefore} / ${results.loadAfter}; wall ${results.wallS.toFixed(0)} s; raw: ${path.relative(ROOT, args.out)}`);
  console.log(table.join("\n"));
  if (args.cells) return ok ? 0 : 1; // a partial run: no verdict on the targets
  // Each ratio is the median over rounds of that round's relay / JS re-framer: the two ran side by
  // side in the same round, under the same load, which a ratio of two medians does not keep.
  const ratio = (key) => median(results.cells[key].relay.map((r, i) => r.msPer1k / results.cells[key].js_reframer[i].msPer1k));
  const r150 = ratio("r150"), r50 = ratio("r50"), whole = ratio("whole"), live150 = ratio("live150");
  // A request's CPU: the same paired median over rounds, per request.
  const req = median(results.cells.req5.relay.map((r, i) => r.cpuMs / results.cells.req5.js_reframer[i].cpuMs));
  const streams = results.streams.held.relay / Math.max(1, results.streams.held.js_reframer);
  const pausedKb = results.paused.relay.isolateKb;
  if (!results.paused.relay.allComplete) { ok = false; say("a paused reader did not get its whole answer"); }
  // The figure means something only when every relay did hold back (its backlog full).
  if (results.paused.relay.holds < results.paused.relay.streams) { ok = false; say(`paused: ${results.paused.relay.holds} holds for ${results.paused.relay.streams} readers`); }
  const p50 = summary.r150.relay.delayP50, max = summary.r150.relay.delayMax, cancel = results.cancels.relay.p99;
  if (results.cancels.relay.never) ok = false;
  const misses = [[r150 <= TARGETS.r150, "150tps"], [r50 <= TARGETS.r50, "50tps"], [whole <= TARGETS.whole, "whole"],
    [live150 <= TARGETS.live150, "live150"], [req <= TARGETS.req, "req"], [streams >= TARGETS.streams, "streams"],
    [p50 <= TARGETS.delayP50, "delay_p50"], [max <= TARGETS.delayMax, "delay_max"], [cancel <= TARGETS.cancelP99, "cancel_p99"],
    [pausedKb <= TARGETS.pausedKb, "paused_kb"]].filter(([met]) => !met).map(([, k]) => k);
  if (misses.length) { ok = false; say(`missed: ${misses.join(", ")}`); }
  console.log(`bench-check: 150tps=${r150.toFixed(2)}x 50tps=${r50.toFixed(2)}x whole=${whole.toFixed(2)}x live150=${live150.toFixed(2)}x req=${req.toFixed(2)}x streams=${streams.toFixed(2)}x delay_p50_ms=${Math.round(p50)} delay_max_ms=${Math.round(max)} cancel_p99_ms=${Math.round(cancel)} paused_kb=${Math.round(pausedKb)}`);
  return ok ? 0 : 1;
}

main().then((code) => process.exit(code), (err) => { console.error(err); process.exit(1); });
