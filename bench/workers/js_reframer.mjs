// The JavaScript peer: the re-framer of reframer.mjs behind env.AI.run(), as a Worker.
import { reframer } from "./reframer.mjs";

const MODEL = "@cf/google/gemma-4-26b-a4b-it";

export default {
  async fetch(request, env) {
    const body = await request.json();
    const maxTokens = body.max_tokens ?? 1024;
    const inputs = { messages: body.messages, stream: true, max_tokens: maxTokens };
    const upstream = await env.AI.run(body.model ?? MODEL, inputs);
    return new Response(upstream.pipeThrough(reframer(maxTokens)), {
      headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache, no-transform" },
    });
  },
};
