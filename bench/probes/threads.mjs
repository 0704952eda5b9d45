#!/usr/bin/env node
// Where a short request's CPU goes, thread by thread (issue 42): workerd's process CPU per
// request split by thread name (/proc/<pid>/task/<tid>/comm, schedstat), relay vs JS recipe.
//   node bench/probes/threads.mjs [--n 100] [--rounds 3] [--src name=/path/to/src ...]
//     [--path /v1/chat/completions]  (the relay's door: that one is asked with stream: true)
import fs from "node:fs";
import http from "node:http";
import { parseArgs } from "node:util";
import { peerSpec, relaySpec, startBare } from "../bare.mjs";
import { chatBody, pool, post, startModel } from "../workerd.mjs";

const { values: args } = parseArgs({ options: {
  n: { type: "string", default: "100" }, rounds: { type: "string", default: "3" },
  tokens: { type: "string", default: "5" },
  src: { type: "string", multiple: true, default: [] }, only: { type: "string", default: "" },
  var: { type: "string", multiple: true, default: [] },
  path: { type: "string", default: "/api/v1/chat" },
  peer: { type: "string", multiple: true, default: [] },
} });
const N = Number(args.n);
function threads(pid) {
  const out = {};
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const comm = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
      const ns = Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      const key = `${comm}#${tid}`;
      out[key] = ns / 1e6;
    } catch { /* gone */ }
  }
  return out;
}
const relayVars = { AI_MAX_TOKENS_LIMIT: "200000", AI_MAX_TOKENS_DEFAULT: "120000", UPSTREAM_TIMEOUT_SECONDS: "60" };
const extra = Object.fromEntries(args.var.map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));
const ratelimit = { limit: 1e9, period: 60 };
const model = await startModel();
const specs = [["relay", await relaySpec({ vars: { ...relayVars, ...extra }, ratelimit })], ["js_reframer", peerSpec("js_reframer")], ["passthrough", peerSpec("passthrough")]];
// --src name=/path/to/src[,VAR=value...]: another relay variant (a copy of src/, or src/ with vars).
for (const s of args.src) {
  const [name, rest] = [s.slice(0, s.indexOf("=")), s.slice(s.indexOf("=") + 1)];
  const [dir, ...kvs] = rest.split(",");
  const vars = Object.fromEntries(kvs.map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));
  specs.push([name, await relaySpec({ src: dir, vars: { ...relayVars, ...extra, ...vars }, ratelimit })]);
}
// --peer name: a JS Worker of bench/workers/<name>.mjs beside them (js_identity, js_direct);
// --peer py_floors/PATH: the Python floors' Worker on that path (direct, native, identity,
// transform, reader: bench/workers/py_floors/entry.py), each its own variant and process.
for (const peer of args.peer) {
  const [name, floor] = peer.split("/");
  specs.push([floor ? `py_${floor}` : name, { ...peerSpec(name), path: floor ? `/${floor}` : "/" }]);
}
const chosen = args.only ? specs.filter(([n]) => args.only.split(",").includes(n)) : specs;
const variants = [];
for (const [name, spec] of chosen) {
  const bare = await startBare(name, spec, model.url);
  const isRelay = spec.kind === "python" && !spec.path && name !== "passthrough";
  variants.push({ name, bare, pid: bare.pid, url: new URL(isRelay ? args.path : spec.path ?? "/", bare.url), openai: isRelay && args.path.startsWith("/v1/"), agent: new http.Agent({ keepAlive: true }) });
}
const bodyFor = (v) => () => ({ ...chatBody({ tokens: Number(args.tokens) }), ...(v.openai ? { stream: true } : {}) });
const totals = {};
for (const v of variants) await pool(Array.from({ length: 60 }, bodyFor(v)), 1, (b) => post(v, b));
for (let r = 0; r < Number(args.rounds); r++) {
  for (const v of variants) {
    const before = threads(v.pid);
    const res = await pool(Array.from({ length: N }, bodyFor(v)), 1, (b) => post(v, b));
    await new Promise((ok) => setTimeout(ok, 50));
    const after = threads(v.pid);
    const bad = res.filter((x) => x.status !== 200).length;
    const t = (totals[v.name] ??= { bad: 0, by: {} });
    t.bad += bad;
    for (const [k, ms] of Object.entries(after)) {
      const name = k.split("#")[0];
      (t.by[name] ??= []).push(((ms - (before[k] ?? 0)) / N));
    }
  }
}
for (const [name, t] of Object.entries(totals)) {
  const rows = Object.entries(t.by).map(([k, xs]) => [k, xs.reduce((a, b) => a + b, 0) / Number(args.rounds)]).filter(([, ms]) => ms > 0.005).sort((a, b) => b[1] - a[1]);
  const sum = rows.reduce((a, [, ms]) => a + ms, 0);
  console.log(`${name}: ${sum.toFixed(3)} ms/request (failed ${t.bad}) ` + rows.map(([k, ms]) => `${k}=${ms.toFixed(3)}`).join(" "));
}
for (const v of variants) await v.bare.stop();
model.child.kill();
process.exit(0);
