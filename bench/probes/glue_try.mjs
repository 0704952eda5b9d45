#!/usr/bin/env node
// One-off requests to the probe Worker on workerd, printing status and body:
//   node bench/probes/glue_try.mjs '<json body>' ['<json body>' ...]   (a body's "tokens"/"pace" make chatBody's fields)
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startModel, startVariant, post, chatBody } from "./workerd.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const { Miniflare, Log, LogLevel } = await import("miniflare");
const workerd = (await import("workerd")).default;
process.env.REAL_WORKERD = workerd.default ?? workerd;
process.env.MINIFLARE_WORKERD_PATH = path.join(ROOT, "local", "workerd");
const model = await startModel();
const v = await startVariant("probe", model.url, Miniflare, Log, LogLevel);
try {
  for (const arg of process.argv.slice(2)) {
    const spec = JSON.parse(arg);
    const body = spec.tokens != null ? { ...chatBody({ tokens: spec.tokens, pace: spec.pace ?? 0 }), ...spec } : spec;
    const r = await post(v, body, { keep: true });
    console.log(JSON.stringify(spec), "->", r.status, r.body.length, "bytes:", r.body.toString("utf8").slice(0, 1500));
  }
} finally {
  await v.mf.dispose().catch(() => {});
  model.child.kill();
}
