#!/usr/bin/env node
// In-isolate costs of pieces of a request (bench/workers/inproc/probe.py): a copy of src/ with a
// POST /__probe route, n iterations of a kind per request, this workerd's CPU / n (µs).
//   node bench/probes/inproc.mjs [--src DIR] [--n 200] [--rounds 3] [--kinds a,b]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { miniflareOnWorkerd, startMiniflare, startModel, stepCosts } from "../workerd.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const { values: args } = parseArgs({ options: { src: { type: "string", default: path.join(ROOT, "src") }, n: { type: "string", default: "200" }, rounds: { type: "string", default: "3" }, kinds: { type: "string", default: "noop,settings,env_objects,models,limiter,response_only,pipe_off,pipe,pipe_bare" } } });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "inproc-"));
fs.cpSync(path.resolve(args.src), dir, { recursive: true });
fs.copyFileSync(path.join(ROOT, "bench", "workers", "inproc", "probe.py"), path.join(dir, "inproc_probe.py"));
const entry = path.join(dir, "entry.py");
const text = fs.readFileSync(entry, "utf8");
const hook = "    raw = request\n    bindings = Bindings.of(env)\n    url = str(raw.url)\n";
if (!text.includes(hook)) throw new Error("entry.py changed: update bench/probes/inproc.mjs");
fs.writeFileSync(entry, text.replace(hook, hook + `    if url.endswith("/__probe"):\n        import json as _json\n        import inproc_probe\n        _b = _json.loads(str(await request.text()))\n        return js.Response.new(await inproc_probe.run(_b["kind"], int(_b["n"]), env, ctx, None))\n`));
const mf = await miniflareOnWorkerd();
const model = await startModel();
const launch = await import(pathToFileURL(path.join(ROOT, "local", "launch.mjs")).href);
const base = await launch.workerOptions({ vars: { LOCAL_DEV_STATS: "1" }, modelUrl: model.url, ratelimit: { "*": { limit: 1000000000, period: 60 } } });
const { instance, url: origin, pid } = await startMiniflare(mf, { ...base, ...launch.pythonModules(entry) });
try {
  const rows = await stepCosts({ url: new URL("/__probe", origin), pid, kinds: args.kinds.split(","), n: Number(args.n), rounds: Number(args.rounds), warm: 5 });
  for (const [kind, us] of Object.entries(rows)) console.log(`${kind.padEnd(16)} ${us.map((u) => u.toFixed(0)).join(" / ")} µs`);
} finally {
  await instance.dispose();
  model.child.kill();
  fs.rmSync(dir, { recursive: true, force: true });
}
