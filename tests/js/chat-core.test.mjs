// The page's decisions without a browser: limits, trimming, error words, saved chats.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  DEFAULT_LIMITS, ERRORS, STORAGE_KEY, chatTitle, countChars, currentChat, deleteChat, describeError, editMessage,
  emptyState, fitConversation, limitsFrom, loadState, reasoningFrom, regenerateFrom, retryWhen, saveState, selectChat,
  sendableMessages, startChat, thoughtFor, touchChat,
} from "../../public/chat-core.js";

const bytesOf = (body) => new TextEncoder().encode(JSON.stringify(body)).length;
const u = (content) => ({ role: "user", content });
const a = (content) => ({ role: "assistant", content });
const s = (content) => ({ role: "system", content });

test("limits from /api/v1/models, and the defaults for anything absent or odd", () => {
  const cases = [
    [{ models: [], limits: { max_messages: 10, max_body_bytes: 2048, max_message_chars: 100 } }, { maxMessages: 10, maxBodyBytes: 2048, maxMessageChars: 100 }],
    [{ models: [] }, DEFAULT_LIMITS],
    [{ limits: { max_messages: "10", max_body_bytes: -1, max_message_chars: 1.5 } }, DEFAULT_LIMITS],
    [{ limits: { max_messages: 3 } }, { ...DEFAULT_LIMITS, maxMessages: 3 }],
    [null, DEFAULT_LIMITS],
    [{ limits: null }, DEFAULT_LIMITS],
  ];
  for (const [json, expected] of cases) assert.deepEqual(limitsFrom(json), { ...DEFAULT_LIMITS, ...expected }, JSON.stringify(json));
  assert.deepEqual(DEFAULT_LIMITS, {
    maxMessages: 50, maxBodyBytes: 65536, maxMessageChars: 8000, maxImages: 0, maxImageBytes: 0, maxTokensLimit: null, defaultMaxTokens: null,
  });
  // The issue-21 service: images, large limits and the max_tokens bounds.
  assert.deepEqual(limitsFrom({ limits: {
    max_messages: 200, max_message_chars: 1000000, max_body_bytes: 8388608, max_images: 4, max_image_bytes: 5242880,
    max_tokens_limit: 32768, default_max_tokens: 4096,
  } }), { maxMessages: 200, maxMessageChars: 1000000, maxBodyBytes: 8388608, maxImages: 4, maxImageBytes: 5242880, maxTokensLimit: 32768, defaultMaxTokens: 4096 });
  assert.deepEqual(reasoningFrom({ reasoning: ["@cf/openai/gpt-oss-20b", 3] }), ["@cf/openai/gpt-oss-20b"]);
  assert.deepEqual(reasoningFrom({}), []);
});

test("characters counted as the service counts them: code points", () => {
  assert.deepEqual(["", "abc", "Grüße", "🌍🌍", "a\ud800b"].map(countChars), [0, 3, 5, 2, 3]);
});

test("a conversation within the limits is sent whole", () => {
  const messages = [s("be brief"), u("hi"), a("hello"), u("again")];
  assert.deepEqual(fitConversation(messages, DEFAULT_LIMITS), { messages, dropped: 0, shortened: 0, imagesDropped: 0, fits: true, reason: null });
});

test("turn 26 of a 50-message limit: the oldest turn goes, the system message stays", () => {
  const messages = [s("sys")];
  for (let i = 1; i <= 25; i++) messages.push(u(`q${i}`), a(`a${i}`));
  messages.push(u("q26"));                        // 52 messages
  const r = fitConversation(messages, DEFAULT_LIMITS);
  assert.equal(r.messages.length, 50);
  assert.deepEqual(r.messages.slice(0, 3), [s("sys"), u("q2"), a("a2")]);
  assert.deepEqual(r.messages.at(-1), u("q26"));
  assert.equal(r.dropped, 2);
  assert.equal(r.fits, true);
});

test("trimming by bytes matches the body that is sent, exactly, and drops no more than needed", () => {
  const extra = { model: "@cf/meta/llama-3.3-70b-instruct-fp8-fast" };
  const messages = [s("sys"), u("é".repeat(300)), a("🌍".repeat(200)), u("x".repeat(500)), a("y".repeat(500)), u("last one")];
  for (let budget = 200; budget <= bytesOf({ messages, ...extra }) + 1; budget += 7) {
    const limits = { ...DEFAULT_LIMITS, maxBodyBytes: budget };
    const r = fitConversation(messages, limits, { extra });
    const sent = bytesOf({ messages: r.messages, ...extra });
    if (r.fits) assert.ok(sent <= budget, `budget ${budget}: sent ${sent}`);
    assert.deepEqual(r.messages[0], s("sys"), `budget ${budget}`);
    assert.deepEqual(r.messages.at(-1), u("last one"), `budget ${budget}`);
    assert.notEqual(r.messages[1]?.role, "assistant", `budget ${budget}: opens with an answer`);
    // Keeping one more turn (the last dropped one) would not have fitted.
    if (r.dropped > 0 && r.fits) {
      const keptFrom = messages.length - (r.messages.length - 1);
      const oneMore = [messages[0], ...messages.slice(keptFrom - (messages[keptFrom - 1].role === "assistant" ? 2 : 1))];
      assert.ok(bytesOf({ messages: oneMore, ...extra }) > budget, `budget ${budget}: dropped too much`);
    }
  }
});

test("budgetBytes lowers the byte limit (after the model said the conversation is too long)", () => {
  const messages = [u("a".repeat(100)), a("b".repeat(100)), u("c")];
  const r = fitConversation(messages, DEFAULT_LIMITS, { budgetBytes: 100 });
  assert.deepEqual(r.messages, [u("c")]);
  assert.equal(r.dropped, 2);
});

test("an earlier answer over the character limit is cut to it; the last message never is", () => {
  const limits = { ...DEFAULT_LIMITS, maxMessageChars: 10 };
  const r = fitConversation([u("q"), a("🌍".repeat(12)), u("0123456789")], limits);
  assert.deepEqual(r.messages, [u("q"), a("🌍".repeat(10)), u("0123456789")]);
  assert.equal(r.shortened, 1);
  const tooLong = fitConversation([u("q"), a("x"), u("0123456789A")], limits);
  assert.deepEqual([tooLong.fits, tooLong.reason], [false, "message_too_long"]);
});

test("when even the last message alone is too big, it says so instead of sending", () => {
  const r = fitConversation([s("sys"), u("old"), a("answer"), u("x".repeat(100))], { ...DEFAULT_LIMITS, maxBodyBytes: 80 });
  assert.deepEqual([r.fits, r.reason, r.messages], [false, "body_too_large", [s("sys"), u("x".repeat(100))]]);
  const many = fitConversation([s("1"), s("2"), u("x")], { ...DEFAULT_LIMITS, maxMessages: 2 });
  assert.deepEqual([many.fits, many.reason], [false, "too_many_messages"]);
});

test("a conversation opening with an answer, and runs of unanswered questions, trim cleanly", () => {
  const r = fitConversation([a("greeting"), u("q1"), u("q2"), a("a2"), u("q3")], { ...DEFAULT_LIMITS, maxMessages: 3 });
  assert.deepEqual(r.messages, [u("q2"), a("a2"), u("q3")]);
});

const API_CODES = [
  "invalid_json", "invalid_field", "unknown_field", "unknown_model", "too_many_messages", "message_too_long",
  "origin_not_allowed", "not_found", "method_not_allowed", "body_too_large", "unsupported_media_type",
  "server_misconfigured", "upstream_error", "upstream_timeout", "upstream_incomplete", "internal_error",
  "ai_unavailable", "upstream_busy", "upstream_quota_exceeded", "context_length_exceeded",
  "upstream_rejected_input", "model_unavailable", "rate_limited", "unauthorized",
  "turn_in_progress", "conversation_too_large",   // a durable conversation's (durable-chats.js)
];
const CLIENT_CODES = ["network_error", "connection_lost", "http_error", "too_many_images"];

test("every error code has plain words: no code names, field paths or developer jargon", () => {
  for (const code of [...API_CODES, ...CLIENT_CODES]) {
    assert.ok(ERRORS[code], `no words for ${code}`);
    const { text } = describeError({ code, status: 400, retryAfter: 30 });
    assert.match(text, /^[A-Z].*\.$/, `${code}: ${text}`);
    assert.doesNotMatch(text, /[_{}[\]]|\bnull\b|undefined|NaN/, `${code}: ${text}`);
  }
  assert.deepEqual(Object.keys(ERRORS).sort(), [...API_CODES, ...CLIENT_CODES].sort());
});

test("429s say when to try again, from Retry-After", () => {
  assert.equal(describeError({ code: "rate_limited", status: 429, retryAfter: 17 }).text,
    "You are sending messages faster than the service allows. Try again in 17 seconds.");
  assert.equal(describeError({ code: "upstream_busy", status: 429, retryAfter: null }).text,
    "The AI model is busy right now. Try again in a little while.");
  assert.equal(describeError({ code: "upstream_quota_exceeded", status: 429, retryAfter: 7200 }).text,
    "Today's AI allowance for this service is used up. Try again in about 2 hours.");
  assert.deepEqual([0, 1, 45, 89, 90, 600, 5400].map(retryWhen),
    ["in a second", "in a second", "in 45 seconds", "in 89 seconds", "in about 2 minutes", "in about 10 minutes", "in about 2 hours"]);
});

test("what the page does after each error", () => {
  const act = (code) => { const d = describeError({ code }); return [d.retry, d.rejected, d.shrink]; };
  assert.deepEqual(act("message_too_long"), [false, true, false]);
  assert.deepEqual(act("upstream_rejected_input"), [false, true, false]);
  assert.deepEqual(act("context_length_exceeded"), [true, false, true]);
  assert.deepEqual(act("body_too_large"), [true, false, true]);
  assert.deepEqual(act("rate_limited"), [true, false, false]);
  assert.deepEqual(act("unauthorized"), [false, false, false]);
  assert.deepEqual(act("something_new"), [true, false, false]);
  assert.equal(describeError({ code: "message_too_long" }, { ...DEFAULT_LIMITS, maxMessageChars: 8000 }).text,
    "Your message is longer than the service takes (8,000 characters). Shorten it and send it again.");
  assert.equal(describeError({ code: "something_new", status: 418 }).text, "The chat service answered with an error (HTTP 418). Try again.");
  assert.equal(describeError({ code: "ai_unavailable", status: 503 }).text, "The chat is turned off for now. Try again later.");
  // The var its owner has to fix, as the API's message names it (src/base/settings.py).
  assert.equal(
    describeError({ code: "server_misconfigured", status: 500, message: "The service is misconfigured: its owner has to fix the setting AI_DEFAULT_MODEL." }).text,
    "The chat service is not set up correctly, so it cannot answer. Its owner has to fix the setting AI_DEFAULT_MODEL.");
  assert.equal(describeError({ code: "server_misconfigured", status: 500, message: "The service is misconfigured." }).text,
    "The chat service is not set up correctly, so it cannot answer. Its owner has to fix it.");
});

test("thinking time in words", () => {
  assert.deepEqual([0, 999, 1000, 3240, 12600, 65000].map(thoughtFor),
    ["Thought for less than a second", "Thought for less than a second", "Thought for 1.0 seconds", "Thought for 3.2 seconds", "Thought for 13 seconds", "Thought for 1 min 5 s"]);
});

class MemoryStorage {
  constructor(quota = Infinity) { this.map = new Map(); this.quota = quota; }
  getItem(k) { return this.map.has(k) ? this.map.get(k) : null; }
  setItem(k, v) {
    if (v.length > this.quota) throw new DOMException("full", "QuotaExceededError");
    this.map.set(k, String(v));
  }
}

test("chats survive a save and load; unreadable storage starts fresh instead of breaking the page", () => {
  const storage = new MemoryStorage();
  assert.deepEqual(loadState(storage), emptyState());
  const state = loadState(storage);
  const chat = startChat(state, 1000);
  chat.messages.push({ id: "m1", role: "user", content: "hello" }, { id: "m2", role: "assistant", content: "hi", outcome: "complete", thinking: "hmm", thinkingMs: 1200 });
  assert.deepEqual(saveState(storage, state), { dropped: 0, imagesUnsaved: 0 });
  assert.deepEqual(loadState(storage), state);
  for (const raw of ["{", "null", '{"version":2,"chats":[]}', '{"version":1,"chats":"x"}']) {
    storage.map.set(STORAGE_KEY, raw);
    assert.deepEqual(loadState(storage), emptyState(), raw);
  }
  storage.map.set(STORAGE_KEY, JSON.stringify({ version: 1, currentId: "gone", chats: [{ id: "c", messages: [{ id: "x", role: "robot", content: "?" }, { id: "y", role: "user", content: "ok" }] }, { nope: 1 }] }));
  const repaired = loadState(storage);
  assert.equal(repaired.currentId, "c");
  assert.deepEqual(repaired.chats[0].messages, [{ id: "y", role: "user", content: "ok" }]);
  assert.deepEqual(loadState({ getItem() { throw new Error("denied"); } }), emptyState());
});

test("full storage lets go of the oldest other chats, never the current one", () => {
  const state = emptyState();
  for (let i = 0; i < 4; i++) startChat(state, i).messages.push({ id: `m${i}`, role: "user", content: "x".repeat(100) });
  selectChat(state, state.chats[3].id);      // the oldest is current
  // Room for the two newest chats' worth of text, not three.
  const storage = new MemoryStorage(JSON.stringify({ ...state, chats: state.chats.slice(0, 2) }).length);
  assert.deepEqual(saveState(storage, state), { dropped: 2, imagesUnsaved: 0 });
  assert.deepEqual(state.chats.map((c) => c.messages[0].id), ["m3", "m0"]);
  assert.equal(currentChat(state).messages[0].id, "m0");
  assert.deepEqual(saveState(new MemoryStorage(10), state), { dropped: -1, imagesUnsaved: 0 });
});

test("new, select, delete, and the list order", () => {
  const state = emptyState();
  const first = startChat(state, 1);
  assert.equal(startChat(state, 2), first, "an empty current chat is reused");
  first.messages.push({ id: "a", role: "user", content: "first" });
  const second = startChat(state, 3);
  second.messages.push({ id: "b", role: "user", content: "second" });
  assert.deepEqual(state.chats.map((c) => c.id), [second.id, first.id]);
  touchChat(state, first, 4);
  assert.deepEqual(state.chats.map((c) => c.id), [first.id, second.id]);
  selectChat(state, first.id);
  deleteChat(state, first.id);
  assert.equal(state.currentId, second.id);
  deleteChat(state, second.id);
  assert.equal(state.currentId, null);
});

test("chat titles", () => {
  const t = (content) => chatTitle({ messages: content === null ? [] : [{ role: "user", content }] });
  assert.equal(t(null), "New chat");
  assert.equal(t("[[pace:0]] How do I\nsort a list?"), "How do I");
  assert.equal(t("x".repeat(60)), "x".repeat(47) + "…");
  assert.equal(chatTitle({ title: "Named", messages: [] }), "Named");
});

test("what is sent as context: refused messages and failed answers are not", () => {
  const chat = { messages: [
    { id: "1", role: "system", content: "sys" },
    { id: "2", role: "user", content: "x".repeat(9000), rejected: true },
    { id: "3", role: "assistant", content: "", outcome: "failed", error: { code: "message_too_long" } },
    { id: "4", role: "user", content: "short" },
    { id: "5", role: "assistant", content: "par", outcome: "failed" },
    { id: "6", role: "user", content: "again" },
    { id: "7", role: "assistant", content: "whole", outcome: "complete" },
    { id: "8", role: "user", content: "stop it" },
    { id: "9", role: "assistant", content: "half", outcome: "aborted" },
    { id: "10", role: "user", content: "more" },
    { id: "11", role: "assistant", content: "", outcome: "aborted" },
    { id: "12", role: "assistant", content: "cut", outcome: "cut" },
  ] };
  assert.deepEqual(sendableMessages(chat), [s("sys"), u("short"), u("again"), a("whole"), u("stop it"), a("half"), u("more")]);
});

test("edit-and-resend and regenerate cut the chat at the right place", () => {
  const make = () => ({ messages: [
    { id: "1", role: "user", content: "q1" }, { id: "2", role: "assistant", content: "a1", outcome: "complete" },
    { id: "3", role: "user", content: "q2", rejected: true }, { id: "4", role: "assistant", content: "", outcome: "failed" },
  ] });
  const edited = make();
  assert.equal(editMessage(edited, "3", "q2 shorter"), true);
  assert.deepEqual(edited.messages.map((m) => [m.content, m.rejected]), [["q1", undefined], ["a1", undefined], ["q2 shorter", undefined]]);
  assert.equal(editMessage(make(), "2", "not a user message"), false);
  const again = make();
  assert.ok(regenerateFrom(again, "2"));
  assert.deepEqual(again.messages.map((m) => m.id), ["1"]);
  const retried = make();
  assert.deepEqual(regenerateFrom(retried, "4"), {}, "a failed answer with no text is not kept as a version");
  assert.deepEqual(retried.messages.map((m) => [m.id, m.rejected]), [["1", undefined], ["2", undefined], ["3", undefined]]);
});

test("model ids get short names that fit the picker; two that would read the same keep their ids", async () => {
  const { modelLabel, modelLabels } = await import("../../public/chat-core.js");
  const cases = {
    "@cf/google/gemma-4-26b-a4b-it": "Gemma 4 26B",
    "@cf/meta/llama-3.1-8b-instruct-fast": "Llama 3.1 8B fast",
    "@cf/openai/gpt-oss-20b": "gpt-oss 20B",
    "@cf/zai-org/glm-4.7-flash": "GLM 4.7 flash",
    "@cf/moonshotai/kimi-k2.6": "Kimi k2.6",
    "@cf/mistralai/mistral-small-3.1-24b-instruct": "mistral-small 3.1 24B",
    "@cf/meta/llama-4-scout-17b-16e-instruct": "Llama 4 scout 17B 16e",
    "instruct": "Instruct",
  };
  for (const [id, label] of Object.entries(cases)) assert.equal(modelLabel(id), label, id);
  assert.deepEqual([...modelLabels(["@cf/a/foo-7b-it", "@hf/b/foo-7b-instruct", "@cf/google/gemma-4-26b-a4b-it"])], [
    ["@cf/a/foo-7b-it", "foo-7b-it"], ["@hf/b/foo-7b-instruct", "foo-7b-instruct"], ["@cf/google/gemma-4-26b-a4b-it", "Gemma 4 26B"],
  ]);
});

test("settings new chats start with: kept in the browser, copied into each new chat, odd values dropped", async () => {
  const { DEFAULTS_KEY, loadDefaults, saveDefaults, hasSettings } = await import("../../public/chat-core.js");
  const store = new Map();
  const storage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, String(v)) };
  assert.deepEqual(loadDefaults(storage), { system: "", temperature: null, maxTokens: null });
  assert.equal(saveDefaults(storage, { system: "Be brief.", temperature: 0.2, maxTokens: 300, extra: 1 }), true);
  assert.deepEqual(JSON.parse(store.get(DEFAULTS_KEY)), { system: "Be brief.", temperature: 0.2, maxTokens: 300 });
  const defaults = loadDefaults(storage);
  const state = emptyState();
  const chat = startChat(state, 1, defaults);
  assert.deepEqual(chat.settings, defaults);
  assert.notEqual(chat.settings, defaults, "a copy: changing the defaults later leaves the chat as it is");
  assert.equal(startChat(state, 2, { system: "other", temperature: null, maxTokens: null }), chat, "an empty current chat is reused as it is");
  assert.deepEqual(chat.settings.system, "Be brief.");
  chat.messages.push(u("hi"));
  assert.equal(startChat(state, 3, { system: " ", temperature: null, maxTokens: null }).settings, undefined, "nothing set: no settings");
  store.set(DEFAULTS_KEY, JSON.stringify({ system: 3, temperature: 9, maxTokens: 1.5 }));
  assert.deepEqual(loadDefaults(storage), { system: "", temperature: null, maxTokens: null });
  store.set(DEFAULTS_KEY, "{not json");
  assert.deepEqual(loadDefaults(storage), { system: "", temperature: null, maxTokens: null });
  assert.equal(hasSettings({ system: "", temperature: 0, maxTokens: null }), true, "temperature 0 is a setting");
  assert.equal(saveDefaults({ setItem: () => { throw new Error("full"); } }, defaults), false);
});
