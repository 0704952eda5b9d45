#!/usr/bin/env node
// What paused readers hold in the isolate (issue 42): the relay (or a copy of src/, or the JS
// recipe) on bare workerd with an inspector, `n` readers of long answers that read nothing, the
// isolate's heap and backing stores read after a full collection (bench/paused.mjs), `runs` times.
//   node bench/probes/paused_memory.mjs [--variant relay|js_reframer] [--src dir] [--var K=V]
//     [--readers 4] [--tokens 60000] [--rate 0] [--runs 3]
import http from "node:http";
import { parseArgs } from "node:util";
import { peerSpec, relaySpec, startBare } from "../bare.mjs";
import { freePort, inspect, inspectorArgs } from "../inspector.mjs";
import { pausedReaders } from "../paused.mjs";
import { getJson, startModel } from "../workerd.mjs";

const { values: args } = parseArgs({ options: {
  variant: { type: "string", default: "relay" }, src: { type: "string" }, var: { type: "string", multiple: true, default: [] },
  readers: { type: "string", default: "4" }, tokens: { type: "string", default: "60000" }, rate: { type: "string", default: "0" }, shape: { type: "string", default: "native" },
  runs: { type: "string", default: "3" },
} });
const say = (...p) => process.stderr.write(`[paused ${new Date().toISOString().slice(11, 19)}] ${p.join(" ")}\n`);
const model = await startModel();
const isRelay = args.variant === "relay";
const vars = { AI_MAX_TOKENS_LIMIT: "200000", AI_MAX_TOKENS_DEFAULT: "120000", UPSTREAM_TIMEOUT_SECONDS: "60", LOCAL_DEV_STATS: "1",
  ...Object.fromEntries(args.var.map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)])) };
const spec = isRelay ? await relaySpec({ src: args.src, vars, ratelimit: { limit: 1e9, period: 60 } }) : peerSpec(args.variant);
const iport = await freePort();
const bare = await startBare(args.variant, spec, model.url, { extraArgs: inspectorArgs(iport) });
const stats = async () => (isRelay ? getJson(new URL("/__local/stats", bare.url)) : null);
try {
  const v = { name: args.variant, pid: bare.pid, url: new URL(isRelay ? "/api/v1/chat" : "/", bare.url),
    poke: async () => { await (await fetch(new URL(isRelay ? "/__local/stats" : "/nothing", bare.url))).arrayBuffer(); },
    backlog: isRelay ? async () => (await stats()).backlog_bytes : null };
  // Warm: a few answers, so that what the first run measures is not the isolate's first growth.
  for (let i = 0; i < 3; i++) await (await fetch(v.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: `[[tokens:2000]][[pace:0]] warm-${i}` }], max_tokens: 2100, model: "@cf/google/gemma-4-26b-a4b-it" }) })).arrayBuffer();
  v.inspector = await inspect(iport);
  for (let run = 0; run < Number(args.runs); run++) {
    const s0 = await stats();
    const holdsBefore = s0?.holds ?? null;
    const r = await pausedReaders(v, model.url, { n: Number(args.readers), tokens: Number(args.tokens), rate: Number(args.rate), shape: args.shape, say });
    const s1 = await stats();
    const holds = holdsBefore == null ? null : s1.holds - holdsBefore;
    const wasmKb = s0 == null ? null : (s1.wasm_memory_bytes - s0.wasm_memory_bytes) / 1024;
    console.log(JSON.stringify({ run: run + 1, variant: args.variant, vars: args.var, shape: args.shape, isolateKb: +r.isolateKb.toFixed(1), heapKb: +r.heapKb.toFixed(1),
      backingKb: +r.backingKb.toFixed(1), bodyKb: r.bodyKb == null ? null : +r.bodyKb.toFixed(1), embedderKb: +r.embedderKb.toFixed(1), rssKb: +r.rssKb.toFixed(0), wasmGrewKb: wasmKb, holds, sent: `${r.chunksSentWhilePaused}/${r.chunksTotal}`,
      finished: r.modelFinished, stillAfterS: +r.stillAfterS.toFixed(1), allComplete: r.allComplete, bytes: r.bytesAfterResume[0] }));
  }
  v.inspector.close();
} finally {
  await bare.stop();
  model.child.kill();
}
process.exit(0);
