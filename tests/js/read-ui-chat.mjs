// One turn of the AI SDK's own chat client against /api/v1/ui-chat: DefaultChatTransport
// sends the UIMessages as useChat does, and readUIMessageStream builds the answer from the
// stream with the SDK's own parser (every chunk checked against its schema). Prints one JSON
// line: {"message": the assistant UIMessage, "chunks": the chunk types, "errors": [...]}.
//   node tests/js/read-ui-chat.mjs URL '{"messages": [...], "body": {...}}'
// (not a *.test.mjs: tests/test_doors/ui_chat/test_ui_chat_http.py runs it against its own workerd.)
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [url, request] = process.argv.slice(2);
const { messages, body = {}, trigger = "submit-message" } = JSON.parse(request);
const transport = new DefaultChatTransport({ api: `${url.replace(/\/$/, "")}/api/v1/ui-chat`, body });
const stream = await transport.sendMessages({
  chatId: "chat-1", messages, trigger, messageId: undefined, abortSignal: new AbortController().signal,
});
const [forReader, forTypes] = stream.tee();
const chunks = [];
const counting = (async () => { for await (const chunk of forTypes) chunks.push(chunk.type); })();
const errors = [];
let message;
// After a tool result the last message is the assistant's: useChat continues it, as here.
const last = messages.at(-1);
const continued = last?.role === "assistant" ? structuredClone(last) : undefined;
const onError = (e) => errors.push(String(e.message ?? e));
for await (const snapshot of readUIMessageStream({ message: continued, stream: forReader, onError })) {
  message = snapshot;
}
await counting;
process.stdout.write(JSON.stringify({ message, chunks, errors }) + "\n");
