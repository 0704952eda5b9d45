// A second turn after a reasoning answer, with the openai JS SDK: the SDK's own message
// (content, reasoning_content, refusal, ...) is pushed as it came and sent back. The Worker
// passes its reasoning to the model as `reasoning` and drops the rest.
//   AI_CHAT_URL=http://127.0.0.1:8787 node examples/second_turn_openai.mjs "Capital of France?"
import OpenAI from "openai";

const base = (process.env.AI_CHAT_URL ?? "http://127.0.0.1:8787").replace(/\/$/, "");
const model = process.env.AI_CHAT_MODEL ?? "@cf/openai/gpt-oss-20b"; // a model that reasons first
const prompt = process.argv[2] ?? "What is the capital of France?";
const followUp = process.argv[3] ?? "And of Spain?";

const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "unused" });
const messages = [{ role: "user", content: prompt }];
try {
  const first = await client.chat.completions.create({ model, messages, max_tokens: 256 });
  console.log(first.choices[0].message.content);
  messages.push(first.choices[0].message, { role: "user", content: followUp });
  const second = await client.chat.completions.create({ model, messages, max_tokens: 256 });
  console.log(second.choices[0].message.content);
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
