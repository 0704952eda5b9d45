// Inside the local runtime: what the Python relay costs against a passthrough (the floor)
// and a JavaScript re-framer producing byte-identical output. Prints one JSON object.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startWorker } from "../runtime/host.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const enc = new TextEncoder();
const QUICK = process.argv.includes("--quick");

// The upstream: pre-encoded native frames, one per read, so all variants pay the same
// (tiny) model cost and the differences are the relay's.
function framesFor(n) {
  const words = ["stream", "edge", "token", "relay", "python", "worker", "event", "byte"];
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push(enc.encode(`data: {"response":"${i === 0 ? "" : " "}${words[i % words.length]}","p":"abcdefgh"}\n\n`));
  }
  out.push(enc.encode(`data: {"response":"","usage":{"prompt_tokens":5,"completion_tokens":${n},"total_tokens":${n + 5}}}\n\n`));
  out.push(enc.encode("data: [DONE]\n\n"));
  return out;
}

const CACHE = new Map();
class Ai {
  constructor() { this.cancels = []; this.paceMs = 0; }
  async run(model, inputs) {
    const n = inputs.max_tokens;
    if (!CACHE.has(n)) CACHE.set(n, framesFor(n));
    const frames = CACHE.get(n);
    const pace = this.paceMs;
    const record = { cancelledAt: null };
    this.cancels.push(record);
    let i = 0;
    return new ReadableStream({
      async pull(controller) {
        if (pace) await new Promise((r) => setTimeout(r, pace));
        if (record.cancelledAt !== null) return;
        controller.enqueue(frames[i++]);
        if (i === frames.length) controller.close();
      },
      cancel() { record.cancelledAt = performance.now(); },
    }, { highWaterMark: 0 });
  }
}

const env = {
  AI: new Ai(), AI_MODELS: "m", AI_MAX_TOKENS_LIMIT: "1000000", AI_MAX_TOKENS_DEFAULT: "10",
  MAX_MESSAGES: "50", STREAM_PING_SECONDS: "15", UPSTREAM_TIMEOUT_SECONDS: "60",
};
const worker = await startWorker({ root: ROOT, main: path.join(ROOT, "src", "entry.py"), env });

// The floor: a Python Worker that hands the upstream stream back untouched.
const passthroughCall = worker.py.runPython(`
from workers import WorkerEntrypoint, Response, python_from_rpc, python_to_rpc
import json

class Passthrough(WorkerEntrypoint):
    async def fetch(self, request):
        body = json.loads(await request.text())
        stream = await self.env.AI.run("m", {"messages": body["messages"], "stream": True, "max_tokens": body["max_tokens"]})
        return Response(stream, headers={"content-type": "text/event-stream; charset=utf-8"})

async def call(ctx, env, request):
    return python_to_rpc(await Passthrough(ctx, env).fetch(python_from_rpc(request)))
call
`);

// The peer: the same protocol written in JavaScript (what a user would otherwise pick).
function pyJson(s) {
  return JSON.stringify(s).replace(/[\u0080-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}
function jsReframer(upstream, maxTokens) {
  const decoder = new TextDecoder();
  let buffer = "", index = 0, usage = null, done = false;
  return upstream.pipeThrough(new TransformStream({
    transform(chunk, controller) {
      if (done) return;
      buffer += decoder.decode(chunk, { stream: true });
      let out = "";
      let at;
      while (!done && (at = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(l[5] === " " ? 6 : 5)).join("\n");
        if (data === "[DONE]") {
          done = true;
          const reason = usage && usage.completion_tokens >= maxTokens ? "length" : "stop";
          const stop = usage ? `{"stop_reason":"${reason}","usage":${JSON.stringify(usage)}}` : `{"stop_reason":"${reason}"}`;
          out += `event: message_stop\ndata: ${stop}\n\nevent: done\ndata: {}\n\n`;
          break;
        }
        let frame;
        try { frame = JSON.parse(data); } catch { continue; }
        if (typeof frame.response === "string" && frame.response) {
          out += `event: content_block_delta\ndata: {"index":${index++},"text":${pyJson(frame.response)}}\n\n`;
        }
        if (frame.usage) usage = frame.usage;
      }
      if (out) controller.enqueue(enc.encode(out));
    },
  }));
}

const ctx = worker.ctx;
function chatRequest(n, signal) {
  return new Request("http://bench/api/v1/chat", {
    method: "POST", headers: { "content-type": "application/json" }, signal,
    body: JSON.stringify({ messages: [{ role: "user", content: "bench" }], max_tokens: n }),
  });
}

const VARIANTS = {
  python_relay: (req) => worker.fetch(req),
  passthrough: (req) => passthroughCall(ctx, env, req),
  js_reframer: async (req) => {
    const body = await req.json();
    const upstream = await env.AI.run("m", { messages: body.messages, stream: true, max_tokens: body.max_tokens });
    return new Response(jsReframer(upstream, body.max_tokens), { headers: { "content-type": "text/event-stream; charset=utf-8" } });
  },
};

async function drain(response, { keep = false } = {}) {
  const reader = response.body.getReader();
  const parts = [];
  let bytes = 0, first = null;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    first ??= performance.now();
    bytes += value.length;
    if (keep) parts.push(value);
  }
  return { bytes, first, body: keep ? Buffer.concat(parts).toString("utf8") : null };
}

const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

async function cpuPerThousand(variant, n, reps) {
  for (let i = 0; i < Math.min(reps, 5); i++) await drain(await VARIANTS[variant](chatRequest(n)));  // warm up
  const rounds = [];
  for (let round = 0; round < 5; round++) {
    const start = cpuMs();
    for (let i = 0; i < reps; i++) await drain(await VARIANTS[variant](chatRequest(n)));
    rounds.push(((cpuMs() - start) / (reps * n)) * 1000);
  }
  rounds.sort((a, b) => a - b);
  return rounds[2];  // median of 5 rounds
}

function quantile(values, q) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

const results = { machine: {}, cpu_per_1000_tokens_ms: {}, identical_output: {}, ttfb_ms: {}, cancel_ms: {}, leaks: {} };
results.import_ms = worker.importMs;
results.boot_ms = worker.bootMs;
results.from_snapshot = worker.fromSnapshot;

// Byte-identical output first: the comparison means nothing otherwise.
for (const n of [10, 1000]) {
  const py = (await drain(await VARIANTS.python_relay(chatRequest(n)), { keep: true })).body;
  const js = (await drain(await VARIANTS.js_reframer(chatRequest(n)), { keep: true })).body;
  results.identical_output[n] = py === js;
  if (py !== js) { console.error(py.slice(-300), "\n---\n", js.slice(-300)); throw new Error(`outputs differ at n=${n}`); }
}

const SIZES = QUICK ? [[10, 20], [1000, 2], [10000, 1]] : [[10, 100], [1000, 10], [10000, 2]];
for (const [n, reps] of SIZES) {
  results.cpu_per_1000_tokens_ms[n] = {};
  for (const variant of Object.keys(VARIANTS)) {
    results.cpu_per_1000_tokens_ms[n][variant] = await cpuPerThousand(variant, n, reps);
  }
}

// Time to first byte: request in → first body chunk out, upstream answering at once.
for (const variant of ["python_relay", "passthrough", "js_reframer"]) {
  const samples = [];
  for (let i = 0; i < (QUICK ? 50 : 300); i++) {
    const t0 = performance.now();
    const response = await VARIANTS[variant](chatRequest(10));
    const { first } = await drain(response);
    samples.push(first - t0);
  }
  results.ttfb_ms[variant] = { median: quantile(samples, 0.5), p99: quantile(samples, 0.99) };
}

// Disconnect → upstream cancel: abort the request signal and cancel the body, as the
// HTTP adapter does when a client goes away, mid-stream with the model still producing.
{
  env.AI.paceMs = 2;
  const samples = [];
  for (let i = 0; i < (QUICK ? 50 : 500); i++) {
    const abort = new AbortController();
    const response = await worker.fetch(chatRequest(1000, abort.signal));
    const reader = response.body.getReader();
    await reader.read();
    await reader.read();
    const record = env.AI.cancels.at(-1);
    const t0 = performance.now();
    abort.abort();
    reader.cancel().catch(() => {});
    while (record.cancelledAt === null) await new Promise((r) => setImmediate(r));
    samples.push(record.cancelledAt - t0);
  }
  env.AI.paceMs = 0;
  results.cancel_ms = { runs: samples.length, median: quantile(samples, 0.5), p99: quantile(samples, 0.99), max: Math.max(...samples) };
}

// Proxies and memory: 1,000 streams with half cancelled, then one 100,000-token stream.
function snapshot() {
  global.gc?.();
  const s = worker.stats();
  return { live: s.live, created: s.created, destroyed: s.destroyed, py_objects: s.py_objects, heap_mb: process.memoryUsage().heapUsed / 1e6, wasm_mb: worker.py._module.HEAP8.length / 1e6 };
}
{
  await new Promise((r) => setTimeout(r, 20));
  const before = snapshot();
  for (let i = 0; i < (QUICK ? 200 : 1000); i++) {
    const abort = new AbortController();
    const response = await worker.fetch(chatRequest(50, abort.signal));
    if (i % 2) {
      const reader = response.body.getReader();
      await reader.read();
      abort.abort();
      await reader.cancel();
    } else await drain(response);
  }
  await new Promise((r) => setTimeout(r, 50));
  results.leaks.streams_1000 = { before, after: snapshot() };
}
{
  await new Promise((r) => setTimeout(r, 20));
  const samples = [];
  const n = QUICK ? 20000 : 100000;
  const response = await worker.fetch(chatRequest(n));
  const reader = response.body.getReader();
  let chunks = 0;
  for (;;) {
    const { done } = await reader.read();
    if (done) break;
    if (++chunks % Math.floor(n / 5) === 0) samples.push(snapshot());
  }
  await new Promise((r) => setTimeout(r, 20));
  results.leaks.one_long_stream = { tokens: n, samples, after: snapshot() };
}

results.machine = { node: process.version, pyodide: worker.py.version, cpus: (await import("node:os")).cpus()[0]?.model, cores: (await import("node:os")).cpus().length };
console.log(JSON.stringify(results));
process.exit(0);
