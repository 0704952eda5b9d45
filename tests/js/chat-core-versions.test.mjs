// Versions kept on regenerate and edit, and the chat list's rename, search, export and undo.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  chatToJSON, chatToMarkdown, deleteChat, editMessage, emptyState, regenerateFrom, renameChat, restoreChat, searchChats,
  startChat, switchVersion, versionOf,
} from "../../public/chat-core.js";

const shape = (chat) => chat.messages.map((m) => m.content);

test("regenerating keeps the earlier answers as versions; switching swaps what follows", () => {
  const chat = { messages: [
    { id: "q", role: "user", content: "q" }, { id: "a1", role: "assistant", content: "first", outcome: "complete" },
    { id: "q2", role: "user", content: "follow-up" }, { id: "b", role: "assistant", content: "b", outcome: "complete" },
  ] };
  const versions = regenerateFrom(chat, "a1");
  assert.deepEqual(shape(chat), ["q"]);
  chat.messages.push({ id: "a2", role: "assistant", content: "second", outcome: "complete", ...versions });
  assert.deepEqual(versionOf(chat.messages[1]), { index: 1, count: 2 });
  assert.equal(switchVersion(chat, "a2", 0), true);
  assert.deepEqual(shape(chat), ["q", "first", "follow-up", "b"], "the first answer comes back with what followed it");
  assert.deepEqual(versionOf(chat.messages[1]), { index: 0, count: 2 });
  assert.equal(switchVersion(chat, "a1", 1), true);
  assert.deepEqual(shape(chat), ["q", "second"]);
  assert.equal(switchVersion(chat, "a2", 2), false);
  // A third answer: three versions, the new one last.
  const more = regenerateFrom(chat, "a2");
  chat.messages.push({ id: "a3", role: "assistant", content: "third", outcome: "complete", ...more });
  assert.deepEqual(versionOf(chat.messages[1]), { index: 2, count: 3 });
  switchVersion(chat, "a3", 0);
  assert.deepEqual(shape(chat), ["q", "first", "follow-up", "b"]);
  assert.equal(JSON.stringify(chat).includes('"alts":[[{"id":"a1"'), false, "a version never nests its own versions");
});

test("editing keeps the earlier question and its answers as a version", () => {
  const chat = { messages: [
    { id: "q", role: "user", content: "old question" }, { id: "a", role: "assistant", content: "old answer", outcome: "complete" },
  ] };
  editMessage(chat, "q", "new question");
  assert.deepEqual(shape(chat), ["new question"]);
  assert.deepEqual(versionOf(chat.messages[0]), { index: 1, count: 2 });
  switchVersion(chat, chat.messages[0].id, 0);
  assert.deepEqual(shape(chat), ["old question", "old answer"]);
});

test("rename, search, export and undo of a delete", () => {
  const state = emptyState();
  const a = startChat(state, 1);
  a.messages.push({ id: "1", role: "user", content: "How do I sort a list in Python?" },
    { id: "2", role: "assistant", content: "Use `sorted()`.", outcome: "complete", thinking: "Easy." });
  const b = startChat(state, 2);
  b.messages.push({ id: "3", role: "user", content: "Weather in Paris", images: [{ name: "sky.png" }] });
  renameChat(b, "  Trip   plans ");
  assert.equal(b.title, "Trip plans");
  assert.deepEqual(searchChats(state.chats, "PYTHON sorted").map((c) => c.id), [a.id]);
  assert.deepEqual(searchChats(state.chats, "trip").map((c) => c.id), [b.id]);
  assert.deepEqual(searchChats(state.chats, "  ").length, 2);
  assert.deepEqual(searchChats(state.chats, "nothing here"), []);
  a.settings = { system: "Be brief." };
  assert.equal(chatToMarkdown(a), "# How do I sort a list in Python?\n\n## System prompt\n\nBe brief.\n\n## You\n\nHow do I sort a list in Python?\n\n"
    + "## Answer\n\n<details><summary>Thinking</summary>\n\nEasy.\n\n</details>\n\nUse `sorted()`.\n");
  assert.equal(chatToMarkdown(b), "# Trip plans\n\n## You\n\nWeather in Paris\n\n[image: sky.png]\n");
  assert.deepEqual(JSON.parse(chatToJSON(a)), { format: "ai-chat", version: 1, chat: a });
  const at = state.chats.indexOf(a);
  deleteChat(state, a.id);
  assert.deepEqual(state.chats.map((c) => c.id), [b.id]);
  restoreChat(state, a, at);
  assert.deepEqual(state.chats.map((c) => c.id), [b.id, a.id]);
  assert.equal(state.currentId, a.id);
  restoreChat(state, a, 0);
  assert.equal(state.chats.length, 2, "restoring twice does not duplicate");
});

import { usageLine } from "../../public/chat-core.js";

test("the usage line: tokens, time, tokens per second over the writing time", () => {
  assert.equal(usageLine({ prompt_tokens: 9, completion_tokens: 312, total_tokens: 321 }, 4200, 3900), "312 tokens · 4.2 s · 80.0 tokens/s");
  assert.equal(usageLine({ completion_tokens: 1 }, 300, 0), "1 token · 0.3 s");
  assert.equal(usageLine(null, 1250, 1000), "1.3 s", "no usage reported: the time alone");
  assert.equal(usageLine({ completion_tokens: 1200 }, 61000, 60000), "1,200 tokens · 61.0 s · 20.0 tokens/s");
});
