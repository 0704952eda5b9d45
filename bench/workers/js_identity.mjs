// The floor for any re-framer: the upstream piped through an identity TransformStream.
export default {
  async fetch(request, env) {
    const body = await request.json();
    const inputs = { messages: body.messages, stream: true, max_tokens: body.max_tokens ?? 1024 };
    const upstream = await env.AI.run(body.model ?? "@cf/google/gemma-4-26b-a4b-it", inputs);
    return new Response(upstream.pipeThrough(new TransformStream()), {
      headers: { "content-type": "text/event-stream; charset=utf-8" },
    });
  },
};
