#!/usr/bin/env node
// Cancel probe: does a client's leaving reach the upstream when streams run side by side?
// The cancels part of bench/workerd.mjs (N streams at a time, half leaving after their first token
// of a 200-token, 10 ms/token answer; the model records clientClosedAt), for any set of variants,
// each in its own workerd process, each reached both through miniflare's entry worker (its normal
// URL) and through a direct socket on the user worker (unsafeDirectSockets), interleaved.
//
//   node bench/probes/cancel_probe.mjs --variant js_none --variant js_wait --variant py_base=src \
//        [--levels 1,5,12,25] [--streams 100] [--via entry,direct] [--out FILE]
// Variants: js_orig (bench/workers/js_reframer.mjs); js_<mode> (js_reframer_wait.mjs?mode=<mode>);
// py_<name>=<dir> (the Python Worker with its modules from <dir>, e.g. a patched copy of src/).
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { chatBody, getJson, miniflareOnWorkerd, pool, post, startModel } from "./workerd.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const { values: args } = parseArgs({ options: {
  variant: { type: "string", multiple: true, default: [] },
  levels: { type: "string", default: "1,5,12,25" },
  streams: { type: "string", default: "100" },
  via: { type: "string", default: "entry,direct" },
  rounds: { type: "string", default: "1" },
  out: { type: "string", default: "" },
} });
const LEVELS = args.levels.split(",").map(Number);
const STREAMS = Number(args.streams);
const VIAS = args.via.split(",");
const COMPAT_DATE = "2025-11-01";
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (...parts) => process.stderr.write(`[probe ${new Date().toISOString().slice(11, 19)}] ${parts.join(" ")}\n`);

// A name ending in __assets / __noassets adds / removes an [assets] directory (miniflare then puts
// its asset router in front of the Worker, on the direct socket too).
async function variantOptions(spec, modelUrl) {
  const v = await baseVariantOptions(spec, modelUrl);
  if (v.name.endsWith("__noassets")) delete v.options.assets;
  if (v.name.endsWith("__assets")) v.options.assets = { directory: path.join(ROOT, "public"), routerConfig: { has_user_worker: true } };
  return v;
}

async function baseVariantOptions(spec, modelUrl) {
  const [name, dir] = spec.split("=");
  const ai = { binding: "AI", remoteProxyConnectionString: new URL(modelUrl) };
  const direct = { unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }] };
  if (name.startsWith("pyprobe_")) {
    // bench/workers/cancel_py/entry.py?mode=<rest of the name>
    const dir = path.join(ROOT, "bench", "workers", "cancel_py");
    return { name, kind: "js", path: `/chat?mode=${name.replace(/^pyprobe_/, "").replace(/__(no)?assets$/, "")}`,
      options: { ...direct, name, compatibilityDate: COMPAT_DATE, compatibilityFlags: ["python_workers", "enable_request_signal"], modulesRoot: dir,
        modules: [{ type: "PythonModule", path: path.join(dir, "entry.py") }], ai } };
  }
  if (name.startsWith("py_")) {
    const { workerOptions } = await import(pathToFileURL(path.join(ROOT, "local", "launch.mjs")).href);
    const base = await workerOptions({ vars: { LOCAL_DEV_STATS: "1", UPSTREAM_TIMEOUT_SECONDS: "60" }, modelUrl, ratelimit: { "*": { limit: 1000000000, period: 60 } } });
    const { pythonModules } = await import(pathToFileURL(path.join(ROOT, "local", "launch.mjs")).href);
    const src = path.resolve(dir ?? path.join(ROOT, "src"));
    return { name, kind: "py", path: "/api/v1/chat", options: { ...base, ...direct, name, ...pythonModules(path.join(src, "entry.py")) } };
  }
  const js = name === "js_orig" ? "js_reframer.mjs" : "js_reframer_wait.mjs";
  const mode = name.replace(/^js_/, "").replace(/__(no)?assets$/, "");
  return { name, kind: "js", path: name === "js_orig" ? "/chat" : `/chat?mode=${mode}`,
    options: { ...direct, name, modules: true, scriptPath: path.join(ROOT, "bench", "workers", js), compatibilityDate: COMPAT_DATE, compatibilityFlags: ["enable_request_signal"], ai } };
}

async function main() {
  const { Miniflare, Log, LogLevel, convertV4MiniflareOptions } = await miniflareOnWorkerd();
  const model = await startModel();
  const variants = [];
  const results = { started: new Date().toISOString(), levels: LEVELS, streams: STREAMS, loadavg: fs.readFileSync("/proc/loadavg", "utf8").trim(), rows: [], stats: {} };
  try {
    for (const spec of args.variant) {
      const v = await variantOptions(spec, model.url);
      v.mf = new Miniflare(convertV4MiniflareOptions({ host: "127.0.0.1", port: 0, log: new Log(LogLevel.WARN), cf: false, ...v.options }));
      const entry = await v.mf.ready;
      const direct = await v.mf.unsafeGetDirectURL(v.name);
      v.urls = { entry: new URL(v.path, entry), direct: new URL(v.path, direct) };
      v.statsUrl = v.kind === "py" ? new URL("/__local/stats", entry) : v.name === "js_orig" ? null : new URL("/stats", entry);
      v.agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
      say(`${v.name}: entry ${v.urls.entry} direct ${v.urls.direct}`);
      // Warm up (Pyodide's first request imports and compiles).
      for (const via of VIAS) await post({ url: v.urls[via], agent: v.agent }, chatBody({ tokens: 20, tag: `warm-${v.name}-${via}` }));
      variants.push(v);
    }
    for (const v of variants) results.stats[v.name] = { before: v.statsUrl ? await getJson(v.statsUrl) : null };
    for (let round = 0; round < Number(args.rounds); round++) {
      for (const c of LEVELS) {
        for (const v of variants) {
          for (const via of VIAS) {
            const left = new Set();
            let failed = 0;
            const items = Array.from({ length: STREAMS }, (_, i) => `cx-${v.name}-${via}-${c}-${round}-${i}`);
            await pool(items, c, (tag, i) => {
              const leaves = i % 2 === 1;
              if (leaves) left.add(tag);
              return post({ url: v.urls[via], agent: v.agent }, chatBody({ tokens: leaves ? 200 : 20, pace: leaves ? 10 : 2, tag }), { leaveAfterFirst: leaves })
                .catch((err) => { failed += 1; say(`${v.name} ${tag}: ${err}`); });
            });
            await sleep(2500);
            const calls = await getJson(new URL("__local/calls", model.url));
            let early = 0;
            for (const call of calls) {
              const tag = call.inputs?.messages?.at(-1)?.content?.match(/run-(cx-\S+)/)?.[1];
              if (tag && left.has(tag) && call.clientClosedAt != null) early += 1;
            }
            const row = { variant: v.name, via, concurrency: c, round, cancelled: left.size, upstreamClosedEarly: early, failed };
            results.rows.push(row);
            say(`${v.name} via ${via} N=${c}: ${early}/${left.size} closed early${failed ? `, ${failed} requests failed` : ""}`);
          }
        }
      }
    }
    await sleep(3000);
    for (const v of variants) {
      if (!v.statsUrl) continue;
      const s = await getJson(v.statsUrl);
      if (v.kind === "py") delete s.py_types;
      results.stats[v.name].after = s;
      if (v.kind === "py") delete results.stats[v.name].before.py_types;
      say(`${v.name} stats after: ${JSON.stringify(s)}`);
    }
  } finally {
    for (const v of variants) { v.agent?.destroy(); await v.mf?.dispose().catch(() => {}); }
    model.child.stdin.end();
    model.child.kill();
  }
  if (args.out) fs.writeFileSync(args.out, JSON.stringify(results, null, 1) + "\n");
  // Summary table: variant/via rows, one column per level.
  for (const v of variants) for (const via of VIAS) {
    const cells = LEVELS.map((c) => results.rows.filter((r) => r.variant === v.name && r.via === via && r.concurrency === c).map((r) => `${r.upstreamClosedEarly}/${r.cancelled}`).join("+"));
    console.log(`${v.name.padEnd(18)} ${via.padEnd(7)} ${LEVELS.map((c, i) => `N=${c}: ${cells[i]}`).join("  ")}`);
  }
  for (const v of variants) if (v.statsUrl) console.log(`${v.name} stats: ${JSON.stringify(results.stats[v.name].after)}`);
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
