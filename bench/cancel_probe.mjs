#!/usr/bin/env node
// Cancel probe: does a client's leaving reach the upstream when streams run side by side?
// The cancels part of bench/workerd.mjs (N streams at a time, half leaving after their first token
// of a 200-token, 10 ms/token answer; the model records clientClosedAt), for any set of variants,
// each in its own workerd process, each reached both through miniflare's entry worker (its normal
// URL) and through a direct socket on the user worker (unsafeDirectSockets), interleaved.
//
//   node bench/cancel_probe.mjs --variant js_none --variant js_wait --variant py_base=src \
//        [--levels 1,5,12,25] [--streams 100] [--via entry,direct] [--out FILE]
// Variants: js_orig (bench/workers/js_reframer.mjs); js_<mode> (js_reframer_wait.mjs?mode=<mode>);
// py_<name>=<dir> (the Python Worker with its modules from <dir>, e.g. a patched copy of src/).
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
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
const NATIVE = "@cf/google/gemma-4-26b-a4b-it";
const COMPAT_DATE = "2025-11-01";
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (...parts) => process.stderr.write(`[probe ${new Date().toISOString().slice(11, 19)}] ${parts.join(" ")}\n`);

function chatBody({ tokens, pace, tag }) {
  return { model: NATIVE, messages: [{ role: "user", content: `[[tokens:${tokens}]][[pace:${pace}]] run-${tag}` }], max_tokens: tokens + 100 };
}

function post(url, agent, body, leaveAfterFirst) {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const req = http.request(url, { method: "POST", agent: leaveAfterFirst ? false : agent, headers: { "content-type": "application/json", "content-length": data.length } }, (res) => {
      let first = true;
      res.on("data", () => {
        if (first && leaveAfterFirst) { first = false; req.destroy(); resolve({ status: res.statusCode, left: true }); }
        first = false;
      });
      res.on("end", () => resolve({ status: res.statusCode }));
      res.on("error", (err) => { if (!leaveAfterFirst) reject(err); });
    });
    req.on("error", (err) => { if (!leaveAfterFirst) reject(err); else resolve({ status: 0, error: String(err) }); });
    req.end(data);
  });
}

async function postRetry(url, agent, body, leave) {
  try { return await post(url, agent, body, leave); } catch (err) {
    if (err?.code !== "ECONNRESET" && !/socket hang up/.test(String(err))) throw err;
    return post(url, agent, body, leave);
  }
}

async function pool(items, concurrency, fn) {
  let next = 0;
  async function worker() { while (next < items.length) { const i = next++; await fn(items[i], i); } }
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

function getJson(url) {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: false }, (res) => {
      const parts = [];
      res.on("data", (c) => parts.push(c));
      res.on("end", () => { try { resolve(JSON.parse(Buffer.concat(parts).toString("utf8"))); } catch (err) { reject(err); } });
    }).on("error", reject);
  });
}

async function startModel() {
  const { spawn } = await import("node:child_process");
  const child = spawn(process.execPath, [path.join(ROOT, "local", "model.mjs"), "--port", "0", "--pace", "0"], { stdio: ["pipe", "pipe", "inherit"] });
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    child.stdout.on("data", (d) => { seen += d; const m = seen.match(/on (http:\/\/127\.0\.0\.1:\d+\/)/); if (m) resolve(m[1]); });
    child.once("exit", (code) => reject(new Error(`model exited ${code}`)));
  });
  return { child, url };
}

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
    const base = await workerOptions({ vars: { LOCAL_DEV_STATS: "1", UPSTREAM_TIMEOUT_SECONDS: "60" }, modelUrl, ratelimit: { limit: 1000000000, period: 60 } });
    const src = path.resolve(dir ?? path.join(ROOT, "src"));
    const names = fs.readdirSync(src).filter((f) => f.endsWith(".py")).sort((a, b) => (a === "entry.py" ? -1 : b === "entry.py" ? 1 : a < b ? -1 : 1));
    return { name, kind: "py", path: "/api/v1/chat", options: { ...base, ...direct, name, modulesRoot: src, modules: names.map((f) => ({ type: "PythonModule", path: path.join(src, f) })) } };
  }
  const js = name === "js_orig" ? "js_reframer.mjs" : "js_reframer_wait.mjs";
  const mode = name.replace(/^js_/, "").replace(/__(no)?assets$/, "");
  return { name, kind: "js", path: name === "js_orig" ? "/chat" : `/chat?mode=${mode}`,
    options: { ...direct, name, modules: true, scriptPath: path.join(ROOT, "bench", "workers", js), compatibilityDate: COMPAT_DATE, compatibilityFlags: ["enable_request_signal"], ai } };
}

async function main() {
  const { Miniflare, Log, LogLevel } = await import("miniflare");
  const workerd = (await import("workerd")).default;
  process.env.REAL_WORKERD = workerd.default ?? workerd;
  process.env.MINIFLARE_WORKERD_PATH = path.join(ROOT, "local", "workerd");
  process.env.WRANGLER_SEND_METRICS ??= "false";
  delete process.env.LOCAL_PYTHON_SNAPSHOT;
  const model = await startModel();
  const variants = [];
  const results = { started: new Date().toISOString(), levels: LEVELS, streams: STREAMS, loadavg: fs.readFileSync("/proc/loadavg", "utf8").trim(), rows: [], stats: {} };
  try {
    for (const spec of args.variant) {
      const v = await variantOptions(spec, model.url);
      v.mf = new Miniflare({ host: "127.0.0.1", port: 0, log: new Log(LogLevel.WARN), cf: false, ...v.options });
      const entry = await v.mf.ready;
      const direct = await v.mf.unsafeGetDirectURL(v.name);
      v.urls = { entry: new URL(v.path, entry), direct: new URL(v.path, direct) };
      v.statsUrl = v.kind === "py" ? new URL("/__local/stats", entry) : v.name === "js_orig" ? null : new URL("/stats", entry);
      v.agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
      say(`${v.name}: entry ${v.urls.entry} direct ${v.urls.direct}`);
      // Warm up (Pyodide's first request imports and compiles).
      for (const via of VIAS) await postRetry(v.urls[via], v.agent, chatBody({ tokens: 20, pace: 0, tag: `warm-${v.name}-${via}` }), false);
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
              return postRetry(v.urls[via], v.agent, chatBody({ tokens: leaves ? 200 : 20, pace: leaves ? 10 : 2, tag }), leaves)
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
