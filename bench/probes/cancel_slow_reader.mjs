// A live client that stops reading for a while after its first chunk, then reads to the end: does
// the answer still end with "event: done" (RelayPipe must not take a paused reader for a client gone)?
//   BEFORE_SRC=<another src/> node bench/probes/cancel_slow_reader.mjs   (WORKERD_PYODIDE_DIR set)
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { miniflareOnWorkerd, startModel } from "./workerd.mjs";
const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "..");
const { Miniflare, Log, LogLevel, convertV4MiniflareOptions } = await miniflareOnWorkerd();
const model = await startModel();
const modelUrl = model.url;
const { workerOptions, pythonModules } = await import(pathToFileURL(path.join(ROOT, "local", "launch.mjs")).href);
const out = [];
for (const [name, dir] of [...(process.env.BEFORE_SRC ? [["before", process.env.BEFORE_SRC]] : []), ["src", path.join(ROOT, "src")]]) {
  const base = await workerOptions({ vars: { LOCAL_DEV_STATS: "1", AI_MAX_TOKENS_LIMIT: "200000", AI_MAX_TOKENS_DEFAULT: "120000" }, modelUrl, ratelimit: { "*": { limit: 1e9, period: 60 } } });
  const mf = new Miniflare(convertV4MiniflareOptions({ host: "127.0.0.1", port: 0, log: new Log(LogLevel.WARN), cf: false, ...base, name, ...pythonModules(path.join(dir, "entry.py")) }));
  const url = new URL("/api/v1/chat", await mf.ready);
  for (const [tokens, pace, pauseMs] of [[20, 0, 0], [3000, 1, 3000], [20000, 0, 3000], [600, 5, 2000]]) {
    const body = Buffer.from(JSON.stringify({ model: "@cf/google/gemma-4-26b-a4b-it", messages: [{ role: "user", content: `[[tokens:${tokens}]][[pace:${pace}]] slow-${name}-${tokens}-${pauseMs}` }], max_tokens: tokens + 100 }));
    const r = await new Promise((resolve) => {
      const req = http.request(url, { method: "POST", agent: false, headers: { "content-type": "application/json", "content-length": body.length } }, (res) => {
        const parts = [];
        let paused = false;
        res.on("data", (c) => { parts.push(c); if (!paused && pauseMs) { paused = true; res.pause(); setTimeout(() => res.resume(), pauseMs); } });
        res.on("end", () => { const text = Buffer.concat(parts).toString(); resolve({ bytes: text.length, done: text.includes("event: done"), deltas: (text.match(/content_block_delta/g) ?? []).length }); });
        res.on("error", (e) => resolve({ error: String(e) }));
      });
      req.end(body);
    });
    const stats = await new Promise((resolve) => http.get(new URL("/__local/stats", url), (res) => { let s = ""; res.on("data", (d) => (s += d)); res.on("end", () => { const j = JSON.parse(s); resolve({ clients_gone: j.clients_gone, live: j.live }); }); }));
    out.push({ name, tokens, pace, pauseMs, ...r, ...stats });
    console.log(JSON.stringify(out.at(-1)));
  }
  await mf.dispose();
}
model.child.kill();
process.exit(0);
