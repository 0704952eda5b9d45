// The Vercel AI SDK's chat client against this Worker's UI message stream (POST /api/v1/ui-chat):
// DefaultChatTransport sends the conversation as `useChat` does, readUIMessageStream builds the
// assistant message as it streams; its text is printed as it grows. In a React app the same is
//   useChat({ transport: new DefaultChatTransport({ api: "/api/v1/ui-chat" }) })
//   AI_CHAT_URL=http://127.0.0.1:8787 node examples/ai_sdk_ui_chat.mjs "Hello!"
import { DefaultChatTransport, readUIMessageStream } from "ai";

const base = (process.env.AI_CHAT_URL ?? "http://127.0.0.1:8787").replace(/\/$/, "");
const model = process.env.AI_CHAT_MODEL ?? "@cf/google/gemma-4-26b-a4b-it";
const prompt = process.argv[2] ?? "Say hello in five words.";

const transport = new DefaultChatTransport({ api: `${base}/api/v1/ui-chat`, body: { model, max_tokens: 256 } });
try {
  const stream = await transport.sendMessages({
    chatId: "example", trigger: "submit-message", messageId: undefined, abortSignal: undefined,
    messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: prompt }] }],
  });
  let printed = 0;
  for await (const message of readUIMessageStream({ stream, terminateOnError: true })) {
    const text = message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
    process.stdout.write(text.slice(printed));
    printed = text.length;
  }
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
