// What our modules add to a cold start, inside Pyodide restored from the runtime's
// snapshot (the Workers SDK already imported, as on Cloudflare, where imports run once at
// deploy time and are snapshotted). The stdlib modules we use are timed separately: the
// first import from Pyodide's stdlib zip after a restore pays for reading its directory.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { bootPyodide, copyInto, findSdk, helperObjects, registerHelpers } from "../runtime/host.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const STDLIB = ["asyncio", "codecs", "dataclasses", "json", "logging", "math", "os", "re", "time", "typing", "urllib.parse", "weakref", "collections.abc"];

const objects = helperObjects({ AI: {} });
const { py, fromSnapshot } = await bootPyodide(ROOT, findSdk(ROOT), objects, () => {});
registerHelpers(py, objects);
copyInto(py, path.join(ROOT, "src"), "/session/metadata");
const timing = JSON.parse(py.runPython(`
import sys, time, json, importlib
sys.path.insert(0, "/session/metadata")
t0 = time.perf_counter()
for name in ${JSON.stringify(STDLIB)}:
    importlib.import_module(name)
t1 = time.perf_counter()
per_module = {}
for name in ["errors", "sse", "upstream", "settings", "relay", "web", "chat_request", "chat_events", "app", "openai_compat", "jsstream", "entry"]:
    s = time.perf_counter()
    importlib.import_module(name)
    per_module[name] = round((time.perf_counter() - s) * 1000, 2)
t2 = time.perf_counter()
json.dumps({"stdlib_ms": (t1 - t0) * 1000, "ours_ms": (t2 - t1) * 1000, "per_module_ms": per_module})
`));
console.log(JSON.stringify({ ...timing, fromSnapshot }));
process.exit(0);
