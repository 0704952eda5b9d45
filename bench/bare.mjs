// Workers on bare workerd (no miniflare): one `workerd serve` process per Worker, its config
// written here, env.AI workerd's own Ai class (cloudflare-internal:ai-api) whose fetcher is the
// built-in model's port (an external service), so nothing but the Worker runs in that process
// and its CPU (bench/workerd.mjs cpuOf) is the Worker's own. miniflare's harness puts its entry
// worker, its rate-limiter Durable Object and its AI proxy worker in the same process, which
// adds 2-4 ms to every request of every variant (bench/notes/2026-11-28-window-cost.md).
//
// The relay is src/ as wrangler.toml configures it (vars, flags, Durable Objects, rate limiters,
// read through wrangler's own config reader); [assets] are left out (on Cloudflare the asset
// router is not the Worker's CPU). A rate limiter is a small in-isolate counter (BENCH_RATELIMIT
// below): Cloudflare's binding is the runtime's own, with no Durable Object behind it.
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SHARED_PYODIDE = path.resolve(ROOT, "..", "shared", "workerd-pyodide");

// The rate limiter each [[ratelimits]] binding becomes: counts per key in a fixed window, as
// the binding's `simple` limit does, and answers {success}.
const BENCH_RATELIMIT = `
export default function (env) {
  const counts = new Map();
  return {
    async limit({ key = "" } = {}) {
      const window = Math.floor(Date.now() / (env.period * 1000));
      const at = counts.get(key);
      const n = at && at.window === window ? at.n + 1 : 1;
      counts.set(key, { window, n });
      return { success: n <= env.limit };
    },
  };
}
`;

const text = (s) => JSON.stringify(String(s));

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => { const { port } = server.address(); server.close(() => resolve(port)); });
  });
}

function pythonModules(dir, main, from) {
  const names = fs.readdirSync(dir, { recursive: true })
    .map((name) => String(name).split(path.sep).join("/"))
    .filter((name) => (name.endsWith(".py") || name.endsWith(".bin")) && !name.split("/").includes("__pycache__"))
    .sort((a, b) => (a === main ? -1 : b === main ? 1 : a < b ? -1 : a > b ? 1 : 0));
  return names.map((name) => `(name = ${text(name)}, ${name.endsWith(".bin") ? "data" : "pythonModule"} = embed ${text(path.relative(from, path.join(dir, name)))})`);
}

function listening(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1", () => { socket.destroy(); resolve(true); });
    socket.once("error", () => resolve(false));
  });
}

/** wrangler.toml as wrangler reads it (an environment's vars, flags, Durable Objects, limiters). */
export async function wranglerConfig(envName) {
  process.env.WRANGLER_SEND_METRICS ??= "false";
  process.env.WRANGLER_LOG ??= "error";
  const { unstable_getMiniflareWorkerOptions } = await import("wrangler");
  const { workerOptions, main } = unstable_getMiniflareWorkerOptions(path.join(ROOT, "wrangler.toml"), envName, {});
  return { ...workerOptions, main };
}

/**
 * The capnp config of one Worker. spec: {kind: "python" | "js", dir, main, modules (js: file
 * names in dir), flags, date, vars, durableObjects {NAME: className}, ratelimits {NAME: {limit,
 * period}}, ai: true}.
 */
export function configText(spec, { port, modelPort, from = process.cwd() }) {
  // embed paths are read relative to the config's folder (`from`): workerd refuses absolute ones.
  const bindings = [];
  for (const [name, value] of Object.entries(spec.vars ?? {})) bindings.push(`(name = ${text(name)}, text = ${text(value)})`);
  if (spec.ai) bindings.push(`(name = "AI", wrapped = (moduleName = "cloudflare-internal:ai-api", innerBindings = [(name = "fetcher", service = "model")]))`);
  for (const [name, rl] of Object.entries(spec.ratelimits ?? {})) {
    bindings.push(`(name = ${text(name)}, wrapped = (moduleName = "bench-internal:ratelimit", innerBindings = [(name = "limit", json = ${text(rl.limit)}), (name = "period", json = ${text(rl.period)})]))`);
  }
  const classes = [...new Set(Object.values(spec.durableObjects ?? {}))];
  for (const [name, className] of Object.entries(spec.durableObjects ?? {})) bindings.push(`(name = ${text(name)}, durableObjectNamespace = ${text(className)})`);
  const modules = spec.kind === "python"
    ? pythonModules(spec.dir, spec.main, from)
    : spec.modules.map((f) => `(name = ${text(f)}, esModule = embed ${text(path.relative(from, path.join(spec.dir, f)))})`);
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w), (name = "model", external = (address = "127.0.0.1:${modelPort}", http = ())),
    (name = "do-storage", disk = (path = ${text(path.join(from, "do-storage"))}, writable = true)) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
  extensions = [ (modules = [ (name = "bench-internal:ratelimit", esModule = ${text(BENCH_RATELIMIT)}, internal = true) ]) ],
  ${process.env.BARE_V8_FLAGS ? `v8Flags = [ ${process.env.BARE_V8_FLAGS.split(" ").map(text).join(", ")} ],` : ""}
);
const w :Workerd.Worker = (
  modules = [ ${modules.join(",\n    ")} ],
  compatibilityDate = ${text(spec.date ?? "2025-11-01")},
  compatibilityFlags = [ ${(spec.flags ?? []).map(text).join(", ")} ],
  bindings = [ ${bindings.join(",\n    ")} ],
  ${classes.length ? `durableObjectNamespaces = [ ${classes.map((c) => `(className = ${text(c)}, uniqueKey = ${text(`bench-${c}`)}, enableSql = true)`).join(", ")} ],
  durableObjectStorage = (localDisk = "do-storage"),` : ""}
);
`;
}

/** The relay's spec: src/ (or a copy of it) as wrangler.toml configures it, plus `vars`. */
export async function relaySpec({ src = path.join(ROOT, "src"), vars = {}, envName, ratelimit } = {}) {
  const w = await wranglerConfig(envName);
  const ratelimits = Object.fromEntries(Object.entries(w.ratelimits ?? {}).map(([name, rl]) => [name, ratelimit ?? rl.simple]));
  const durableObjects = Object.fromEntries(Object.entries(w.durableObjects ?? {}).map(([name, d]) => [name, d.className]));
  // A copy of src/ from before the module entry (a class named Default) runs without its flag.
  const entry = fs.readFileSync(path.join(path.resolve(src), "entry.py"), "utf8");
  const flags = /^class Default\(/m.test(entry) ? w.compatibilityFlags.filter((f) => f !== "disable_python_no_global_handlers") : w.compatibilityFlags;
  return { kind: "python", dir: path.resolve(src), main: "entry.py", flags, date: w.compatibilityDate,
    vars: { ...w.bindings, ...vars }, durableObjects, ratelimits, ai: true };
}

/** Start one Worker on bare workerd; resolves once it answers HTTP. */
export async function startBare(name, spec, modelUrl, { extraArgs = [] } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `bare-${name}-`));
  const port = await freePort();
  fs.writeFileSync(path.join(dir, "config.capnp"), configText(spec, { port, modelPort: new URL(modelUrl).port, from: dir }));
  const pyodide = path.resolve(process.env.WORKERD_PYODIDE_DIR || SHARED_PYODIDE);
  const packages = path.join(dir, "packages");
  fs.mkdirSync(packages);
  fs.mkdirSync(path.join(dir, "do-storage"));  // SQLite-backed Durable Objects need a disk
  const workerd = (await import("workerd")).default;
  const bin = workerd.default ?? workerd;
  const argv = ["serve", "--experimental", `--pyodide-bundle-disk-cache-dir=${pyodide}/bundle`, `--pyodide-package-disk-cache-dir=${packages}`, ...extraArgs, "config.capnp"];
  const child = spawn(bin, argv, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (d) => { output = (output + d).slice(-20000); if (process.env.BARE_LOGS) process.stderr.write(`[${name}] ${d}`); };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const url = new URL(`http://127.0.0.1:${port}/`);
  const t0 = performance.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`workerd for ${name} exited ${child.exitCode}: ${output.slice(-3000)}`);
    if (await listening(port)) break;
    if (performance.now() - t0 > 120_000) { child.kill(); throw new Error(`workerd for ${name} not ready in 120 s: ${output.slice(-3000)}`); }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    name, url, pid: child.pid, child, output: () => output,
    stop: async () => {
      if (child.exitCode === null) { child.kill(); await new Promise((r) => child.once("exit", r)); }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The bench's three peers: the JS recipe and the Python passthrough (bench/workers). */
export function peerSpec(name) {
  const workers = path.join(ROOT, "bench", "workers");
  if (name === "passthrough") {
    return { kind: "python", dir: path.join(workers, "passthrough"), main: "entry.py", ai: true,
      flags: ["python_workers", "python_workers_20260610", "enable_request_signal"] };
  }
  if (name === "js_reframer") {
    return { kind: "js", dir: workers, modules: ["js_reframer.mjs", "reframer.mjs"], ai: true, flags: ["enable_request_signal"] };
  }
  // The floors under a Python re-framer (bench/workers/py_floors: the path picks one).
  if (name === "py_floors") {
    return { kind: "python", dir: path.join(workers, "py_floors"), main: "entry.py", ai: true,
      flags: ["python_workers", "python_workers_20260610", "enable_request_signal", "disable_python_no_global_handlers"] };
  }
  // Any other JS Worker of bench/workers/<name>.mjs (js_identity, js_direct: the floors under it).
  if (fs.existsSync(path.join(workers, `${name}.mjs`))) {
    return { kind: "js", dir: workers, modules: [`${name}.mjs`, "reframer.mjs"], ai: true, flags: ["enable_request_signal"] };
  }
  throw new Error(`no peer ${name}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // node bench/bare.mjs: print the relay's config (a look at what the bench runs).
  console.log(configText(await relaySpec(), { port: 0, modelPort: 0 }));
}
