import { reframer } from "./reframer.mjs";

const MODEL = "@cf/google/gemma-4-26b-a4b-it";

// Cancel probe (bench/probes/cancel_probe.mjs): the JS re-framer above, with the ways of keeping the request's
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
    const inner = reframer(maxTokens, { cancel() { gone("cancels"); if (mode === "wait_gone") register(); } });
    upstream.pipeTo(inner.writable).then(() => { stats.pipesSettled += 1; resolve(); }, () => { stats.pipesSettled += 1; resolve(); });
    return new Response(inner.readable, {
      headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache, no-transform" },
    });
  },
};
