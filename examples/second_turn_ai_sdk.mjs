// A second turn after a reasoning answer, with the Vercel AI SDK: the first answer's response
// messages (text and reasoning parts) go back as they are; @ai-sdk/openai-compatible sends
// the reasoning as reasoning_content, which the Worker passes to the model as `reasoning`.
//   AI_CHAT_URL=http://127.0.0.1:8787 node examples/second_turn_ai_sdk.mjs "Capital of France?"
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText } from "ai";

const base = (process.env.AI_CHAT_URL ?? "http://127.0.0.1:8787").replace(/\/$/, "");
const model = process.env.AI_CHAT_MODEL ?? "@cf/openai/gpt-oss-20b"; // a model that reasons first
const prompt = process.argv[2] ?? "What is the capital of France?";
const followUp = process.argv[3] ?? "And of Spain?";

const aiChat = createOpenAICompatible({ name: "ai-chat", baseURL: `${base}/v1` });
const messages = [{ role: "user", content: prompt }];
try {
  const first = await generateText({ model: aiChat.chatModel(model), messages, maxOutputTokens: 256 });
  console.log(first.text);
  messages.push(...first.response.messages, { role: "user", content: followUp });
  const second = await generateText({ model: aiChat.chatModel(model), messages, maxOutputTokens: 256 });
  console.log(second.text);
} catch (err) {
  exitIfUnreachable(err);
}

// No server at `base` (connection refused, unknown host): one line that says what to do.
function exitIfUnreachable(err) {
  const causes = (e) => (e ? [e, ...causes(e.cause), ...(e.errors ?? []).flatMap(causes)] : []);
  if (!causes(err).some((e) => ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN"].includes(e.code))) throw err;
  console.error(`Cannot reach ${base}: is \`make dev\` running? Set AI_CHAT_URL to the Worker's address.`);
  process.exit(1);
}
