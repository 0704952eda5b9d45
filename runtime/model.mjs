// The built-in offline model: a JS class named `Ai` (the Python SDK wraps bindings by
// their JS class name), streaming Workers AI's wire formats token by token.
//
// Directives in the last user message steer it, for tests and demos:
//   [[fault:throw]]      run() rejects before streaming (as InferenceUpstreamError does)
//   [[fault:midstream]]  the stream errors after 3 tokens
//   [[fault:malformed]]  malformed JSON frames between tokens (the answer still completes)
//   [[fault:stall]]      the stream goes silent after 2 tokens, forever
//   [[fault:nodone]]     the stream ends without `data: [DONE]`
//   [[fault:split]]      frames re-cut at random byte boundaries (seeded, so repeatable)
//   [[fault:nostream]]   run() ignores "stream" and resolves to the whole answer as an object
//   [[pace:N]]           N ms between tokens (default: the runtime's pace)
//   [[tokens:N]]         answer with exactly N filler tokens
// The wire shape follows the model id: "@cf/openai/..." and "*gpt-oss*" stream
// OpenAI-shaped chunks, every other id the native {"response": ...} frames.

const encoder = new TextEncoder();
const FILLER = ["stream", "edge", "token", "relay", "python", "worker", "event", "byte"];
const MAX_CALLS = 2000;

export function shapeFor(model) {
  return model.startsWith("@cf/openai/") || model.includes("gpt-oss") ? "openai" : "native";
}

function directives(text) {
  const found = {};
  for (const m of text.matchAll(/\[\[(\w+):([\w.-]+)\]\]/g)) found[m[1]] = m[2];
  return found;
}

// The answer is a pure function of the conversation, so tests can predict every byte.
export function answerTokens(messages, maxTokens) {
  const lastUser = [...messages].reverse().find((m) => m.role === "user");
  const said = lastUser ? String(lastUser.content) : "";
  const opts = directives(said);
  let tokens;
  if (opts.tokens !== undefined) {
    const n = Number(opts.tokens);
    tokens = Array.from({ length: n }, (_, i) => (i === 0 ? "" : " ") + FILLER[i % FILLER.length]);
  } else {
    const clean = said.replace(/\[\[\w+:[\w.-]+\]\]/g, "").trim();
    const text = `You said: ${clean}. This answer comes from the built-in offline model, ` +
      `one token at a time, in turn ${messages.length}.`;
    tokens = text.match(/\s*\S+/g) ?? [];
  }
  const truncated = maxTokens !== undefined && tokens.length > maxTokens;
  return { tokens: truncated ? tokens.slice(0, maxTokens) : tokens, truncated, opts };
}

function promptTokens(messages) {
  return messages.reduce((n, m) => n + (String(m.content).match(/\S+/g) ?? []).length + 3, 0);
}

function mulberry32(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function frames(model, shape, tokens, truncated, usage, opts) {
  const out = [];
  const created = 1767225600;
  const pad = (i) => "abcdefghijklmnop".slice(0, 1 + (i % 16));
  tokens.forEach((token, i) => {
    if (opts.fault === "malformed" && i % 2 === 1) out.push({ raw: 'data: {"response": "bro\n\n', token: false });
    const frame = shape === "openai"
      ? { id: "chatcmpl-local", object: "chat.completion.chunk", created, model,
          choices: [{ index: 0, delta: i === 0 ? { role: "assistant", content: token } : { content: token }, finish_reason: null }] }
      : { response: token, p: pad(i) };
    out.push({ raw: `data: ${JSON.stringify(frame)}\n\n`, token: true });
  });
  if (shape === "openai") {
    out.push({ raw: `data: ${JSON.stringify({ id: "chatcmpl-local", object: "chat.completion.chunk", created, model,
      choices: [{ index: 0, delta: {}, finish_reason: truncated ? "length" : "stop" }] })}\n\n` });
    out.push({ raw: `data: ${JSON.stringify({ id: "chatcmpl-local", object: "chat.completion.chunk", created, model, choices: [], usage })}\n\n` });
  } else {
    out.push({ raw: `data: ${JSON.stringify({ response: "", usage })}\n\n` });
  }
  if (opts.fault !== "nodone") out.push({ raw: "data: [DONE]\n\n" });
  return out;
}

// Chunks for the wire: one frame per pull, or (fault:split) the same bytes re-cut.
function chunksOf(list, opts) {
  if (opts.fault !== "split") return list.map((f) => ({ bytes: encoder.encode(f.raw), token: f.token }));
  const all = encoder.encode(list.map((f) => f.raw).join(""));
  const rand = mulberry32(1234);
  const chunks = [];
  for (let at = 0; at < all.length;) {
    const size = 1 + Math.floor(rand() * 24);
    chunks.push({ bytes: all.subarray(at, at + size), token: true });
    at += size;
  }
  return chunks;
}

// Named ReadableStream so the SDK passes it through as one; it counts the Worker's
// reader.read() calls, including any made after the stream was cancelled. (A JS pipe
// reads without getReader(); with highWaterMark 0 its reads show up as pulls.)
const ObservedStream = class ReadableStream extends globalThis.ReadableStream {
  constructor(call, source, strategy) {
    super(source, strategy);
    this.call = call;
  }

  getReader(options) {
    const reader = super.getReader(options);
    const call = this.call;
    const read = reader.read.bind(reader);
    reader.read = () => {
      call.reads += 1;
      if (call.cancelledAt !== null) call.readsAfterCancel += 1;
      return read();
    };
    return reader;
  }
};

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class Ai {
  constructor({ paceMs = 40 } = {}) {
    this.paceMs = paceMs;
    this.calls = [];
    this.seq = 0;
  }

  async run(model, inputs) {
    const messages = (inputs?.messages ?? []).map((m) => ({ role: m.role, content: m.content }));
    const call = {
      id: ++this.seq, model, inputs: JSON.parse(JSON.stringify(inputs ?? {})),
      startedAt: performance.now(), reads: 0, readsAfterCancel: 0, pulls: 0, pullsAfterCancel: 0, chunksAtCancel: null,
      cancelledAt: null, releasedAt: null, closedAt: null, erroredAt: null, chunksSent: 0,
    };
    this.calls.push(call);
    if (this.calls.length > MAX_CALLS) this.calls.splice(0, this.calls.length - MAX_CALLS);

    const { tokens, truncated, opts } = answerTokens(messages, inputs?.max_tokens);
    if (opts.fault === "throw") {
      call.erroredAt = performance.now();
      throw new Error("InferenceUpstreamError: the built-in model refused (fault:throw)");
    }
    const pace = opts.pace !== undefined ? Number(opts.pace) : this.paceMs;
    const pt = promptTokens(messages);
    const usage = { prompt_tokens: pt, completion_tokens: tokens.length, total_tokens: pt + tokens.length };
    if (opts.fault === "nostream") {
      call.closedAt = performance.now();
      return { response: tokens.join(""), usage };
    }
    const chunks = chunksOf(frames(model, shapeFor(model), tokens, truncated, usage, opts), opts);
    let next = 0;
    let tokenCount = 0;

    // highWaterMark 0: the model produces only when the Worker reads.
    return new ObservedStream(call, {
      async pull(controller) {
        call.pulls += 1;
        if (call.cancelledAt !== null) call.pullsAfterCancel += 1;
        if (opts.fault === "stall" && tokenCount >= 2) return new Promise(() => {});
        if (opts.fault === "midstream" && tokenCount >= 3) {
          call.erroredAt = performance.now();
          controller.error(new Error("built-in model failed mid-stream (fault:midstream)"));
          return;
        }
        if (next >= chunks.length) { call.closedAt = performance.now(); controller.close(); return; }
        const chunk = chunks[next++];
        if (chunk.token && pace > 0) await sleep(pace);
        if (call.cancelledAt !== null) return;
        if (chunk.token) tokenCount += 1;
        call.chunksSent += 1;
        controller.enqueue(chunk.bytes);
        // Like a network body, the end follows the last bytes at once.
        if (next >= chunks.length) { call.closedAt = performance.now(); controller.close(); }
      },
      cancel() {
        // A cancel after the last chunk went out cuts nothing short: the Worker had the
        // whole answer ([DONE] included) and released the connection. Only a cancel
        // before that is a cancelled answer.
        if (next >= chunks.length) call.releasedAt ??= performance.now();
        else if (call.cancelledAt === null) { call.cancelledAt = performance.now(); call.chunksAtCancel = call.chunksSent; }
      },
    }, { highWaterMark: 0 });
  }

  report() {
    return this.calls.map((c) => ({
      id: c.id, model: c.model, inputs: c.inputs, reads: c.reads,
      readsAfterCancel: c.readsAfterCancel, pulls: c.pulls, pullsAfterCancel: c.pullsAfterCancel,
      chunksSent: c.chunksSent, chunksAtCancel: c.chunksAtCancel,
      startedAt: c.startedAt, cancelledAt: c.cancelledAt, releasedAt: c.releasedAt, closedAt: c.closedAt, erroredAt: c.erroredAt,
    }));
  }
}
