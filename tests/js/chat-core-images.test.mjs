// Issue 21's request shapes, as the page builds them: images as image_url parts for a model
// that takes them, an answer's reasoning sent back, images counted by the trimming, the
// capabilities and limits of GET /api/v1/models, and saving when images fill the storage.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  DEFAULT_LIMITS, capabilitiesFrom, checkImages, fitConversation, imageBytes, loadState, saveState, sendableMessages,
  settingsBody, startChat, emptyState, STORAGE_KEY, textOf,
} from "../../public/chat-core.js";

const png = (bytes) => `data:image/png;base64,${Buffer.alloc(bytes, 7).toString("base64")}`;
const bytesOf = (body) => new TextEncoder().encode(JSON.stringify(body)).length;
const LIMITS = { ...DEFAULT_LIMITS, maxMessages: 200, maxMessageChars: 1000000, maxBodyBytes: 8388608, maxImages: 4, maxImageBytes: 5242880 };

test("capabilities per model, and null from a service that announces none", () => {
  const json = { capabilities: {
    "@cf/google/gemma-4-26b-a4b-it": { context_window: 256000, vision: true, tools: true, reasoning: false },
    "@cf/openai/gpt-oss-20b": { context_window: null, vision: false, tools: true, reasoning: true },
    "@cf/odd": "nonsense",
  } };
  assert.deepEqual(capabilitiesFrom(json), {
    "@cf/google/gemma-4-26b-a4b-it": { contextWindow: 256000, vision: true, tools: true, reasoning: false },
    "@cf/openai/gpt-oss-20b": { contextWindow: null, vision: false, tools: true, reasoning: true },
  });
  for (const old of [{ models: ["x"] }, { capabilities: [] }, { capabilities: null }, null]) assert.equal(capabilitiesFrom(old), null);
});

test("an image's decoded size from its data: URL; only png/jpeg/gif/webp base64 count as images", () => {
  for (const n of [0, 1, 2, 3, 4, 1000, 1001]) assert.equal(imageBytes(png(n)), n, `${n} bytes`);
  assert.equal(imageBytes("data:image/jpeg;base64,/9j/"), 3);
  for (const bad of ["data:image/svg+xml;base64,PHN2Zz4=", "data:text/html;base64,PGI+", "javascript:alert(1)",
    "data:image/png,rawtext", "https://example.com/a.png", 'data:image/png;base64,AAAA"onerror=x', "data:image/png;base64,AA AA", 42]) {
    assert.equal(imageBytes(bad), -1, String(bad));
  }
});

test("images are checked against the limits before sending, in words", () => {
  const one = { name: "cat.png", url: png(100) };
  assert.equal(checkImages([one], LIMITS), null);
  assert.equal(checkImages([{ name: "big.png", url: png(6 * 1048576) }], LIMITS),
    "“big.png” is 6 MB; the service takes images up to 5 MB. Use a smaller image.");
  assert.equal(checkImages([one, one, one, one, one], LIMITS), "A message can carry at most 4 images; this one has 5. Remove some.");
  assert.equal(checkImages([{ name: "x.svg", url: "data:image/svg+xml;base64,PHN2Zz4=" }], LIMITS), "“x.svg” is not a PNG, JPEG, GIF or WebP image.");
  assert.equal(checkImages([one], DEFAULT_LIMITS), "The service takes no images.", "an older service names no image limit");
});

test("images go as image_url parts, thinking goes back as reasoning, only when asked", () => {
  const chat = { settings: { system: "Be brief." }, messages: [
    { id: "1", role: "user", content: "What is this?", images: [{ name: "a.png", url: png(3) }, { name: "gone.png", unsaved: true }] },
    { id: "2", role: "assistant", content: "A square.", outcome: "complete", thinking: "It has four sides." },
    { id: "3", role: "user", content: "", images: [{ name: "b.png", url: png(6) }] },
  ] };
  assert.deepEqual(sendableMessages(chat, { images: true, reasoning: true }), [
    { role: "system", content: "Be brief." },
    { role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: png(3) } }] },
    { role: "assistant", content: "A square.", reasoning: "It has four sides." },
    { role: "user", content: [{ type: "image_url", image_url: { url: png(6) } }] },
  ]);
  // An older service, or a text-only model: plain strings, no reasoning field.
  assert.deepEqual(sendableMessages(chat), [
    { role: "system", content: "Be brief." }, { role: "user", content: "What is this?" },
    { role: "assistant", content: "A square." }, { role: "user", content: "" },
  ]);
});

test("trimming counts images: older messages lose their images first, oldest first, text kept", () => {
  const img = (n) => ({ type: "image_url", image_url: { url: png(n) } });
  const u = (text, ...images) => ({ role: "user", content: images.length ? [{ type: "text", text }, ...images] : text });
  const a = (content) => ({ role: "assistant", content });
  const messages = [u("one", img(10), img(11)), a("A1"), u("two", img(12)), a("A2"), u("three", img(13), img(14))];
  const byCount = fitConversation(messages, { ...LIMITS, maxImages: 3 });
  assert.deepEqual(byCount.messages, [u("one"), a("A1"), u("two", img(12)), a("A2"), u("three", img(13), img(14))]);
  assert.deepEqual([byCount.imagesDropped, byCount.dropped, byCount.fits], [2, 0, true]);
  // By bytes: a body just too small for every image sheds the oldest one, no turn.
  const whole = bytesOf({ messages });
  const byBytes = fitConversation(messages, { ...LIMITS, maxBodyBytes: whole - 1 });
  assert.deepEqual(byBytes.messages[0], u("one", img(11)));
  assert.deepEqual([byBytes.imagesDropped, byBytes.dropped, byBytes.fits], [1, 0, true]);
  assert.ok(bytesOf({ messages: byBytes.messages }) <= whole - 1);
  // The last message's own images are never dropped: too many of them is refused.
  const tooMany = fitConversation([u("x", img(1), img(2))], { ...LIMITS, maxImages: 1 });
  assert.deepEqual([tooMany.fits, tooMany.reason], [false, "too_many_images"]);
  // Characters are counted on the text parts only.
  assert.equal(textOf(u("hello", img(100000))), "hello");
  assert.equal(fitConversation([u("hello", img(100000))], { ...LIMITS, maxMessageChars: 5 }).fits, true);
});

class MemoryStorage {
  constructor(quota = Infinity) { this.map = new Map(); this.quota = quota; }
  getItem(k) { return this.map.has(k) ? this.map.get(k) : null; }
  setItem(k, v) { if (v.length > this.quota) throw new DOMException("full", "QuotaExceededError"); this.map.set(k, String(v)); }
}

test("full storage: images are saved by name only and stay in memory; the chats stay", () => {
  const state = emptyState();
  startChat(state, 1).messages.push({ id: "old", role: "user", content: "older chat" });
  const chat = startChat(state, 2);
  chat.messages.push({ id: "m", role: "user", content: "look", images: [{ name: "big.png", type: "image/png", bytes: 30000, url: png(30000) }] });
  const storage = new MemoryStorage(20000);
  assert.deepEqual(saveState(storage, state), { dropped: 0, imagesUnsaved: 1 });
  assert.equal(state.chats.length, 2, "no chat was let go for an image");
  assert.equal(chat.messages[0].images[0].url, png(30000), "the image stays in memory");
  const loaded = loadState(storage);
  assert.deepEqual(loaded.chats[0].messages[0].images, [{ name: "big.png", type: "image/png", bytes: 30000, unsaved: true }]);
  // A saved image URL of any other shape is dropped on load, never drawn.
  storage.map.set(STORAGE_KEY, JSON.stringify({ version: 1, currentId: "c", chats: [{ id: "c", messages: [
    { id: "x", role: "user", content: "hi", images: [{ name: "evil", url: "javascript:alert(1)" }, { name: "ok", url: png(2) }] }] }] }));
  assert.deepEqual(loadState(storage).chats[0].messages[0].images, [{ name: "ok", url: png(2) }]);
});

test("settings add temperature and max_tokens, the latter bounded by the service's limit", () => {
  const limits = { ...LIMITS, maxTokensLimit: 4096 };
  assert.deepEqual(settingsBody({}, limits), {});
  assert.deepEqual(settingsBody({ settings: { temperature: 0.2, maxTokens: 512 } }, limits), { temperature: 0.2, max_tokens: 512 });
  assert.deepEqual(settingsBody({ settings: { temperature: 9, maxTokens: 100000 } }, limits), { max_tokens: 4096 });
  assert.deepEqual(settingsBody({ settings: { temperature: null, maxTokens: 1.5 } }, limits), {});
});
