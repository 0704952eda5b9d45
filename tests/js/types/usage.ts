// Every option and result field of chat-client.js, as a strict TypeScript user writes them.
import { ChatError, SSEParser, parseRetryAfter, readEvents, streamChat } from "../../../public/chat-client.js";
import type { ChatMessage, ChatResult, FetchLike, Outcome, SSEEvent, StreamChatOptions } from "../../../public/chat-client.js";

const messages: ChatMessage[] = [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" },
  { role: "assistant", content: "Hello.", reasoning: "A greeting." },
  { role: "user", content: [{ type: "text", text: "And this?" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBO" } }] }];
const stop = new AbortController();
const myFetch: FetchLike = (url, init) => fetch(url, init);
const options: StreamChatOptions = {
  url: "https://chat.example/api/v1/chat",
  fetch: myFetch,
  headers: { authorization: "Bearer k" },
  signal: stop.signal,
  onText: (text, index) => { const n: number = index; console.log(text.toUpperCase(), n); },
  onThinking: (text, index) => console.log(text.length + index),
  onEvent: (event, data) => console.log(event.length, data),
};
const result: ChatResult = await streamChat({ messages, model: "@cf/openai/gpt-oss-20b", max_tokens: 64, temperature: 0.2, reasoning_effort: "low", stop: ["\n\n", "END"] }, options);
const outcome: Outcome = result.outcome;
const text: string = result.text + result.thinking;
const reason: string | null = result.stopReason;
const ranOut: boolean = result.whileThinking;
const total: number | undefined = result.usage?.total_tokens;
if (result.error) {
  const e: ChatError = result.error;
  const wait: number | null = e.retryAfter;
  console.log(e.code, e.status, e.message, wait);
}
const parser = new SSEParser();
const events: SSEEvent[] = [...parser.feed("data: x\n\n"), ...parser.end()];
const response = await fetch("/api/v1/chat");
if (response.body) for await (const { event, data } of readEvents(response.body, stop.signal)) console.log(event, data);
const seconds: number | null = parseRetryAfter(response.headers.get("retry-after"));
console.log(outcome, text, reason, ranOut, total, events, seconds, new ChatError("x", "y") instanceof Error);
