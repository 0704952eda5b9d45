// The page's chats kept as durable conversations: the ids-only list, a chat read back from the
// server, and when the next message has to start a new conversation (a fork).
import { test } from "node:test";
import assert from "node:assert/strict";
import { sendableMessages } from "../../public/chat-core.js";
import {
  DURABLE_KEY, OWNER_KEY, chatFromServer, historyAfter, listedEntries, loadDurable, loadOwnerToken, needsFork, ownerToken,
  saveDurable,
} from "../../public/durable-chats.js";

class Memory {
  constructor(items = {}) { this.items = { ...items }; }
  getItem(key) { return key in this.items ? this.items[key] : null; }
  setItem(key, value) { this.items[key] = String(value); }
}
const A = "a".repeat(32), B = "b".repeat(32);

test("the browser keeps only ids and its own fields; odd entries are dropped", () => {
  const storage = new Memory();
  const state = { currentId: "x", chats: [
    { id: "x", conversation: A, title: "", model: "m", settings: { system: "brief" }, messages: [{ id: "1", role: "user", content: "secret words" }] },
    { id: "y", title: "", model: "", messages: [] },   // not sent yet: no conversation, not kept
    { id: "z", conversation: B, title: "named", model: "", messages: [] },
  ] };
  saveDurable(storage, state);
  const saved = storage.getItem(DURABLE_KEY);
  assert.equal(saved.includes("secret words"), false, saved);
  assert.deepEqual(loadDurable(storage), { currentId: A, chats: [
    { conversation: A, title: "", model: "m", settings: { system: "brief" } }, { conversation: B, title: "named", model: "" },
  ] });
  storage.setItem(DURABLE_KEY, JSON.stringify({ version: 1, currentId: "nope", chats: [{ conversation: "../x" }, { conversation: A }, { conversation: A }, null] }));
  assert.deepEqual(loadDurable(storage), { currentId: null, chats: [{ conversation: A, title: "", model: "" }] });
  storage.setItem(DURABLE_KEY, "{not json");
  assert.deepEqual(loadDurable(storage), { currentId: null, chats: [] });
});

test("a chat read back from the server: its system prompt is the setting, images only as data: URLs", () => {
  const png = "data:image/png;base64,iVBORw0KGgo=";
  const server = { id: A, streaming: true, messages: [
    { role: "system", content: "brief" },
    { role: "user", content: [{ type: "text", text: "look" }, { type: "image_url", image_url: { url: png } }, { type: "image_url", image_url: { url: "https://evil.invalid/x.png" } }] },
    { role: "assistant", content: "a cat", reasoning: "hmm" },
    { role: "user", content: "more" },
  ] };
  const chat = chatFromServer({ conversation: A, title: "", settings: { system: "brief" } }, server);
  assert.deepEqual(chat.messages.map(({ id, ...m }) => m), [
    { role: "user", content: "look", images: [{ name: "image 1", type: "image/png", bytes: 8, url: png }] },
    { role: "assistant", content: "a cat", outcome: "complete", thinking: "hmm" },
    { role: "user", content: "more" },
  ]);
  assert.deepEqual(chat.serverMessages, server.messages);
  const other = chatFromServer({ conversation: A }, server);   // another system prompt now: shown as a message
  assert.equal(other.messages[0].role, "system");
});

test("the next message forks exactly when the server's history is not what the page would send", () => {
  const chat = chatFromServer({ conversation: A }, { messages: [{ role: "user", content: "q" }, { role: "assistant", content: "a", reasoning: "r" }] });
  const history = sendableMessages(chat, { reasoning: true });
  assert.equal(needsFork(chat, history), false);
  chat.settings = { system: "now brief" };
  assert.equal(needsFork(chat, sendableMessages(chat, { reasoning: true })), true);
  assert.equal(needsFork({ messages: [] }, []), true, "no conversation yet");
  assert.equal(needsFork({ conversation: A, serverMessages: null }, []), true, "unknown after a lost connection");
});

test("the server's history after a turn, as it stores it", () => {
  const h = [{ role: "user", content: "q" }, { role: "assistant", content: "a" }];
  const done = { outcome: "complete", text: "b", thinking: "", stopReason: "stop", error: null };
  assert.deepEqual(historyAfter(h, "q2", done), [...h, { role: "user", content: "q2" }, { role: "assistant", content: "b" }]);
  assert.deepEqual(historyAfter(h, "q2", { ...done, thinking: "t" }).at(-1), { role: "assistant", content: "b", reasoning: "t" });
  const failedEarly = { outcome: "failed", text: "", thinking: "", stopReason: null, error: { status: 200 } };
  assert.deepEqual(historyAfter(h, "q2", failedEarly), [...h, { role: "user", content: "q2" }], "a failed answer with no text is not kept");
  assert.deepEqual(historyAfter(h, "q2", { ...failedEarly, error: { status: 409 } }), h, "refused: nothing was taken");
  assert.deepEqual(historyAfter(h, "q2", { ...failedEarly, error: { status: 502 } }), h, "the model failed before the answer began");
  assert.equal(historyAfter(h, "q2", { ...failedEarly, error: { status: 0 } }), null, "no answer at all: unknown");
  assert.equal(historyAfter(h, "q2", { ...done, outcome: "cut", stopReason: null }), null, "it may have gone on");
});

test("an exported chat carries neither its conversation's id nor the server's copy", async () => {
  const { chatToJSON } = await import("../../public/chat-core.js");
  const chat = chatFromServer({ conversation: A, title: "t" }, { messages: [{ role: "user", content: "q" }] });
  const exported = chatToJSON(chat);
  assert.equal(exported.includes(A), false, exported);
  assert.deepEqual(JSON.parse(exported).chat.messages.map((m) => m.content), ["q"]);
  assert.equal("serverMessages" in JSON.parse(exported).chat, false);
});

test("the owner token: 128 random bits made once and kept; a pasted one is forgiven its blanks and case", () => {
  const storage = new Memory();
  const token = loadOwnerToken(storage);
  assert.match(token, /^[0-9a-f]{32}$/);
  assert.equal(storage.getItem(OWNER_KEY), token);
  assert.equal(loadOwnerToken(storage), token);
  assert.notEqual(loadOwnerToken(new Memory()), token);
  assert.notEqual(loadOwnerToken(new Memory({ [OWNER_KEY]: "not hex" })), "not hex");
  assert.equal(ownerToken(`  ${A.toUpperCase()}\n`), A);
  for (const bad of ["", "xyz", "a".repeat(31), "a".repeat(65), null]) assert.equal(ownerToken(bad), null);
});

test("the server's list adds the chats this browser does not know, in its order", () => {
  const C = "c".repeat(32);
  const saved = { chats: [{ conversation: A }] };
  const listed = { data: [{ id: C, title: "new" }, { id: A, title: "known" }, { id: "../x" }, { id: B }, { id: C }] };
  assert.deepEqual(listedEntries(saved, listed), [
    { conversation: C, title: "", model: "" }, { conversation: B, title: "", model: "" },
  ]);
  assert.deepEqual(listedEntries(saved, null), []);
});
