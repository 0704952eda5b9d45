#!/usr/bin/env node
// The local launcher: src/ unchanged on workerd (Cloudflare's runtime, the npm build wrangler
// pins), through miniflare, the library `wrangler dev` is built on, configured by wrangler's own
// reading of wrangler.toml (vars per environment, .dev.vars, [assets], [[ratelimits]]).
// The only thing wrangler dev cannot do offline is the AI binding ("needs to be run remotely"):
// here `env.AI` is still workerd's own Ai class, and its remote side is the built-in model
// (local/model.mjs), a process of its own that speaks the binding's wire protocol.
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// As the Makefile does: workerd reads the offline Pyodide bundle beside the checkout
// (../shared/workerd-pyodide) when it is there and nothing else is set, so tests, the bench and
// `node local/launch.mjs` run offline without exporting anything.
const SHARED_PYODIDE = path.resolve(ROOT, "..", "shared", "workerd-pyodide");
if (!process.env.WORKERD_PYODIDE_DIR && fs.existsSync(SHARED_PYODIDE)) process.env.WORKERD_PYODIDE_DIR = SHARED_PYODIDE;

// Set only here, never in wrangler.toml: turns on the Worker's /__local/stats route.
export const STATS_VAR = "LOCAL_DEV_STATS";

const HELP = `Usage: node local/launch.mjs [options]

Runs the Worker in src/ on workerd (through miniflare) with the built-in offline model as env.AI.

  --env NAME          a [env.NAME] of wrangler.toml (default: the top level)
  --port N            port on 127.0.0.1 (default: $PORT or 8787; 0 picks a free one)
  --pace MS           ms between the built-in model's tokens (default 40)
  --var NAME=VALUE    set a var on top of wrangler.toml and .dev.vars (repeatable)
  --ratelimit N/S     every [[ratelimits]] binding allows N requests per S seconds (S: 10 or 60)
                      instead of wrangler.toml's numbers (tests use a short period, or none);
                      NAME=N/S sets one binding (repeatable; after N/S, it wins for NAME)
  --no-conversations  leave out wrangler.toml's Durable Object bindings (CONVERSATIONS): the
                      deployment without durable conversations (the page keeps chats in the browser)
  --persist DIR       keep Durable Objects (durable conversations) on disk in DIR, so they
                      survive a restart (make dev: .cache/durable-objects; default: in memory)
  --snapshot MODE     off | save | load | auto: the dedicated Python memory snapshot a deploy
                      makes (auto: load .cache/python-snapshot if there, else save it first)
  --inspect PORT      open the V8 inspector of the Worker's isolate on 127.0.0.1:PORT (0: a free
                      one; the ready line's "inspector"): JS heap and Wasm memory (make memcheck)
  --exit-on-stdin-eof stop when standard input closes (for test harnesses)
  -h, --help          this text

Environment: WORKERD_PYODIDE_DIR=<dir with bundle/ and packages/> runs workerd offline
(see ../shared/workerd-pyodide); unset, workerd downloads Cloudflare's Pyodide bundle.
Local-only routes: the model's GET|DELETE /__local/calls (its own URL), the launcher's
PUT /__local/vars (control URL: change vars as the dashboard does, by restarting workerd),
and the Worker's GET /__local/stats (only with ${STATS_VAR}=1, which only this launcher sets).`;

// What Pyodide prints when the isolate's Python runtime has died for good. On this workerd a fatal
// error ends the workerd process (abortIsolate(), as Cloudflare replaces such an isolate); miniflare
// then starts it again. The launcher says both, so a log reader sees why requests failed.
export const PYODIDE_FATAL = "Pyodide has suffered a fatal error";

export function log(fields) {
  process.stdout.write(JSON.stringify({ t: new Date().toISOString(), source: "launcher", ...fields }) + "\n");
}

function fail(message) {
  log({ level: "error", message });
  process.exit(1);
}

// Asked before anything starts: a port in use then fails in one line, instead of after workerd
// has started and died with its own stack trace on stderr.
function portFree(port) {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once("error", (err) => resolve(err.code !== "EADDRINUSE"));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

async function startModelProcess(paceMs) {
  const child = spawn(process.execPath, [path.join(ROOT, "local", "model.mjs"), "--port", "0", "--pace", String(paceMs)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    child.stdout.on("data", (data) => {
      seen += data;
      const m = seen.match(/on (http:\/\/127\.0\.0\.1:\d+\/)/);
      if (m) resolve(m[1]);
    });
    child.once("exit", (code) => reject(new Error(`built-in model exited (${code}): ${seen}`)));
  });
  return { child, url };
}

// workerd's output, as miniflare 5 hands it over (one {level, message} per line), passed through
// as miniflare would (warnings and errors to stderr), with Pyodide's fatal error reported.
export function runtimeLogs(onFatal) {
  return ({ level, message }) => {
    if (level === "error" || level === "warn") console.error(message); else console.log(message);
    if (message.includes(PYODIDE_FATAL)) onFatal();
  };
}

// Every .py under the main module's folder, packages included (names like "streaming/frames.py",
// as wrangler's **/*.py rule uploads them), the main module first: workerd runs the first module.
// Every .bin is a Data module, as wrangler's default **/*.bin rule uploads it: a Python Worker
// reads it as a file beside its modules (the token table of /v1/embeddings).
export function pythonModules(mainFile) {
  const dir = path.dirname(mainFile);
  const main = path.basename(mainFile);
  const names = fs.readdirSync(dir, { recursive: true })
    .map((name) => String(name).split(path.sep).join("/"))
    .filter((name) => (name.endsWith(".py") || name.endsWith(".bin")) && !name.split("/").includes("__pycache__"))
    .sort((a, b) => (a === main ? -1 : b === main ? 1 : a < b ? -1 : a > b ? 1 : 0));
  const type = (name) => (name.endsWith(".bin") ? "Data" : "PythonModule");
  return { modulesRoot: dir, modules: names.map((name) => ({ type: type(name), path: path.join(dir, name) })) };
}

export async function workerOptions({ envName, vars, modelUrl, ratelimit, conversations = true }) {
  process.env.WRANGLER_SEND_METRICS ??= "false";
  // Here env.AI is not remote (the built-in model answers it): wrangler's warning that AI
  // "always accesses remote resources" would mislead, and it is its only output here.
  process.env.WRANGLER_LOG ??= "error";
  const { unstable_getMiniflareWorkerOptions } = await import("wrangler");
  const { workerOptions: base, main } = unstable_getMiniflareWorkerOptions(path.join(ROOT, "wrangler.toml"), envName, {});
  if (!base.ai) log({ level: "warn", message: `no [ai] binding in ${envName ? `[env.${envName}]` : "the top level"} of wrangler.toml: env.AI is missing` });
  // ratelimit: {"*": {limit, period}, NAME: {limit, period}, ...}
  const ratelimits = ratelimit && base.ratelimits
    ? Object.fromEntries(Object.entries(base.ratelimits).map(([name, rl]) => [name, { ...rl, simple: ratelimit[name] ?? ratelimit["*"] ?? rl.simple }]))
    : base.ratelimits;
  if (!conversations) delete base.durableObjects;
  return {
    ...base,
    ratelimits,
    name: "ai-chat",
    ...pythonModules(main),
    bindings: { ...base.bindings, ...vars },
    ai: base.ai ? { ...base.ai, remoteProxyConnectionString: new URL(modelUrl) } : undefined,
  };
}

// A snapshot holds the Worker's modules as they were imported: it belongs to exactly this
// src/, this workerd and these compatibility settings, and is kept under their fingerprint.
function snapshotDir(options, workerdPath) {
  const hash = crypto.createHash("sha256");
  hash.update(fs.readFileSync(workerdPath));
  hash.update(JSON.stringify([options.compatibilityDate, options.compatibilityFlags]));
  for (const m of options.modules) { hash.update(path.relative(options.modulesRoot, m.path)); hash.update(fs.readFileSync(m.path)); }
  return path.join(ROOT, ".cache", "python-snapshot", hash.digest("hex").slice(0, 16));
}

async function readJson(req) {
  const parts = [];
  for await (const part of req) parts.push(part);
  return JSON.parse(Buffer.concat(parts).toString("utf8") || "{}");
}

// Durable Objects are kept under a folder named for the workerd release: storage written by one
// release may not open in an older one, so switching releases starts afresh instead of failing.
export function persistPath(persist, workerdVersion) {
  return path.join(path.resolve(persist), `workerd-${workerdVersion}`);
}

export async function launch({ envName, port, paceMs = 40, vars = {}, snapshot = "off", ratelimit, persist, conversations = true, inspectorPort }) {
  const { Miniflare, Log, LogLevel, convertV4MiniflareOptions } = await import("miniflare");
  const workerd = (await import("workerd")).default;
  process.env.REAL_WORKERD = workerd.default;
  process.env.MINIFLARE_WORKERD_PATH = path.join(ROOT, "local", "workerd");
  const model = await startModelProcess(paceMs);
  const liveVars = { ...vars, [STATS_VAR]: "1" };
  // WARN, not INFO: miniflare's own line per request ("[mf:info] POST /api/v1/chat 200 OK (12ms)")
  // is written when the response headers leave, so it says 200 for an answer that later failed;
  // the Worker's own JSON line per request, written at the real end, is the one to read.
  // cf: false: the placeholder Request.cf, without first trying to download Cloudflare's.
  // A Pyodide fatal error ends workerd; miniflare starts it again and unsafeHandleRuntimeRestart
  // says when it is back.
  let fatalErrors = 0;
  const shared = { host: "127.0.0.1", port, log: new Log(LogLevel.WARN), cf: false, logRequests: false,
    handleStructuredLogs: runtimeLogs(() => {
      fatalErrors += 1;
      log({ level: "error", message: "Pyodide fatal error: workerd ends the isolate's process; it is restarted", fatal_errors: fatalErrors });
    }),
    unsafeHandleRuntimeRestart: () => log({ level: "info", message: "workerd restarted", fatal_errors: fatalErrors }),
    ...(persist ? { resourcePersistencePath: persistPath(persist, workerd.version) } : {}),
    ...(inspectorPort === undefined ? {} : { inspectorPort }) };
  const options = async () => convertV4MiniflareOptions({ ...shared, ...(await workerOptions({ envName, vars: liveVars, modelUrl: model.url, ratelimit, conversations })) });

  const snapDir = snapshotDir(await workerOptions({ envName, vars: liveVars, modelUrl: model.url }), process.env.REAL_WORKERD);
  async function start(mode) {
    if (mode === "load" && !fs.existsSync(path.join(snapDir, "snapshot.bin"))) {
      throw new Error(`no snapshot of this src/ in ${path.relative(ROOT, snapDir)}: start once with --snapshot save (or auto)`);
    }
    if (mode === "off") delete process.env.LOCAL_PYTHON_SNAPSHOT;
    else {
      fs.mkdirSync(snapDir, { recursive: true });
      process.env.LOCAL_PYTHON_SNAPSHOT = mode;
      process.env.LOCAL_PYTHON_SNAPSHOT_DIR = snapDir;
    }
    const mf = new Miniflare(await options());
    const url = await mf.ready;
    shared.port = Number(url.port);
    return { mf, url };
  }

  let mode = snapshot;
  if (snapshot === "auto") mode = fs.existsSync(path.join(snapDir, "snapshot.bin")) ? "load" : "save";
  const { mf, url } = await start(mode);

  // Changing a var is a new version of the Worker, as in the dashboard: miniflare restarts workerd.
  const control = http.createServer(async (req, res) => {
    try {
      if (req.method === "PUT" && req.url === "/__local/vars") {
        for (const [k, v] of Object.entries(await readJson(req))) {
          if (v === null) delete liveVars[k]; else liveVars[k] = String(v);
        }
        await mf.setOptions(await options());
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(JSON.stringify(liveVars));
      }
      res.writeHead(404).end();
    } catch (err) {
      res.writeHead(500, { "content-type": "text/plain" }).end(String(err?.stack ?? err));
    }
  });
  await new Promise((resolve) => control.listen(0, "127.0.0.1", resolve));

  async function stop() {
    control.close();
    model.child.stdin.end();
    model.child.kill();
    await mf.dispose();
  }
  const inspector = inspectorPort === undefined ? undefined : (await mf.getInspectorURL()).href;
  return { url: url.href, modelUrl: model.url, controlUrl: `http://127.0.0.1:${control.address().port}/`, mode, stop, inspector };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let values;
  try {
    ({ values } = parseArgs({ options: {
      env: { type: "string" }, port: { type: "string" }, pace: { type: "string" },
      var: { type: "string", multiple: true }, snapshot: { type: "string" }, ratelimit: { type: "string", multiple: true },
      persist: { type: "string" }, "no-conversations": { type: "boolean" }, inspect: { type: "string" },
      "exit-on-stdin-eof": { type: "boolean" }, help: { type: "boolean", short: "h" },
    } }));
  } catch (err) {
    fail(`${err.message} (see --help)`);
  }
  if (values.help) { console.log(HELP); process.exit(0); }
  const vars = {};
  for (const item of values.var ?? []) {
    const at = item.indexOf("=");
    if (at < 1) fail(`--var wants NAME=VALUE, got ${item}`);
    vars[item.slice(0, at)] = item.slice(at + 1);
  }
  let ratelimit;
  for (const item of values.ratelimit ?? []) {
    const m = item.match(/^(?:(\w+)=)?(\d+)\/(\d+)$/);
    if (!m) fail(`--ratelimit wants N/S or NAME=N/S (say 5/10), got ${item}`);
    ratelimit = { ...ratelimit, [m[1] ?? "*"]: { limit: Number(m[2]), period: Number(m[3]) } };
  }
  const port = Number(values.port ?? process.env.PORT ?? 8787);
  const snapshot = values.snapshot ?? "off";
  if (!["off", "save", "load", "auto"].includes(snapshot)) fail(`--snapshot wants off, save, load or auto, got ${snapshot}`);
  const inUse = `port ${port} is in use: stop what runs there or pick another with --port N (or PORT=N make dev)`;
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port wants a number from 0 to 65535, got ${values.port ?? process.env.PORT}`);
  if (port !== 0 && !(await portFree(port))) fail(inUse);
  const started = performance.now();
  let running;
  try {
    const inspectorPort = values.inspect === undefined ? undefined : Number(values.inspect);
    running = await launch({ envName: values.env, port, paceMs: Number(values.pace ?? 40), vars, snapshot, ratelimit, persist: values.persist, conversations: !values["no-conversations"], inspectorPort });
  } catch (err) {
    if (err?.code === "ERR_ADDRESS_IN_USE") fail(inUse);
    const hint = process.env.WORKERD_PYODIDE_DIR ? "" :
      " (offline? workerd downloads its Pyodide bundle at start: set WORKERD_PYODIDE_DIR, see ../shared/workerd-pyodide)";
    fail(String(err?.message ?? err).split("\n")[0] + hint);
  }
  const ms = Math.round(performance.now() - started);
  log({ level: "info", message: "ready", ms, snapshot: running.mode, url: running.url, model: running.modelUrl, control: running.controlUrl, ...(running.inspector ? { inspector: running.inspector } : {}) });
  console.log(`ai-chat on workerd ready in ${ms} ms (snapshot: ${running.mode}) on ${running.url}`);
  console.log(`change vars live (the kill switch, say): PUT ${new URL("__local/vars", running.controlUrl)}`);
  const stop = async () => {
    log({ level: "info", message: "stopping" });
    setTimeout(() => process.exit(0), 3000).unref();
    await running.stop().catch(() => {});
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  if (values["exit-on-stdin-eof"]) { process.stdin.on("end", stop); process.stdin.on("error", stop); process.stdin.resume(); }
}
