#!/usr/bin/env node
// What one Python<->JS step costs on workerd's Pyodide (bench/workers/ffi): n steps of each
// kind in one request, this workerd process's CPU divided by n (µs), minus nothing (the
// `empty` kind is the loop). Usage: node bench/probes/ffi_costs.mjs [--n 20000] [--rounds 3]
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { miniflareOnWorkerd, startMiniflare, startModel, stepCosts } from "../workerd.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const { values: args } = parseArgs({ options: { n: { type: "string", default: "20000" }, rounds: { type: "string", default: "3" }, kinds: { type: "string" } } });
const KINDS = args.kinds ? args.kinds.split(",") : ["empty", "global_attr", "global_attr2", "reflect_get_fn", "call_number", "call_object", "new_u8_64k",
  "to_js_list2", "bind", "reflect_set", "to_js_bytes1k", "to_bytes1k", "set_timeout", "set_timeout_cached", "attr_of_result", "array_of"];
const mf = await miniflareOnWorkerd();
const model = await startModel();
const launch = await import(pathToFileURL(path.join(ROOT, "local", "launch.mjs")).href);
const base = await launch.workerOptions({ vars: {}, modelUrl: model.url });
const opts = { ...base, name: "ffi", ...launch.pythonModules(path.join(ROOT, "bench", "workers", "ffi", "entry.py")), durableObjects: undefined, ratelimits: undefined, assets: undefined };
const { instance, url, pid } = await startMiniflare(mf, opts);
try {
  const rows = await stepCosts({ url, pid, kinds: KINDS, n: Number(args.n), rounds: Number(args.rounds), warm: 100 });
  for (const [kind, us] of Object.entries(rows)) console.log(`${kind.padEnd(20)} ${us.map((u) => u.toFixed(2)).join(" / ")} µs`);
} finally {
  await instance.dispose();
  model.child.kill();
}
