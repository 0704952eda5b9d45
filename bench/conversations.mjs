// Durable conversations against the stateless relay, on workerd with the built-in model:
//   1. CPU of the workerd process per 1,000 tokens: /api/v1/chat vs a conversation's turn
//      (the same relay, plus SQLite writes and the object's hop), interleaved;
//   2. the time from a reconnect (GET .../stream with Last-Event-ID) to its first resumed byte,
//      while the answer is still being written.
//   node bench/conversations.mjs [--rounds 10] [--pace 0] [--out .cache/bench-conversations.json]
//   (--pace MS: ms between the model's tokens in part 1; 0 is as fast as it goes)
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { launch } from "../local/launch.mjs";
import { cpuOf } from "./workerd.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values: args } = parseArgs({ options: {
  rounds: { type: "string", default: "10" },
  pace: { type: "string", default: "0" },
  out: { type: "string", default: path.join(ROOT, ".cache", "bench-conversations.json") },
} });
const ROUNDS = Number(args.rounds);
const TOKENS = 1000;
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const say = (...parts) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${parts.join(" ")}\n`);

function workerdPid() {
  const mine = String(process.pid);
  for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      const ppid = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1];
      if (ppid === mine && fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim().startsWith("workerd")) return Number(pid);
    } catch { /* gone */ }
  }
  throw new Error("no workerd child process");
}

/** One request; resolves when the body ends (or after `stopAfter` events, leaving), with when
 *  its first byte came. */
async function request(url, method, body, headers = {}, { stopAfter } = {}) {
  const leave = new AbortController();
  const sentAt = performance.now();
  const res = await fetch(url, { method, body, headers: { "content-type": "application/json", ...headers }, signal: leave.signal });
  let firstAt = null;
  let text = "";
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body) {
      firstAt ??= performance.now();
      text += decoder.decode(chunk, { stream: true });
      if (stopAfter && (text.match(/\n\n/g) ?? []).length >= stopAfter) { leave.abort(); break; }
    }
  } catch (err) {
    if (!leave.signal.aborted) throw err;
  }
  return { status: res.status, text, sentAt, firstAt };
}

async function main() {
  const running = await launch({ port: 0, paceMs: 0, vars: { RESUME_GRACE_SECONDS: "30", AI_MAX_TOKENS_LIMIT: "20000" }, ratelimit: { "*": { limit: 1e9, period: 60 } } });
  const base = running.url.toString().replace(/\/$/, "");
  const pid = workerdPid();
  const create = async () => JSON.parse((await request(`${base}/api/v1/conversations`, "POST", null)).text).id;
  const content = (tag) => `[[tokens:${TOKENS}]][[pace:${Number(args.pace)}]] run-${tag}`;
  const cpu = { stateless: [], conversation: [] };
  for (let i = 0; i < 3; i++) { await request(`${base}/api/v1/chat`, "POST", JSON.stringify({ messages: [{ role: "user", content: content(`warm${i}`) }], max_tokens: TOKENS + 50 })); }
  for (let round = 0; round < ROUNDS; round++) {
    let before = cpuOf(pid).ms;
    const a = await request(`${base}/api/v1/chat`, "POST", JSON.stringify({ messages: [{ role: "user", content: content(`s${round}`) }], max_tokens: TOKENS + 50 }));
    cpu.stateless.push(cpuOf(pid).ms - before);
    const id = await create();
    before = cpuOf(pid).ms;
    const b = await request(`${base}/api/v1/conversations/${id}/messages`, "POST", JSON.stringify({ content: content(`c${round}`), max_tokens: TOKENS + 50 }));
    cpu.conversation.push(cpuOf(pid).ms - before);
    if (a.status !== 200 || b.status !== 200) throw new Error(`status ${a.status} / ${b.status}`);
  }
  say("cpu done");
  // Reconnects while the answer is still being written (40 ms a token).
  const resumes = [];
  for (let round = 0; round < ROUNDS; round++) {
    const id = await create();
    const first = await request(`${base}/api/v1/conversations/${id}/messages`, "POST", JSON.stringify({ content: `[[tokens:60]][[pace:40]] r${round}`, max_tokens: 200 }), {}, { stopAfter: 5 });
    const last = [...first.text.matchAll(/^id: (\d+:\d+)$/gm)].at(-1)[1];
    const again = await request(`${base}/api/v1/conversations/${id}/stream`, "GET", null, { "last-event-id": last }, { stopAfter: 1 });
    resumes.push(again.firstAt - again.sentAt);
  }
  await running.stop();
  const result = {
    date: new Date().toISOString(),
    cpuMsPer1000Tokens: { stateless: median(cpu.stateless), conversation: median(cpu.conversation) },
    ratio: median(cpu.conversation) / median(cpu.stateless),
    reconnectToFirstByteMs: { median: median(resumes), max: Math.max(...resumes) },
    rounds: ROUNDS,
    paceMs: Number(args.pace),
  };
  fs.mkdirSync(path.dirname(args.out), { recursive: true });
  fs.writeFileSync(args.out, JSON.stringify(result, null, 1));
  console.log(JSON.stringify(result));
  process.exit(0);
}

main().catch((err) => { console.error(err); process.exit(1); });
