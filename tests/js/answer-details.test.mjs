// An answer's details as the server keeps them (docs/API.md, "An answer's details"): drawn on
// the page's answer, left out of the history it compares, and carried into a fork.
import { test } from "node:test";
import assert from "node:assert/strict";
import { sendableMessages } from "../../public/chat-core.js";
import { applyDetails, chatFromServer, detailsOf, historyDetails, needsFork } from "../../public/durable-chats.js";

const A = "a".repeat(32);
const DETAILS = { model: "@cf/openai/gpt-oss-20b", stop_reason: "stop", usage: { completion_tokens: 12 }, ms: 900, writing_ms: 600, reasoning_ms: 250 };

test("a stored answer is drawn with its model, ending, usage and times; the history compared has none of them", () => {
  const server = { messages: [
    { role: "user", content: "why" },
    { role: "assistant", content: "because", reasoning: "hmm", details: DETAILS },
  ] };
  const chat = chatFromServer({ conversation: A }, server);
  const answer = chat.messages[1];
  assert.deepEqual(
    { model: answer.model, stopReason: answer.stopReason, usage: answer.usage, ms: answer.ms, writingMs: answer.writingMs, thinkingMs: answer.thinkingMs, outcome: answer.outcome },
    { model: DETAILS.model, stopReason: "stop", usage: DETAILS.usage, ms: 900, writingMs: 600, thinkingMs: 250, outcome: "complete" },
  );
  assert.deepEqual(chat.serverMessages[1], { role: "assistant", content: "because", reasoning: "hmm" });
  // What the page would send next is the server's history: no fork.
  assert.equal(needsFork(chat, sendableMessages(chat, { reasoning: true })), false);
});

test("details round-trip, and a stop or an error is drawn as it ended", () => {
  const answer = applyDetails({ role: "assistant", content: "x", thinking: "t", outcome: "complete" }, DETAILS);
  assert.deepEqual(detailsOf(answer), DETAILS);
  assert.equal(applyDetails({ outcome: "complete" }, { stop_reason: "cancelled" }).outcome, "aborted");
  const failed = applyDetails({ outcome: "complete" }, { error: { code: "conversation_too_large", message: "full" } });
  assert.equal(failed.outcome, "failed");
  assert.equal(failed.error.code, "conversation_too_large");
  assert.equal(applyDetails({ outcome: "complete" }, { ms: -1, writing_ms: 1.5 }).ms, undefined);
});

test("a fork's details sit beside its assistant messages, matched from the end", () => {
  const chat = { messages: [
    { role: "user", content: "one" }, { role: "assistant", content: "1", outcome: "complete", model: "m1", ms: 5 },
    { role: "user", content: "two" }, { role: "assistant", content: "", outcome: "failed" },
    { role: "user", content: "three" }, { role: "assistant", content: "3", outcome: "complete", model: "m3", ms: 7 },
  ] };
  const history = sendableMessages(chat);
  assert.deepEqual(historyDetails(chat, history), [null, { model: "m1", ms: 5 }, null, null, { model: "m3", ms: 7 }]);
  // The oldest turns trimmed: the answers left keep their own details.
  assert.deepEqual(historyDetails(chat, history.slice(2)), [null, null, { model: "m3", ms: 7 }]);
  assert.equal(historyDetails({ messages: [{ role: "user", content: "x" }] }, [{ role: "user", content: "x" }]), null);
});
