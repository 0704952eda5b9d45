// The official openai JS SDK against this Worker: a streamed answer, printed as it arrives.
//   AI_CHAT_URL=http://127.0.0.1:8787 node examples/openai_js.mjs "Hello!"
import OpenAI from "openai";

const base = (process.env.AI_CHAT_URL ?? "http://127.0.0.1:8787").replace(/\/$/, "");
const model = process.env.AI_CHAT_MODEL ?? "@cf/google/gemma-4-26b-a4b-it";
const prompt = process.argv[2] ?? "Say hello in five words.";

// The Worker takes no key; the SDK insists on one, so any string will do.
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "unused" });
try {
  const stream = await client.chat.completions.create({
    model, messages: [{ role: "user", content: prompt }], stream: true, max_tokens: 256,
  });
  for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? "");
  process.stdout.write("\n");
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
