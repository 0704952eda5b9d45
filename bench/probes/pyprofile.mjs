#!/usr/bin/env node
// cProfile inside the relay on bare workerd (issue 42): a copy of src/ whose entry answers
// /__prof/start and /__prof/stop (made by hand, never src/ itself), N short requests between.
//   node bench/probes/pyprofile.mjs --src /tmp/prof_src [--n 200] [--tokens 5]
import http from "node:http";
import net from "node:net";
import { parseArgs } from "node:util";
import { relaySpec, startBare } from "../bare.mjs";
import { chatBody, pool, post, startModel } from "../workerd.mjs";
const { values: args } = parseArgs({ options: { n: { type: "string", default: "200" }, tokens: { type: "string", default: "5" }, src: { type: "string" }, rate: { type: "string", default: "0" } } });
const model = await startModel();
const spec = await relaySpec({ src: args.src, vars: { AI_MAX_TOKENS_LIMIT: "200000", AI_MAX_TOKENS_DEFAULT: "120000", UPSTREAM_TIMEOUT_SECONDS: "60" }, ratelimit: { limit: 1e9, period: 60 } });
// With the inspector on, workerd's clock runs while code runs (without it, it stands still
// between I/O events and every time reads 0).
const iport = await new Promise((ok) => { const s = net.createServer(); s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => ok(p)); }); });
const bare = await startBare("prof", spec, model.url, { extraArgs: [`--inspector-addr=127.0.0.1:${iport}`] });
const v = { url: new URL("/api/v1/chat", bare.url), agent: new http.Agent({ keepAlive: true }) };
const body = () => chatBody({ tokens: Number(args.tokens), pace: Number(args.rate) ? Math.round(1000 / Number(args.rate)) : 0 });
await pool(Array.from({ length: 60 }, body), 1, (b) => post(v, b));
await fetch(new URL("/__prof/start", bare.url));
await pool(Array.from({ length: Number(args.n) }, body), 1, (b) => post(v, b));
console.log(await (await fetch(new URL("/__prof/stop", bare.url))).text());
await bare.stop(); model.child.kill(); process.exit(0);
