#!/usr/bin/env node
// The local runtime: serves src/ unchanged over HTTP on 127.0.0.1, with static assets,
// wrangler.toml vars (+ .dev.vars) and the built-in offline model as the AI binding.
//
//   node runtime/server.mjs [--env NAME] [--port N] [--pace MS]
//
// Local-only control routes (never part of the Worker), for tests and demos:
//   GET /__local/calls      what the model received, and when its streams were cancelled
//   DELETE /__local/calls   forget them
//   PUT /__local/vars       {"NAME": "value" | null}: change a var live, like the dashboard
//   GET /__local/stats      live stream proxies, Python objects and process memory
//   GET /__local/disconnects  when clients went away mid-response (runtime clock, ms)
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { loadConfig } from "./config.mjs";
import { startWorker } from "./host.mjs";
import { Ai } from "./model.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const TYPES = {
  ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
  ".json": "application/json", ".svg": "image/svg+xml", ".png": "image/png",
  ".ico": "image/x-icon", ".txt": "text/plain; charset=utf-8", ".webmanifest": "application/manifest+json",
};

// Workers static assets: an existing file wins over the Worker; "/" and "/dir/" map to
// index.html, "/page" to page.html (html_handling = "auto-trailing-slash").
export function findAsset(assetsDir, urlPath) {
  if (!assetsDir) return null;
  let rel;
  try { rel = decodeURIComponent(urlPath); } catch { return null; }
  if (rel.includes("\0")) return null;
  const base = path.resolve(assetsDir);
  const candidates = rel.endsWith("/") ? [rel + "index.html"] : [rel, rel + ".html"];
  for (const candidate of candidates) {
    const file = path.resolve(base, "." + candidate);
    if (!file.startsWith(base + path.sep)) continue;
    try { if (fs.statSync(file).isFile()) return file; } catch { /* not there */ }
  }
  return null;
}

function sendJson(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

async function readJson(req) {
  const parts = [];
  for await (const part of req) parts.push(part);
  return JSON.parse(Buffer.concat(parts).toString("utf8") || "{}");
}

export async function startServer({ envName, port = 8787, paceMs = 40, vars = {}, log = console.log } = {}) {
  const config = loadConfig(ROOT, envName);
  Object.assign(config.vars, vars);
  const disconnects = [];
  // Requests in flight, held until their response ends: Node stops forwarding aborts to
  // request.signal once the Request object is garbage-collected.
  const inflight = new Set();
  const ai = new Ai({ paceMs });
  const env = { ...config.vars };
  env[config.aiBinding ?? "AI"] = ai;
  if (!config.aiBinding) log(`warning: no [ai] binding for ${envName ? `env ${envName}` : "top level"}; serving one anyway`);
  const worker = await startWorker({ root: ROOT, main: config.main, env, log: console.error });

  async function control(req, res, url) {
    if (url.pathname === "/__local/calls" && req.method === "GET") return sendJson(res, 200, ai.report());
    if (url.pathname === "/__local/calls" && req.method === "DELETE") { ai.calls.length = 0; return sendJson(res, 200, {}); }
    if (url.pathname === "/__local/vars" && req.method === "PUT") {
      for (const [k, v] of Object.entries(await readJson(req))) {
        if (v === null) delete env[k]; else env[k] = String(v);
      }
      return sendJson(res, 200, Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === "string")));
    }
    if (url.pathname === "/__local/disconnects" && req.method === "GET") return sendJson(res, 200, disconnects);
    if (url.pathname === "/__local/stats" && req.method === "GET") {
      global.gc?.();
      return sendJson(res, 200, { ...worker.stats(), memory: process.memoryUsage() });
    }
    return sendJson(res, 404, { error: "not_found" });
  }

  async function serveAsset(req, res, file) {
    const type = TYPES[path.extname(file)] ?? "application/octet-stream";
    const body = fs.readFileSync(file);
    res.writeHead(200, { "content-type": type, "content-length": body.length, "cache-control": "public, max-age=0, must-revalidate" });
    res.end(req.method === "HEAD" ? undefined : body);
  }

  async function serveWorker(req, res, url) {
    const abort = new AbortController();
    let finished = false;
    let reader = null;
    res.on("close", () => {
      if (finished) return;
      disconnects.push({ path: url, at: performance.now() });
      if (disconnects.length > 2000) disconnects.shift();
      abort.abort(new Error("client disconnected"));
      reader?.cancel(new Error("client disconnected")).catch(() => {});
    });
    const headers = new Headers();
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const request = new Request(url, {
      method: req.method, headers, signal: abort.signal,
      body: hasBody ? Readable.toWeb(req) : undefined, duplex: "half",
    });
    inflight.add(request);
    res.on("close", () => inflight.delete(request));
    let response;
    try {
      response = await worker.fetch(request);
    } catch (err) {
      console.error(err);
      finished = true;
      if (!res.headersSent) sendJson(res, 500, { error: "internal_error", message: "The Worker threw an exception." });
      return 500;
    }
    const out = {};
    for (const [k, v] of response.headers) out[k] = k in out ? `${out[k]}, ${v}` : v;
    res.writeHead(response.status, out);
    res.flushHeaders();
    if (!response.body || req.method === "HEAD") { finished = true; res.end(); return response.status; }
    reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (!res.write(value)) await new Promise((resolve) => res.once("drain", resolve).once("close", resolve));
      }
      finished = true;
      res.end();
    } catch (err) {
      if (!res.destroyed) { console.error(err); res.destroy(); }
    }
    return response.status;
  }

  const server = http.createServer(async (req, res) => {
    const started = performance.now();
    const url = new URL(req.url, `http://${req.headers.host ?? `127.0.0.1:${port}`}`);
    let status;
    try {
      if (url.pathname.startsWith("/__local/")) { await control(req, res, url); status = res.statusCode; }
      else {
        const asset = (req.method === "GET" || req.method === "HEAD") && findAsset(config.assetsDir, url.pathname);
        if (asset) { await serveAsset(req, res, asset); status = 200; }
        else status = await serveWorker(req, res, url.href);
      }
    } catch (err) {
      console.error(err);
      if (!res.headersSent) sendJson(res, 500, { error: "internal_error", message: String(err.message) });
      status = 500;
    }
    if (!url.pathname.startsWith("/__local/")) {
      log(`${req.method} ${url.pathname} ${status} ${(performance.now() - started).toFixed(1)}ms`);
    }
  });
  server.keepAliveTimeout = 5000;
  await new Promise((resolve, reject) => { server.once("error", reject); server.listen(port, "127.0.0.1", resolve); });
  return { server, worker, ai, env, config, port: server.address().port };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: {
    env: { type: "string" }, port: { type: "string" }, pace: { type: "string" },
    var: { type: "string", multiple: true }, "exit-on-stdin-eof": { type: "boolean" },
  } });
  const vars = {};
  for (const item of values.var ?? []) {
    const at = item.indexOf("=");
    if (at < 1) throw new Error(`--var wants NAME=VALUE, got ${item}`);
    vars[item.slice(0, at)] = item.slice(at + 1);
  }
  const port = Number(values.port ?? process.env.PORT ?? 8787);
  const paceMs = Number(values.pace ?? process.env.LOCAL_AI_PACE_MS ?? 40);
  const started = performance.now();
  const { server, worker, port: bound } = await startServer({ envName: values.env, port, paceMs, vars });
  console.log(`ai-chat local runtime ready in ${(performance.now() - started).toFixed(0)} ms ` +
    `(${worker.fromSnapshot ? "warm, from snapshot" : "cold"}) on http://127.0.0.1:${bound}/`);
  const stop = () => {
    console.log("stopping");
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  // Test harnesses hold our stdin open; if they die, we stop by ourselves.
  if (values["exit-on-stdin-eof"]) { process.stdin.on("end", stop); process.stdin.on("error", stop); process.stdin.resume(); }
}
