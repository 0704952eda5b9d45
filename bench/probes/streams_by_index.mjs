// Where the streams cell's delay comes from (issue 42): N streams of 100 tokens at 50 tok/s at once,
// the added delay of each token by its index, and the time to each stream's first token.
//   node bench/probes/streams_by_index.mjs [relay,relay_off,js_reframer] [50,100]
import http from "node:http";
import { peerSpec, relaySpec, startBare } from "../bare.mjs";
import { chatBody, delays, startModel, timedPost } from "../workerd.mjs";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN; };
let nonce = 0;
function body() {
  const b = chatBody({ tokens: 100, shape: "native", tag: `idx-${++nonce}` });
  return { ...b, messages: [{ role: "user", content: b.messages[0].content.replace("[[pace:0]]", "[[pace:0]][[rate:50]]") }] };
}
const relayVars = { AI_MAX_TOKENS_LIMIT: "200000", AI_MAX_TOKENS_DEFAULT: "120000", UPSTREAM_TIMEOUT_SECONDS: "60" };
const ratelimit = { limit: 1000000000, period: 60 };
const model = await startModel();
const names = (process.argv[2] ?? "relay,relay_off,js_reframer").split(",");
const levels = (process.argv[3] ?? "50,100").split(",").map(Number);
const vs = [];
for (const name of names) {
  const spec = await (name === "relay" ? relaySpec({ vars: relayVars, ratelimit }) : name === "relay_off" ? relaySpec({ vars: { ...relayVars, STREAM_WINDOW_MS: "0" }, ratelimit }) : peerSpec(name));
  const bare = await startBare(name, spec, model.url);
  vs.push({ name, bare, url: new URL(name.startsWith("relay") ? "/api/v1/chat" : "/", bare.url), agent: new http.Agent({ keepAlive: true, maxSockets: Infinity }) });
}
for (const v of vs) for (let i = 0; i < 3; i++) await timedPost(v, body());
for (const n of levels) for (const v of vs) {
  const rs = await Promise.all(Array.from({ length: n }, () => timedPost(v, body())));
  const byIdx = { "0-4": [], "5-19": [], "20-99": [] };
  const first = [];
  for (const r of rs) {
    delays(r.arrivals, 50).forEach((d, k) => byIdx[k < 5 ? "0-4" : k < 20 ? "5-19" : "20-99"].push(d));
    first.push(r.arrivals[0] - r.sentAt);
  }
  console.log(`${v.name} n=${n}: first token after ${pct(first, 50).toFixed(0)}/${pct(first, 99).toFixed(0)} ms (p50/p99); delay p99 by index: ${Object.entries(byIdx).map(([k, d]) => `${k}: ${pct(d, 99).toFixed(0)}`).join(", ")}; all ${pct(Object.values(byIdx).flat(), 99).toFixed(0)}`);
  await sleep(500);
}
for (const v of vs) await v.bare.stop();
model.child.kill();
process.exit(0);
