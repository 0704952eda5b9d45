// The JS re-framer a user would otherwise write (the zudo recipe: TextDecoder, split on blank
// lines, JSON.parse, TextEncoder per event), emitting byte for byte what our relay emits for the
// frames the benchmark sends (the harness checks this on every run). One copy, for the peer
// (js_reframer.mjs) and the cancel probe (js_reframer_wait.mjs).
const USAGE_KEYS = ["prompt_tokens", "completion_tokens", "total_tokens"];
// Python's json.encoder.encode_basestring_ascii: JSON.stringify, then non-ASCII as \uXXXX.
const ascii = (s) => JSON.stringify(s).replace(/[\u0080-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));

export function reframer(maxTokens, hooks = {}) {
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
      // Reasoning arrives under either name (late 2026: `reasoning` on most models).
      const thought = delta.reasoning_content ?? delta.reasoning;
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
    ...hooks, // the cancel probe adds cancel(); the peer itself adds nothing
  });
}
