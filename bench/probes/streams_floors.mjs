// The streams cell's level search (bench/check.mjs) over the Python floors too (issue 42): the
// relay, the JS recipe, py_floors/direct and py_floors/transform (bench/workers/py_floors); N
// streams of 100 tokens at 50 tok/s at once, a level held when all complete and the added delay
// p99 <= 150 ms. Prints each variant's largest level held.
//   node bench/probes/streams_floors.mjs
import http from "node:http";
import { peerSpec, relaySpec, startBare } from "../bare.mjs";
import { chatBody, delays, largestLevels, startModel, timedPost } from "../workerd.mjs";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : Infinity; };
let nonce = 0;
const body = () => { const b = chatBody({ tokens: 100, shape: "native", tag: `fl-${++nonce}` }); return { ...b, messages: [{ role: "user", content: b.messages[0].content.replace("[[pace:0]]", "[[pace:0]][[rate:50]]") }] }; };
const relayVars = { AI_MAX_TOKENS_LIMIT: "200000", AI_MAX_TOKENS_DEFAULT: "120000", UPSTREAM_TIMEOUT_SECONDS: "60" };
const model = await startModel();
const vs = [];
for (const [name, spec, p, marker] of [
  ["relay", await relaySpec({ vars: relayVars, ratelimit: { limit: 1e9, period: 60 } }), "/api/v1/chat", "event: content_block_delta"],
  ["js_reframer", peerSpec("js_reframer"), "/", "event: content_block_delta"],
  ["py_direct", peerSpec("py_floors"), "/direct", "data: {"],
  ["py_transform", peerSpec("py_floors"), "/transform", "data: {"],
]) {
  const bare = await startBare(name, spec, model.url);
  vs.push({ name, bare, marker, url: new URL(p, bare.url), agent: new http.Agent({ keepAlive: true, maxSockets: Infinity }) });
}
for (const v of vs) for (let i = 0; i < 3; i++) await timedPost(v, body());
const level = async (v, n) => {
  const rs = await Promise.all(Array.from({ length: n }, () => timedPost(v, body()).catch(() => ({ status: 0, arrivals: [] }))));
  const complete = rs.filter((r) => r.status === 200 && r.arrivals.length >= 100);
  const d = complete.flatMap((r) => delays(r.arrivals, 50));
  const p99 = pct(d, 99);
  console.error(`${v.name} ${n}: ${complete.length}/${n}, p99 ${p99.toFixed(0)} ms`);
  await sleep(500);
  return complete.length === n && p99 <= 150;
};
console.log(JSON.stringify(await largestLevels(vs, [25, 50, 100, 150, 200, 300, 400], level)));
for (const v of vs) await v.bare.stop();
model.child.kill();
process.exit(0);
