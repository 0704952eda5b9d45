#!/usr/bin/env node
// A V8 CPU profile of one Worker on bare workerd over N short requests (issue 42): self time
// by function (JS and Pyodide's Wasm functions), to see where a request's CPU goes.
//   node bench/probes/profile.mjs [--n 200] [--tokens 5] [--variant relay|js_reframer|passthrough] [--src dir]
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import { parseArgs } from "node:util";
import { peerSpec, relaySpec, startBare } from "../bare.mjs";
import { chatBody, pool, post, startModel } from "../workerd.mjs";

const { values: args } = parseArgs({ options: {
  n: { type: "string", default: "200" }, tokens: { type: "string", default: "5" },
  variant: { type: "string", default: "relay" }, src: { type: "string" }, top: { type: "string", default: "60" },
  out: { type: "string" }, interval: { type: "string", default: "50" },
} });
const freePort = () => new Promise((ok) => { const s = net.createServer(); s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => ok(p)); }); });
const relayVars = { AI_MAX_TOKENS_LIMIT: "200000", AI_MAX_TOKENS_DEFAULT: "120000", UPSTREAM_TIMEOUT_SECONDS: "60" };
const model = await startModel();
const isRelay = args.variant === "relay";
const spec = isRelay ? await relaySpec({ src: args.src, vars: relayVars, ratelimit: { limit: 1e9, period: 60 } }) : peerSpec(args.variant);
const iport = await freePort();
const bare = await startBare(args.variant, spec, model.url, { extraArgs: [`--inspector-addr=127.0.0.1:${iport}`] });
const v = { name: args.variant, url: new URL(isRelay ? "/api/v1/chat" : "/", bare.url), agent: new http.Agent({ keepAlive: true }) };
const body = () => chatBody({ tokens: Number(args.tokens) });
await pool(Array.from({ length: 80 }, body), 1, (b) => post(v, b));
const list = await (await fetch(`http://127.0.0.1:${iport}/json/list`)).json();
const ws = new WebSocket(list[0].webSocketDebuggerUrl);
await new Promise((ok, no) => { ws.onopen = ok; ws.onerror = no; });
let id = 0; const waiting = new Map();
ws.onmessage = (m) => { const msg = JSON.parse(m.data); if (msg.id && waiting.has(msg.id)) { waiting.get(msg.id)(msg); waiting.delete(msg.id); } };
const send = (method, params = {}) => new Promise((ok) => { const i = ++id; waiting.set(i, ok); ws.send(JSON.stringify({ id: i, method, params })); });
await send("Profiler.enable");
await send("Profiler.setSamplingInterval", { interval: Number(args.interval) });
await send("Profiler.start");
await pool(Array.from({ length: Number(args.n) }, body), 1, (b) => post(v, b));
const { result } = await send("Profiler.stop");
const profile = result.profile;
if (args.out) fs.writeFileSync(args.out, JSON.stringify(profile));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = profile.timeDeltas; let total = 0;
profile.samples.forEach((sid, i) => { const n = byId.get(sid); const f = n.callFrame; const key = `${f.functionName || "(anon)"} ${f.url ? f.url.split("/").pop() : ""}:${f.lineNumber}`; const d = dt[i] ?? 0; self.set(key, (self.get(key) ?? 0) + d); total += d; });
const rows = [...self.entries()].sort((a, b) => b[1] - a[1]);
const n = Number(args.n);
console.log(`${args.variant}: sampled ${(total / 1000 / n).toFixed(3)} ms/request wall-in-isolate (incl. idle)`);
for (const [k, us] of rows.slice(0, Number(args.top))) console.log(`${(us / 1000 / n).toFixed(4)} ms  ${(100 * us / total).toFixed(1)}%  ${k}`);
ws.close(); await bare.stop(); model.child.kill(); process.exit(0);
