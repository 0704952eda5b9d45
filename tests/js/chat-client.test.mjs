// The browser client, fed real ReadableStreams split at every boundary.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SSEParser, parseRetryAfter, readEvents, streamChat } from "../../public/chat-client.js";

const enc = new TextEncoder();

function streamOf(chunks) {
  return new ReadableStream({
    pull(controller) {
      if (chunks.length === 0) controller.close();
      else controller.enqueue(chunks.shift());
    },
  });
}

async function collect(chunks) {
  const out = [];
  for await (const e of readEvents(streamOf(chunks))) out.push(e);
  return out;
}

const WIRE = enc.encode(
  ": ping\n\n" +
  'event: content_block_delta\ndata: {"index":0,"text":"Grüße 🌍"}\n\n' +
  'event: content_block_delta\r\ndata: {"index":1,\r\ndata: "text":"x"}\r\n\r\n' +
  'event: content_block_delta\rdata: {"index":2,"text":"\\r\\n"}\r\r' +
  'event: message_stop\ndata: {"stop_reason":"stop","usage":{"total_tokens":3}}\n\n' +
  "event: done\ndata: {}\n\n",
);
const EXPECTED = [
  { event: "content_block_delta", data: '{"index":0,"text":"Grüße 🌍"}' },
  { event: "content_block_delta", data: '{"index":1,\n"text":"x"}' },
  { event: "content_block_delta", data: '{"index":2,"text":"\\r\\n"}' },
  { event: "message_stop", data: '{"stop_reason":"stop","usage":{"total_tokens":3}}' },
  { event: "done", data: "{}" },
];

test("whole stream", async () => {
  assert.deepEqual(await collect([WIRE]), EXPECTED);
});

test("every single split point, including inside UTF-8 characters and CR LF", async () => {
  for (let at = 0; at <= WIRE.length; at++) {
    assert.deepEqual(await collect([WIRE.slice(0, at), WIRE.slice(at)]), EXPECTED, `split at ${at}`);
  }
});

test("every pair of split points (strided)", async () => {
  for (let a = 0; a <= WIRE.length; a += 3) {
    for (let b = a; b <= WIRE.length; b += 5) {
      assert.deepEqual(await collect([WIRE.slice(0, a), WIRE.slice(a, b), WIRE.slice(b)]), EXPECTED, `${a}/${b}`);
    }
  }
});

test("one byte at a time", async () => {
  assert.deepEqual(await collect([...WIRE].map((b) => Uint8Array.of(b))), EXPECTED);
});

test("parser drops an event the stream never finished", () => {
  const p = new SSEParser();
  assert.deepEqual(p.feed("event: done\ndata: {}\n"), []);
  assert.deepEqual(p.end(), []);
});

function fakeFetch(handler) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, init });
    if (init.signal?.aborted) throw new DOMException("aborted", "AbortError");
    return handler(url, init);
  };
  return { fetch, calls };
}

const sse = (s) => new Response(streamOf([enc.encode(s)]), { headers: { "content-type": "text/event-stream" } });

test("complete answer", async () => {
  const { fetch, calls } = fakeFetch(() => sse(new TextDecoder().decode(WIRE)));
  const seen = [];
  const r = await streamChat({ messages: [{ role: "user", content: "hi" }] }, { fetch, onText: (t) => seen.push(t) });
  assert.equal(r.outcome, "complete");
  assert.equal(r.text, "Grüße 🌍x\r\n");
  assert.deepEqual(seen, ["Grüße 🌍", "x", "\r\n"]);
  assert.equal(r.stopReason, "stop");
  assert.deepEqual(r.usage, { total_tokens: 3 });
  assert.equal(calls[0].url, "/api/v1/chat");
  assert.equal(calls[0].init.method, "POST");
  assert.equal(calls[0].init.body, '{"messages":[{"role":"user","content":"hi"}]}');
});

test("failed answer keeps the text and the error", async () => {
  const { fetch } = fakeFetch(() => sse(
    'event: content_block_delta\ndata: {"index":0,"text":"par"}\n\n' +
    'event: error\ndata: {"error":"upstream_error","message":"The model stream failed."}\n\n' +
    "event: done\ndata: {}\n\n"));
  const r = await streamChat({ messages: [] }, { fetch });
  assert.equal(r.outcome, "failed");
  assert.equal(r.text, "par");
  assert.equal(r.error.code, "upstream_error");
});

test("cut connection: no done", async () => {
  const { fetch } = fakeFetch(() => sse('event: content_block_delta\ndata: {"index":0,"text":"par"}\n\n'));
  const r = await streamChat({ messages: [] }, { fetch });
  assert.equal(r.outcome, "cut");
  assert.equal(r.text, "par");
  assert.equal(r.error.code, "connection_lost");
});

test("HTTP error before streaming", async () => {
  const { fetch } = fakeFetch(() => new Response('{"error":"ai_unavailable","message":"off"}', { status: 503 }));
  const r = await streamChat({ messages: [] }, { fetch });
  assert.equal(r.outcome, "failed");
  assert.deepEqual([r.error.code, r.error.message, r.error.status], ["ai_unavailable", "off", 503]);
});

test("abort mid-stream cancels the body and reports aborted", async () => {
  let cancelled = false;
  const controller = new AbortController();
  const { fetch } = fakeFetch((url, init) => {
    const body = new ReadableStream({
      start(c) { c.enqueue(enc.encode('event: content_block_delta\ndata: {"index":0,"text":"a"}\n\n')); },
      cancel() { cancelled = true; },
    });
    return new Response(body);
  });
  const r = await streamChat({ messages: [] }, { fetch, signal: controller.signal, onText: () => controller.abort() });
  assert.equal(r.outcome, "aborted");
  assert.equal(r.text, "a");
  assert.equal(cancelled, true);
});

test("CR at the very end of one feed, LF at the start of the next, with empty feeds between", () => {
  const p = new SSEParser();
  assert.deepEqual(p.feed("data: a\r"), []);
  assert.deepEqual(p.feed(""), []);
  assert.deepEqual(p.feed("\n\r"), [{ event: "message", data: "a" }]);
  assert.deepEqual(p.feed("\ndata: b\n\n"), [{ event: "message", data: "b" }]);
});

test("a line split over many feeds is joined whole", () => {
  const p = new SSEParser();
  const line = "data: " + "x".repeat(1000);
  for (let i = 0; i < line.length; i += 7) assert.deepEqual(p.feed(line.slice(i, i + 7)), []);
  assert.deepEqual(p.feed("\n\n"), [{ event: "message", data: "x".repeat(1000) }]);
});

// The shapes the old parser was quadratic on (issue 22), parsed whole; their speed is
// bench/speed/sse-parser.test.mjs's (make bench), not a clock bound here (issue 44).
test("64,000 events in one read, and a 1 MiB line in 64-character reads, parse whole", () => {
  const one = 'event: content_block_delta\ndata: {"index":0,"text":"tok"}\n\n';
  const events = new SSEParser().feed(one.repeat(64000));
  assert.equal(events.length, 64000);
  assert.deepEqual(events[63999], { event: "content_block_delta", data: '{"index":0,"text":"tok"}' });

  const big = "data: " + "y".repeat(1 << 20) + "\n\n";
  const p = new SSEParser();
  let got = [];
  for (let i = 0; i < big.length; i += 64) got = got.concat(p.feed(big.slice(i, i + 64)));
  assert.equal(got.length, 1);
  assert.equal(got[0].data.length, 1 << 20);
});

test("reasoning arrives apart from the answer, interleaved, each with its own index", async () => {
  const { fetch } = fakeFetch(() => sse(
    'event: thinking_delta\ndata: {"index":0,"text":"Let me "}\n\n' +
    'event: thinking_delta\ndata: {"index":1,"text":"think."}\n\n' +
    'event: content_block_delta\ndata: {"index":0,"text":"Hi"}\n\n' +
    'event: thinking_delta\ndata: {"index":2,"text":" Done."}\n\n' +
    'event: content_block_delta\ndata: {"index":1,"text":" there"}\n\n' +
    'event: message_stop\ndata: {"stop_reason":"stop"}\n\n' +
    "event: done\ndata: {}\n\n"));
  const seen = [];
  const r = await streamChat({ messages: [] }, {
    fetch, onText: (t, i) => seen.push(["text", t, i]), onThinking: (t, i) => seen.push(["thinking", t, i]),
  });
  assert.deepEqual(seen, [["thinking", "Let me ", 0], ["thinking", "think.", 1], ["text", "Hi", 0], ["thinking", " Done.", 2], ["text", " there", 1]]);
  assert.equal(r.outcome, "complete");
  assert.equal(r.thinking, "Let me think. Done.");
  assert.equal(r.text, "Hi there");
  assert.equal(r.whileThinking, false);
});

test("out of tokens while thinking", async () => {
  const { fetch } = fakeFetch(() => sse(
    'event: thinking_delta\ndata: {"index":0,"text":"Hmm"}\n\n' +
    'event: message_stop\ndata: {"stop_reason":"length","while_thinking":true}\n\n' +
    "event: done\ndata: {}\n\n"));
  const r = await streamChat({ messages: [] }, { fetch });
  assert.deepEqual([r.outcome, r.text, r.thinking, r.stopReason, r.whileThinking], ["complete", "", "Hmm", "length", true]);
});

test("429 carries Retry-After in seconds; other errors have none", async () => {
  const { fetch } = fakeFetch(() => new Response('{"error":"rate_limited","message":"slow down"}', { status: 429, headers: { "retry-after": "17" } }));
  const r = await streamChat({ messages: [] }, { fetch });
  assert.deepEqual([r.error.code, r.error.status, r.error.retryAfter], ["rate_limited", 429, 17]);
  const { fetch: f2 } = fakeFetch(() => new Response("<html>oops</html>", { status: 502 }));
  const r2 = await streamChat({ messages: [] }, { fetch: f2 });
  assert.deepEqual([r2.error.code, r2.error.message, r2.error.retryAfter], ["http_error", "HTTP 502", null]);
});

test("Retry-After as seconds, as an HTTP date, or unreadable", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  const cases = [["0", 0], [" 120 ", 120], ["Thu, 01 Jan 2026 00:00:30 GMT", 30], ["Wed, 31 Dec 2025 23:00:00 GMT", 0], ["soon", null], ["", null], [null, null], ["-5", null]];
  for (const [value, expected] of cases) assert.equal(parseRetryAfter(value, now), expected, JSON.stringify(value));
});

test("headers: the caller's are sent, defaults fill in, a Headers object works", async () => {
  const { fetch, calls } = fakeFetch(() => sse("event: done\ndata: {}\n\n"));
  await streamChat({ messages: [] }, { fetch, headers: new Headers({ authorization: "Bearer k" }) });
  await streamChat({ messages: [] }, { fetch, url: "https://x.test/chat", headers: { accept: "*/*" } });
  const [a, b] = calls.map((c) => Object.fromEntries(c.init.headers));
  assert.deepEqual(a, { accept: "text/event-stream", authorization: "Bearer k", "content-type": "application/json" });
  assert.deepEqual(b, { accept: "*/*", "content-type": "application/json" });
  assert.equal(calls[1].url, "https://x.test/chat");
});

test("a leading byte order mark does not hide the first event", async () => {
  assert.deepEqual(await collect([Uint8Array.of(0xef, 0xbb), Uint8Array.of(0xbf), WIRE]), EXPECTED);
});
