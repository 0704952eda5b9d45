// Runs the Python Worker in Pyodide the way workerd does: the Workers SDK from PyPI,
// the two JS modules workerd registers for it, and a new Default(ctx, env) per request
// with the request and the result converted by the SDK's rpc module.
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import { createRequire } from "node:module";
import { loadPyodide } from "pyodide";

const require = createRequire(import.meta.url);
const SITE = "/lib/python3.13/site-packages";
const WORKER_DIR = "/session/metadata";
const SDK_FILES = ["workers", "_workers_sdk_entropy_import_context.py"];

export function findSdk(root) {
  const lib = path.join(root, ".venv", "lib");
  if (fs.existsSync(lib)) {
    for (const dir of fs.readdirSync(lib)) {
      const site = path.join(lib, dir, "site-packages");
      if (fs.existsSync(path.join(site, "workers", "entrypoints.py"))) return site;
    }
  }
  throw new Error("workers-runtime-sdk not found in .venv: run `uv sync` first");
}

function walk(src, visit, rel = "") {
  const st = fs.statSync(src);
  if (st.isDirectory()) {
    for (const name of fs.readdirSync(src).sort()) {
      if (name === "__pycache__") continue;
      walk(path.join(src, name), visit, rel ? `${rel}/${name}` : name);
    }
  } else visit(src, rel);
}

export function copyInto(py, src, dest) {
  walk(src, (file, rel) => {
    const target = rel ? `${dest}/${rel}` : dest;
    py.FS.mkdirTree(path.posix.dirname(target));
    py.FS.writeFile(target, fs.readFileSync(file));
  });
}

// Everything a snapshot depends on: change any of it and the snapshot is rebuilt.
function fingerprint(sdkSite) {
  const hash = crypto.createHash("sha256");
  hash.update(require("pyodide/package.json").version);
  hash.update(process.version);
  for (const name of SDK_FILES) {
    walk(path.join(sdkSite, name), (file, rel) => { hash.update(rel); hash.update(fs.readFileSync(file)); });
  }
  return hash.digest("hex").slice(0, 16);
}

// The JS objects workerd hands the SDK, by name, so that a snapshot that refers to
// them can be given this start's objects again.
export function helperObjects(env) {
  const workersModule = { env, waitUntil: () => {} };
  const socketsModule = {};
  const helper = {
    cloudflareWorkersModule: workersModule,
    cloudflareSocketsModule: socketsModule,
    doAnImport: (name) => import(name),
    patchWaitUntil: () => {},
    patch_env_helper: () => {},
  };
  const flags = { python_workflows_implicit_dependencies: false, python_request_headers_preserve_commas: false };
  return new Map(Object.entries({
    helper, flags, env, workersModule, socketsModule, waitUntil: workersModule.waitUntil,
    ...Object.fromEntries(Object.entries(helper).filter(([, v]) => typeof v === "function")),
  }));
}

export function registerHelpers(py, objects) {
  py.registerJsModule("_pyodide_entrypoint_helper", objects.get("helper"));
  py.registerJsModule("_cloudflare_compat_flags", objects.get("flags"));
}

function snapshotSerializer(objects) {
  const names = new Map([...objects].map(([name, obj]) => [obj, name]));
  return (obj) => {
    const name = names.get(obj);
    if (name === undefined) throw new Error("snapshot refers to an unknown JS object");
    return { name };
  };
}

const SDK_IMPORT = `
import workers, workers.entrypoints, workers.rpc, asyncio, json, logging, gc
`;

// A snapshot captures Pyodide with the SDK imported (not our sources, which are
// loaded fresh every start), so a restart skips the ~3 s interpreter boot.
export async function bootPyodide(root, sdkSite, objects, log) {
  const cacheDir = path.join(root, ".cache", "pyodide");
  const snapFile = path.join(cacheDir, `snapshot-${fingerprint(sdkSite)}.bin`);
  const indexURL = path.dirname(require.resolve("pyodide/pyodide.mjs")) + path.sep;
  const useSnapshot = process.env.LOCAL_SNAPSHOT !== "0";
  if (useSnapshot && fs.existsSync(snapFile)) {
    try {
      const py = await loadPyodide({ indexURL, _loadSnapshot: new Uint8Array(fs.readFileSync(snapFile)),
        _snapshotDeserializer: ({ name }) => objects.get(name) });
      return { py, fromSnapshot: true };
    } catch (err) {
      log(`snapshot unusable (${err.message}); booting cold`);
    }
  }
  const py = await loadPyodide({ indexURL, _makeSnapshot: useSnapshot });
  copyInto(py, path.join(sdkSite, "workers"), `${SITE}/workers`);
  copyInto(py, path.join(sdkSite, "_workers_sdk_entropy_import_context.py"), `${SITE}/_workers_sdk_entropy_import_context.py`);
  registerHelpers(py, objects);
  await py.runPythonAsync(SDK_IMPORT);
  if (useSnapshot) {
    try {
      const snap = py.makeMemorySnapshot({ serializer: snapshotSerializer(objects) });
      fs.mkdirSync(cacheDir, { recursive: true });
      for (const old of fs.readdirSync(cacheDir)) fs.rmSync(path.join(cacheDir, old));
      fs.writeFileSync(snapFile, snap);
    } catch (err) {
      log(`could not write a snapshot: ${err.message}`);
    }
  }
  return { py, fromSnapshot: false };
}

export async function startWorker({ root, main, env, sdkSite = findSdk(root), log = console.error }) {
  const t0 = performance.now();
  const objects = helperObjects(env);
  const { py, fromSnapshot } = await bootPyodide(root, sdkSite, objects, log);
  registerHelpers(py, objects);
  const srcDir = path.dirname(main);
  copyInto(py, srcDir, WORKER_DIR);
  const entryModule = path.basename(main, ".py");
  const importStarted = performance.now();
  const harness = py.runPython(`
import sys, gc, importlib, json
sys.path.insert(0, ${JSON.stringify(WORKER_DIR)})
from workers import python_from_rpc, python_to_rpc
_entry = importlib.import_module(${JSON.stringify(entryModule)})

async def call(ctx, env, request):
    instance = _entry.Default(ctx, env)
    return python_to_rpc(await instance.fetch(python_from_rpc(request)))

def stats():
    import jsstream
    gc.collect()
    return json.dumps({**jsstream.live_streams(), "py_objects": len(gc.get_objects())})

{"call": call, "stats": stats}
`);
  const importMs = performance.now() - importStarted;
  const call = harness.get("call");
  const stats = harness.get("stats");
  harness.destroy();
  const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} };
  return {
    bootMs: performance.now() - t0,
    importMs,
    fromSnapshot,
    py,
    ctx,
    fetch: (request) => call(ctx, env, request),
    stats: () => JSON.parse(stats()),
  };
}
