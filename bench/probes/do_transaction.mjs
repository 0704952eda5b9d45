#!/usr/bin/env node
// Does ctx.storage.transactionSync() take a Python callable in a Python Durable Object on the
// pinned workerd, roll back when it raises (a Python exception, a SQLite error), and hand the
// error back to Python? conversation_store.Store.atomic relies on it.
//
//   node bench/probes/do_transaction.mjs      (WORKERD_PYODIDE_DIR set offline)
//
// The results are in bench/notes/2026-11-25-durable-state.md.
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
process.env.MINIFLARE_WORKERD_PATH = path.join(ROOT, "local", "workerd");
const workerd = (await import("workerd")).default;
process.env.REAL_WORKERD = workerd.default ?? workerd;
const { Miniflare } = await import("miniflare");
const dir = path.join(ROOT, "bench", "workers", "txn_py");
const mf = new Miniflare({
  compatibilityDate: "2025-11-01",
  compatibilityFlags: ["python_workers"],
  modulesRoot: dir,
  modules: [{ type: "PythonModule", path: path.join(dir, "entry.py") }],
  durableObjects: { PROBE: { className: "Probe", useSQLite: true } },
});
const url = await mf.ready;
const response = await fetch(url);
console.log(JSON.stringify(await response.json(), null, 2));
await mf.dispose();
