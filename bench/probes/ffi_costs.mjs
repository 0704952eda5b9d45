#!/usr/bin/env node
// What one Python<->JS step costs on workerd's Pyodide (bench/workers/ffi): n steps of each
// kind in one request, this workerd process's CPU divided by n (µs), minus nothing (the
// `empty` kind is the loop). Usage: node bench/probes/ffi_costs.mjs [--n 20000] [--rounds 3]
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { cpuOf, miniflareOnWorkerd, startModel } from "../workerd.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const { values: args } = parseArgs({ options: { n: { type: "string", default: "20000" }, rounds: { type: "string", default: "3" }, kinds: { type: "string" } } });
const KINDS = args.kinds ? args.kinds.split(",") : ["empty", "global_attr", "global_attr2", "reflect_get_fn", "call_number", "call_object", "new_u8_64k",
  "to_js_list2", "bind", "reflect_set", "to_js_bytes1k", "to_bytes1k", "set_timeout", "set_timeout_cached", "attr_of_result", "array_of"];
const mf = await miniflareOnWorkerd();
const model = await startModel();
const launch = await import(pathToFileURL(path.join(ROOT, "local", "launch.mjs")).href);
const base = await launch.workerOptions({ vars: {}, modelUrl: model.url });
const opts = { ...base, name: "ffi", ...launch.pythonModules(path.join(ROOT, "bench", "workers", "ffi", "entry.py")), durableObjects: undefined, ratelimits: undefined, assets: undefined };
const instance = new mf.Miniflare(mf.convertV4MiniflareOptions({ host: "127.0.0.1", port: 0, log: new mf.Log(mf.LogLevel.WARN), ...opts }));
const url = await instance.ready;
const fs = await import("node:fs");
const kids = fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e)).filter((e) => { try { const st = fs.readFileSync(`/proc/${e}/stat`, "utf8"); return Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]) === process.pid && fs.readFileSync(`/proc/${e}/comm`, "utf8").startsWith("workerd"); } catch { return false; } });
const pid = Number(kids.at(-1));
const n = Number(args.n);
const run = async (kind, count) => { const r = await fetch(url, { method: "POST", body: JSON.stringify({ kind, n: count }) }); if (r.status !== 200) throw new Error(`${kind}: ${r.status} ${await r.text()}`); };
try {
  for (const kind of KINDS) await run(kind, 100);
  const rows = {};
  for (let round = 0; round < Number(args.rounds); round++) {
    for (const kind of KINDS) {
      const a = cpuOf(pid).ms;
      await run(kind, n);
      const b = cpuOf(pid).ms;
      (rows[kind] ??= []).push(((b - a) * 1000) / n);
    }
  }
  for (const [kind, us] of Object.entries(rows)) console.log(`${kind.padEnd(20)} ${us.map((u) => u.toFixed(2)).join(" / ")} µs`);
} finally {
  await instance.dispose();
  model.child.kill();
}
