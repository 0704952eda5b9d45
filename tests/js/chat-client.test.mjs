// The browser client, fed real ReadableStreams split at every boundary.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SSEParser, readEvents, streamChat } from "../../public/chat-client.js";

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
