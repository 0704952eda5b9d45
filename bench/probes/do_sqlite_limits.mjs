#!/usr/bin/env node
// What one value, one row and one bound parameter may hold in a Durable Object's SQLite
// storage on the pinned workerd (ctx.storage.sql), and what a write past it throws.
//
//   node bench/probes/do_sqlite_limits.mjs
//
// A JS object is enough: the limit is workerd's SQLite's, whatever language writes. The results
// are in bench/notes/2026-11-25-durable-state.md.
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
process.env.MINIFLARE_WORKERD_PATH = path.join(ROOT, "local", "workerd");
process.env.REAL_WORKERD = (await import("workerd")).default.default ?? (await import("workerd")).default;
const { Miniflare } = await import("miniflare");

const script = `
import { DurableObject } from "cloudflare:workers";
export class Probe extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, a, b)");
  }
  attempt(fn) {
    try { fn(); return { ok: true }; } catch (e) { return { ok: false, error: String(e && e.message || e) }; }
  }
  async fetch(request) {
    const q = new URL(request.url).searchParams;
    const kind = q.get("kind");
    const n = Number(q.get("n"));
    const sql = this.sql;
    let result;
    if (kind === "text") result = this.attempt(() => sql.exec("INSERT INTO t (a) VALUES (?)", "x".repeat(n)));
    else if (kind === "text_utf8") result = this.attempt(() => sql.exec("INSERT INTO t (a) VALUES (?)", "\\u00e9".repeat(n / 2)));
    else if (kind === "blob") result = this.attempt(() => sql.exec("INSERT INTO t (a) VALUES (?)", new Uint8Array(n).buffer));
    else if (kind === "row2") result = this.attempt(() => sql.exec("INSERT INTO t (a, b) VALUES (?, ?)", "x".repeat(n / 2), "y".repeat(n / 2)));
    else if (kind === "param_json_each") {
      // one parameter of n bytes, split by json_each into rows of 1,000 bytes each
      const items = JSON.stringify(Array.from({ length: Math.floor(n / 1003) }, () => "z".repeat(1000)));
      result = this.attempt(() => sql.exec("INSERT INTO t (a) SELECT value FROM json_each(?)", items));
      result.param = items.length;
    } else if (kind === "concat") {
      // a value grown inside SQLite: two halves concatenated by SQL
      result = this.attempt(() => sql.exec("INSERT INTO t (a) VALUES (? || ?)", "x".repeat(n / 2), "y".repeat(n / 2)));
    } else if (kind === "statement") {
      result = this.attempt(() => sql.exec("SELECT '" + "x".repeat(n) + "' AS v").toArray());
    } else if (kind === "size") {
      result = { ok: true, size: this.ctx.storage.sql.databaseSize };
    }
    sql.exec("DELETE FROM t");
    return Response.json(result);
  }
}
export default {
  async fetch(request, env) {
    const stub = env.PROBE.get(env.PROBE.idFromName("p"));
    return stub.fetch(request);
  },
};
`;

const mf = new Miniflare({
  modules: true,
  script,
  compatibilityDate: "2025-11-01",
  durableObjects: { PROBE: { className: "Probe", useSQLite: true } },
});
const url = await mf.ready;
async function probe(kind, n) {
  const response = await fetch(`${url}?kind=${kind}&n=${n}`);
  return response.json();
}
async function largest(kind, lo, hi) {
  // lo passes, hi fails: binary search to the byte
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if ((await probe(kind, mid)).ok) lo = mid;
    else hi = mid;
  }
  return lo;
}
const out = {};
for (const kind of ["text", "blob", "row2", "concat", "text_utf8"]) {
  const low = await probe(kind, 1_000_000);
  const high = await probe(kind, 4_000_000);
  out[kind] = { at_1MB: low, at_4MB: high };
  if (low.ok && !high.ok) out[kind].largest = await largest(kind, 1_000_000, 4_000_000);
}
out.param_json_each = { at_1MB: await probe("param_json_each", 1_000_000), at_3MB: await probe("param_json_each", 3_000_000) };
out.statement = { at_50KB: await probe("statement", 50_000), at_200KB: await probe("statement", 200_000) };
if (out.statement.at_50KB.ok && !out.statement.at_200KB.ok) out.statement.largest = await largest("statement", 50_000, 200_000);
console.log(JSON.stringify(out, null, 2));
await mf.dispose();
