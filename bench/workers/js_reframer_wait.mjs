// The JavaScript peer: the re-framer a user would otherwise write (the zudo recipe: TextDecoder,
// split on blank lines, JSON.parse, TextEncoder per event), emitting byte for byte what our
// relay emits for the frames the benchmark sends (the harness checks this on every run).
const MODEL = "@cf/google/gemma-4-26b-a4b-it";
const USAGE_KEYS = ["prompt_tokens", "completion_tokens", "total_tokens"];
// Python's json.encoder.encode_basestring_ascii: JSON.stringify, then non-ASCII as \uXXXX.
const ascii = (s) => JSON.stringify(s).replace(/[\u0080-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));

function reframer(maxTokens, onCancel) {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let buffer = "";
  let index = 0;
  let thinking = 0;
  let usage = null;
  let finish = null;
  let done = false;
  const send = (controller, text) => controller.enqueue(encoder.encode(text));
  const frame = (controller, data) => {
    if (data === "[DONE]") {
      done = true;
      const completion = usage?.completion_tokens;
      const reason = finish ?? (maxTokens && completion && completion >= maxTokens ? "length" : "stop");
      const stop = usage ? { stop_reason: reason, usage } : { stop_reason: reason };
      send(controller, `event: message_stop\ndata: ${JSON.stringify(stop)}\n\nevent: done\ndata: {}\n\n`);
      return;
    }
    let value;
    try { value = JSON.parse(data); } catch { return; }
    let text = value.response;
    const choice = value.choices?.[0];
    if (choice) {
      const delta = choice.delta ?? {};
      const thought = delta.reasoning_content;
      if (typeof thought === "string" && thought) send(controller, `event: thinking_delta\ndata: {"index":${thinking++},"text":${ascii(thought)}}\n\n`);
      text = delta.content;
      if (choice.finish_reason) finish = choice.finish_reason === "length" ? "length" : "stop";
    }
    if (typeof text === "string" && text) send(controller, `event: content_block_delta\ndata: {"index":${index++},"text":${ascii(text)}}\n\n`);
    if (value.usage && typeof value.usage === "object") {
      const clean = {};
      for (const key of USAGE_KEYS) if (Number.isInteger(value.usage[key])) clean[key] = value.usage[key];
      if (Object.keys(clean).length && (usage === null || Object.values(clean).some((v) => v))) usage = clean;
    }
  };
  return new TransformStream({
    cancel() { onCancel(); },
    transform(chunk, controller) {
      if (done) return;
      buffer += decoder.decode(chunk, { stream: true });
      const blocks = buffer.split("\n\n");
      buffer = blocks.pop();
      for (const block of blocks) {
        for (const line of block.split("\n")) {
          if (line.startsWith("data: ")) frame(controller, line.slice(6));
          if (done) return;
        }
      }
    },
  });
}

// Cancel probe (bench/cancel_probe.mjs): the JS re-framer above, with the ways of keeping the request's
// context alive that the Python relay tries, chosen per request by ?mode=:
//   none        pipeThrough, no waitUntil (as js_reframer.mjs)
//   wait        ctx.waitUntil(a promise resolved when the pipe settles), registered at once
//   wait_gone   ctx.waitUntil(...) registered only from request.signal's abort / the transform's cancel
//   none_timer / wait_timer   none / wait, with a 60 s setTimeout pending until the pipe settles
// Every mode also counts what runs after the client left (GET /stats): the signal's abort, the
// transformer's cancel, and a setTimeout(0) and a microtask queued from either.
const stats = { requests: 0, aborts: 0, cancels: 0, timersAfterGone: 0, microtasksAfterGone: 0, pipesSettled: 0, waitRegisteredLate: 0, waitLateThrew: 0 };

function gone(kind) {
  stats[kind] += 1;
  setTimeout(() => { stats.timersAfterGone += 1; }, 0);
  Promise.resolve().then(() => { stats.microtasksAfterGone += 1; });
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/stats") return Response.json(stats);
    const mode = url.searchParams.get("mode") ?? "none";
    stats.requests += 1;
    const body = await request.json();
    const maxTokens = body.max_tokens ?? 1024;
    const inputs = { messages: body.messages, stream: true, max_tokens: maxTokens };
    const upstream = await env.AI.run(body.model ?? MODEL, inputs);
    let resolve;
    const done = new Promise((r) => { resolve = r; });
    let registered = false;
    const register = () => {
      if (registered) return;
      registered = true;
      try { ctx.waitUntil(done); stats.waitRegisteredLate += 1; } catch { stats.waitLateThrew += 1; }
    };
    if (mode === "wait" || mode === "wait_timer") { registered = true; ctx.waitUntil(done); }
    // *_timer: a timer pending while the answer streams (as the relay's ping timer, or an
    // AbortSignal.timeout), cleared when the pipe settles.
    const timer = mode.endsWith("_timer") ? setTimeout(() => {}, 60_000) : null;
    done.then(() => clearTimeout(timer));
    request.signal.addEventListener("abort", () => { gone("aborts"); if (mode === "wait_gone") register(); });
    const inner = reframer(maxTokens, () => { gone("cancels"); if (mode === "wait_gone") register(); });
    upstream.pipeTo(inner.writable).then(() => { stats.pipesSettled += 1; resolve(); }, () => { stats.pipesSettled += 1; resolve(); });
    return new Response(inner.readable, {
      headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache, no-transform" },
    });
  },
};
