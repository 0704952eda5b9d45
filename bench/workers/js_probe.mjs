// What each built-in stream stage costs on workerd, per upstream chunk: the same answer
// through different glue, chosen by the request's "mode" (the harness reads this process's CPU).
function stage(mode, upstream) {
  switch (mode) {
    case "direct": return upstream; // the native stream, pumped by workerd itself
    case "transform": return upstream.pipeThrough(new TransformStream());
    case "identity_transform": return upstream.pipeThrough(new IdentityTransformStream());
    case "transform_then_identity": return upstream.pipeThrough(new TransformStream()).pipeThrough(new IdentityTransformStream());
    case "text_streams": return upstream.pipeThrough(new TextDecoderStream()).pipeThrough(new TextEncoderStream());
    case "reader_loop": {
      // A JS reader loop writing into an IdentityTransformStream's writer: no JS-backed readable.
      const { readable, writable } = new IdentityTransformStream();
      const writer = writable.getWriter();
      const reader = upstream.getReader();
      (async () => {
        for (;;) { const { done, value } = await reader.read(); if (done) break; await writer.write(value); }
        await writer.close();
      })().catch(() => {});
      return readable;
    }
    case "sink_identity": {
      // upstream.pipeTo(a JS WritableStream) whose write() writes into an IdentityTransformStream
      // without awaiting: the JS twin of the Python probe's py_sink_void.
      const { readable, writable } = new IdentityTransformStream();
      const writer = writable.getWriter();
      upstream.pipeTo(new WritableStream({ write(chunk) { writer.write(chunk).catch(() => {}); } }))
        .then(() => writer.close(), (err) => writer.abort(err)).catch(() => {});
      return readable;
    }
    default: throw new Error(`unknown mode ${mode}`);
  }
}

export default {
  async fetch(request, env) {
    const body = await request.json();
    const inputs = { messages: body.messages, stream: true, max_tokens: body.max_tokens ?? 1024 };
    const upstream = await env.AI.run(body.model, inputs);
    return new Response(stage(body.mode, upstream), { headers: { "content-type": "text/event-stream; charset=utf-8" } });
  },
};
