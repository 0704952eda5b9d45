// What a paused reader costs the isolate (issue 42, "memory bounded per stream"): `n` clients ask
// for long answers at once and read nothing; once the model has stopped sending (held back, or
// finished), the isolate's memory over n is the figure. Then every client reads on, and each must
// get its whole answer. Used by bench/check.mjs (its paused part) and bench/probes/paused_memory.mjs.
//
// The measure is the isolate's own, read through workerd's inspector after a full collection
// (bench/inspector.mjs): the JS heap in use plus the ArrayBuffers' backing stores (where a tee
// keeps the chunks one branch has not read), plus what the relay's bodies hold for their clients
// (its census: a body's queued chunks are outside the JS heap). It was the process RSS before,
// which moved from 298 to 1,630 KB a reader between runs of the same code
// (bench/notes/2026-11-29-paused-memory.md).
import fs from "node:fs";
import http from "node:http";
import { chatBody, getJson } from "./workerd.mjs";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function rssKb(pid) {
  return Number(fs.readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)?.[1] ?? 0);
}

let nonce = 0;

/**
 * v: {name, url (the streamed route), pid, inspector (bench/inspector.mjs), poke() (a cheap request
 * to the Worker), backlog() (optional: the bytes the relay's bodies hold, from its census)}.
 * rate: the model's tokens a second (0: as fast as it is let).
 * Returns the figures; isolateKb is (heap used + backing stores while paused, less the larger of
 * before and after the readers, + the bodies' backlog) / n: what the isolate kept for the readers
 * while they read nothing. A body's queued chunks are handed to workerd (detached from the JS
 * heap: the inspector does not see them), so the relay says how much its bodies hold.
 */
export async function pausedReaders(v, modelUrl, { n = 4, tokens = 60000, rate = 0, shape = "native", say = () => {} } = {}) {
  await fetch(new URL("__local/calls", modelUrl), { method: "DELETE" });
  const memory = async () => {
    const m = await v.inspector.memory(v.poke);
    return { usedSize: m.usedSize, backingStorageSize: m.backingStorageSize ?? 0, embedderHeapUsedSize: m.embedderHeapUsedSize ?? 0 };
  };
  const before = await memory();
  const rssBefore = rssKb(v.pid);
  // Tags of one length: answers of one length, so every reader's bytes must match.
  const tags = Array.from({ length: n }, () => `paused-${v.name}-${String(++nonce).padStart(6, "0")}`);
  const clients = tags.map((tag) => {
    const body = chatBody({ tokens, tag });
    // rate: the model's pace; shape "2026": the stream Workers AI sends in late 2026 (usage on
    // every delta: more bytes and more decoding a token).
    const directives = `[[pace:0]]${rate ? `[[rate:${rate}]]` : ""}${shape === "2026" ? "[[shape:2026]]" : ""}`;
    body.messages[0].content = body.messages[0].content.replace("[[pace:0]]", directives);
    const data = Buffer.from(JSON.stringify(body));
    let res = null;
    let resumed = false;  // a head that comes after the resume is read at once
    let bytes = 0;
    const ended = new Promise((resolve, reject) => {
      const req = http.request(v.url, { method: "POST", agent: false, headers: { "content-type": "application/json", "content-length": data.length } }, (r) => {
        res = r;
        if (!resumed) r.pause();
        r.on("data", (c) => { bytes += c.length; });
        r.on("end", () => resolve());
        r.on("error", reject);
      });
      req.on("error", reject);
      req.end(data);
    });
    return { tag, ended, resume: () => { resumed = true; res?.resume(); }, bytes: () => bytes };
  });
  const ours = async () => (await getJson(new URL("__local/calls", modelUrl))).filter((c) => tags.some((t) => c.inputs?.messages?.at(-1)?.content?.includes(t)));
  // Wait until the model has sent all it will while nobody reads: no chunk for 1.5 s.
  let last = -1;
  let still = 0;
  let sent = 0;
  const t0 = performance.now();
  for (let i = 0; i < 240 && still < 3; i++) {
    await sleep(500);
    sent = (await ours()).reduce((k, c) => k + c.chunksSent, 0);
    still = sent === last ? still + 1 : 0;
    last = sent;
  }
  const stillAfterS = (performance.now() - t0) / 1000;
  const during = await memory();
  const backlog = v.backlog ? await v.backlog() : null;
  const rssDuring = rssKb(v.pid);
  const calls = await ours();
  const finished = calls.filter((c) => c.finishedAt != null).length;
  const total = calls.reduce((k, c) => k + c.chunksTotal, 0);
  say(`paused ${v.name}: model sent ${sent} of ${total} chunks while nobody read (${finished}/${n} finished), heap +${((during.usedSize - before.usedSize) / 1024).toFixed(0)} KB, backing stores +${((during.backingStorageSize - before.backingStorageSize) / 1024).toFixed(0)} KB`);
  for (const c of clients) c.resume();
  // Bounded: a reader that never gets its answer is a failure to report, not a hung bench.
  let settled = false;
  await Promise.race([Promise.all(clients.map((c) => c.ended)).then(() => { settled = true; }), sleep(120_000)]);
  if (!settled) say(`paused ${v.name}: not all answers ended 120 s after resuming; bytes ${clients.map((c) => c.bytes()).join(" ")}`);
  const whole = clients.filter((c) => c.bytes() > 0).map((c) => c.bytes());
  // Once every answer has ended: what stays (compiled code, caches) is not the readers'.
  await sleep(300);
  const after = await memory();
  const grew = (k) => during[k] - Math.max(before[k], after[k]);
  return {
    streams: n, tokens, rate, shape,
    isolateKb: Math.max(0, (grew("usedSize") + grew("backingStorageSize")) / n / 1024) + (backlog ?? 0) / n / 1024,
    bodyKb: backlog == null ? null : backlog / n / 1024,
    heapKb: grew("usedSize") / n / 1024, backingKb: grew("backingStorageSize") / n / 1024, embedderKb: grew("embedderHeapUsedSize") / n / 1024,
    rssKb: Math.max(0, (rssDuring - rssBefore) / n), memoryBefore: before, memoryPaused: during, memoryAfter: after,
    modelFinished: finished, chunksSentWhilePaused: sent, chunksTotal: total, stillAfterS,
    bytesAfterResume: whole, allComplete: settled && whole.length === n && new Set(whole).size === 1,
  };
}
