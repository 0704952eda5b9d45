// Run by tests/test_doors/conversations/test_conversation_client_http.py against the Worker on workerd:
//   node tests/js/conversation-resume.mjs BASE_URL CONTENT CUT_AFTER_BYTES
// The first answer's connection is cut after CUT_AFTER_BYTES (the real request is aborted, as
// a dropped network would): streamConversation must resume it and get every event once.
import { createConversation, resumeConversation, streamConversation } from "../../public/conversation-client.js";

const [base, content, cutAfter] = process.argv.slice(2);
let cuts = 0;
const opens = [];
async function cuttingFetch(url, init = {}) {
  opens.push({ url: String(url).replace(base, ""), lastEventId: init.headers?.["last-event-id"] ?? null });
  const leave = new AbortController();
  init.signal?.addEventListener("abort", () => leave.abort());
  const response = await fetch(new URL(url, base), { ...init, signal: leave.signal });
  if (cuts > 0 || !String(url).endsWith("/messages")) return response;
  cuts += 1;
  let seen = 0;
  const reader = response.body.getReader();
  const body = new ReadableStream({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) { controller.close(); return; }
      seen += value.byteLength;
      if (seen >= Number(cutAfter)) { leave.abort(); controller.error(new Error("cut by the test")); return; }
      controller.enqueue(value);
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
}

const id = await createConversation({ base: `${base}/api/v1/conversations` });
const events = [];
const result = await streamConversation(id, { content }, {
  base: `${base}/api/v1/conversations`, fetch: cuttingFetch, onEvent: (event) => events.push(event),
});
const again = await resumeConversation(id, null, { base: `${base}/api/v1/conversations` });
console.log(JSON.stringify({ id, result: { ...result, error: result.error && result.error.code }, events, opens, replay: again.text }));
