// The floor under the JS recipe: the model's stream returned untouched (no JS pipe at all).
export default {
  async fetch(request, env) {
    const body = await request.json();
    const inputs = { messages: body.messages, stream: true, max_tokens: body.max_tokens ?? 1024 };
    const upstream = await env.AI.run(body.model ?? "@cf/google/gemma-4-26b-a4b-it", inputs);
    return new Response(upstream, { headers: { "content-type": "text/event-stream; charset=utf-8" } });
  },
};
