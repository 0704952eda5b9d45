#!/usr/bin/env node
// Drives bench/workers/tee_pause.mjs on bare workerd (bench/bare.mjs: workerd's own Ai class, the
// built-in model in a process of its own) and watches the model: how much of the answer it sent
// while the Worker held back, whether it finished, whether it saw its connection closed.
//   node bench/probes/tee_pause.mjs [--tokens 20000] [--hold 4000]
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startBare } from "../bare.mjs";
import { getJson, startModel } from "../workerd.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const { values: args } = parseArgs({ options: {
  tokens: { type: "string", default: "20000" },
  hold: { type: "string", default: "4000" },
  first: { type: "string", default: "50000" },
  modes: { type: "string", default: "direct,nopause,pause,leave" },
} });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const model = await startModel();
const spec = { kind: "js", dir: path.join(ROOT, "bench", "workers"), modules: ["tee_pause.mjs"], ai: true };
const w = await startBare("tee_pause", spec, model.url);
try {
  for (const mode of args.modes.split(",")) {
    const tag = `tee-${mode}-${Date.now()}`;
    const call = async () => (await getJson(new URL("__local/calls", model.url))).find((c) => JSON.stringify(c.inputs).includes(tag));
    const u = new URL(w.url);
    for (const [k, v] of Object.entries({ mode, tag, tokens: args.tokens, hold: args.hold, first: args.first })) u.searchParams.set(k, v);
    const answer = fetch(u).then((r) => r.json());
    const seen = [];
    let done = false;
    answer.finally(() => { done = true; });
    while (!done) {
      await sleep(500);
      const c = await call();
      if (c) seen.push(`${c.chunksSent}/${c.chunksTotal}${c.finishedAt ? " finished" : ""}${c.clientClosedAt ? " closed" : ""}`);
    }
    await sleep(300);
    const c = await call();
    console.log(JSON.stringify({ mode, result: await answer, model: { chunksSent: c.chunksSent, chunksTotal: c.chunksTotal, finished: c.finishedAt != null, clientClosed: c.clientClosedAt != null }, every500ms: seen }, null, 1));
  }
} finally {
  await w.stop();
  model.child.kill();
}
