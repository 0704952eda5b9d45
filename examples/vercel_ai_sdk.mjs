// The Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`) against this Worker, streamed.
// chatModel() speaks Chat Completions (/v1/chat/completions), which is what the Worker serves.
//   AI_CHAT_URL=http://127.0.0.1:8787 node examples/vercel_ai_sdk.mjs "Hello!"
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { streamText } from "ai";

const base = (process.env.AI_CHAT_URL ?? "http://127.0.0.1:8787").replace(/\/$/, "");
const model = process.env.AI_CHAT_MODEL ?? "@cf/google/gemma-4-26b-a4b-it";
const prompt = process.argv[2] ?? "Say hello in five words.";

const aiChat = createOpenAICompatible({ name: "ai-chat", baseURL: `${base}/v1` });
let failed = null;   // streamText hands errors to onError (by default it logs them) and ends the stream
const result = streamText({
  model: aiChat.chatModel(model), prompt, maxOutputTokens: 256, onError: ({ error }) => { failed = error; },
});
for await (const text of result.textStream) process.stdout.write(text);
if (failed) exitIfUnreachable(failed);
process.stdout.write("\n");

// No server at `base` (connection refused, unknown host): one line that says what to do.
function exitIfUnreachable(err) {
  const causes = (e) => (e ? [e, ...causes(e.cause), ...(e.errors ?? []).flatMap(causes)] : []);
  if (!causes(err).some((e) => ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN"].includes(e.code))) throw err;
  console.error(`Cannot reach ${base}: is \`make dev\` running? Set AI_CHAT_URL to the Worker's address.`);
  process.exit(1);
}
