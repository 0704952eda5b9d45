#!/usr/bin/env node
// In-isolate costs of pieces of a request (bench/workers/inproc/probe.py): a copy of src/ with a
// POST /__probe route, n iterations of a kind per request, this workerd's CPU / n (µs).
//   node bench/probes/inproc.mjs [--src DIR] [--n 200] [--rounds 3] [--kinds a,b]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { cpuOf, miniflareOnWorkerd, startModel } from "../workerd.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const { values: args } = parseArgs({ options: { src: { type: "string", default: path.join(ROOT, "src") }, n: { type: "string", default: "200" }, rounds: { type: "string", default: "3" }, kinds: { type: "string", default: "noop,settings,env_objects,models,limiter,response_only,pipe_off,pipe,pipe_bare" } } });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "inproc-"));
fs.cpSync(path.resolve(args.src), dir, { recursive: true });
fs.copyFileSync(path.join(ROOT, "bench", "workers", "inproc", "probe.py"), path.join(dir, "inproc_probe.py"));
const entry = path.join(dir, "entry.py");
const text = fs.readFileSync(entry, "utf8");
const hook = "        raw = request.js_object\n        url = str(raw.url)\n";
if (!text.includes(hook)) throw new Error("entry.py changed: update bench/probes/inproc.mjs");
fs.writeFileSync(entry, text.replace(hook, hook + `        if url.endswith("/__probe"):\n            import json as _json\n            import inproc_probe\n            _b = _json.loads(await request.text())\n            return Response(await inproc_probe.run(_b["kind"], int(_b["n"]), self.env, self.ctx, self))\n`));
const mf = await miniflareOnWorkerd();
const model = await startModel();
const launch = await import(pathToFileURL(path.join(ROOT, "local", "launch.mjs")).href);
const base = await launch.workerOptions({ vars: { LOCAL_DEV_STATS: "1" }, modelUrl: model.url, ratelimit: { "*": { limit: 1000000000, period: 60 } } });
const instance = new mf.Miniflare(mf.convertV4MiniflareOptions({ host: "127.0.0.1", port: 0, log: new mf.Log(mf.LogLevel.WARN), ...base, ...launch.pythonModules(entry) }));
const url = new URL("/__probe", await instance.ready);
const kids = fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e)).filter((e) => { try { const st = fs.readFileSync(`/proc/${e}/stat`, "utf8"); return Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]) === process.pid && fs.readFileSync(`/proc/${e}/comm`, "utf8").startsWith("workerd"); } catch { return false; } });
const pid = Number(kids.at(-1));
const run = async (kind, n) => { const r = await fetch(url, { method: "POST", body: JSON.stringify({ kind, n }) }); const t = await r.text(); if (r.status !== 200) throw new Error(`${kind}: ${r.status} ${t.slice(0, 500)}`); };
const kinds = args.kinds.split(",");
try {
  for (const kind of kinds) await run(kind, 5);
  const rows = {};
  for (let round = 0; round < Number(args.rounds); round++) {
    for (const kind of kinds) {
      const a = cpuOf(pid).ms;
      await run(kind, Number(args.n));
      (rows[kind] ??= []).push(((cpuOf(pid).ms - a) * 1000) / Number(args.n));
    }
  }
  for (const [kind, us] of Object.entries(rows)) console.log(`${kind.padEnd(16)} ${us.map((u) => u.toFixed(0)).join(" / ")} µs`);
} finally {
  await instance.dispose();
  model.child.kill();
  fs.rmSync(dir, { recursive: true, force: true });
}
