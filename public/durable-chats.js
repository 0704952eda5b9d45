// The page's chats as durable conversations (docs/API.md, "Durable conversations"), as pure
// functions with no DOM, so Node tests can check them. The server holds each chat's messages
// and answers; the browser keeps only the list: each chat's conversation id, plus what is the
// browser's own (a name given by hand, the chat's settings, its model).
//
// The server's history only grows. What the page sends next is what it would have sent to the
// stateless API (chat-core.js: the system prompt, the kept versions, the trimming); when the
// server's history is not exactly that (a message was edited, an answer regenerated, a version
// switched, the system prompt changed, old turns trimmed, an answer continued), the chat
// continues in a new conversation started from that history (a fork), and the old one is deleted.
import { IMAGE_DATA_URL, imageBytes, newId, splitFiles } from "./chat-core.js";

export const DURABLE_KEY = "ai-chat:conversations:v1";
export const OWNER_KEY = "ai-chat:owner-token";
const ID = /^[0-9a-f]{32}$/;
const TOKEN = /^[0-9a-f]{32,64}$/;

/** An owner token as typed or pasted (blanks and case forgiven), or null when it is not one. */
export function ownerToken(text) {
  const token = String(text ?? "").trim().toLowerCase();
  return TOKEN.test(token) ? token : null;
}

/**
 * This browser's owner token (docs/API.md, "Owned conversations"): the one saved, else a new
 * one of 128 random bits, saved. It is what the server lists this browser's chats under; the
 * same token on another device lists the same chats.
 */
export function loadOwnerToken(storage, random = globalThis.crypto) {
  let saved = null;
  try { saved = ownerToken(storage.getItem(OWNER_KEY)); } catch { /* no storage: a token for this visit */ }
  if (saved) return saved;
  const bytes = random.getRandomValues(new Uint8Array(16));
  const token = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  try { storage.setItem(OWNER_KEY, token); } catch { /* full: a token for this visit */ }
  return token;
}

/**
 * The entries of the server's list this browser does not know yet, in the server's order
 * (newest first), as entries of the saved list: the chats made on another device.
 */
export function listedEntries(saved, listed) {
  const known = new Set(saved.chats.map((c) => c.conversation));
  return (Array.isArray(listed?.data) ? listed.data : [])
    .filter((c) => typeof c?.id === "string" && ID.test(c.id) && !known.has(c.id) && known.add(c.id))
    .map((c) => ({ conversation: c.id, title: "", model: "" }));
}

/** The saved list: { currentId, chats: [{ conversation, title, settings, model, think }] }, newest first. */
export function loadDurable(storage) {
  let parsed;
  try { parsed = JSON.parse(storage.getItem(DURABLE_KEY) ?? "null"); } catch { parsed = null; }
  if (!parsed || parsed.version !== 1 || !Array.isArray(parsed.chats)) return { currentId: null, chats: [] };
  const seen = new Set();
  const chats = parsed.chats.filter((c) => c && typeof c === "object" && typeof c.conversation === "string" && ID.test(c.conversation)
    && !seen.has(c.conversation) && seen.add(c.conversation)).map((c) => ({
    conversation: c.conversation,
    title: typeof c.title === "string" ? c.title : "",
    model: typeof c.model === "string" ? c.model : "",
    ...(c.settings && typeof c.settings === "object" ? { settings: c.settings } : {}),
    ...(typeof c.think === "boolean" ? { think: c.think } : {}),
  }));
  const currentId = chats.some((c) => c.conversation === parsed.currentId) ? parsed.currentId : null;
  return { currentId, chats };
}

/** Saves the list of the page's chats that have a conversation: ids and the browser's own fields. */
export function saveDurable(storage, state) {
  const current = state.chats.find((c) => c.id === state.currentId);
  const chats = state.chats.filter((c) => c.conversation).map((c) => ({
    conversation: c.conversation, title: c.title ?? "", model: c.model ?? "", ...(c.settings ? { settings: c.settings } : {}),
    ...(typeof c.think === "boolean" ? { think: c.think } : {}),
  }));
  try {
    storage.setItem(DURABLE_KEY, JSON.stringify({ version: 1, currentId: current?.conversation ?? null, chats }));
  } catch { return { dropped: -1, imagesUnsaved: 0 }; }
  return { dropped: 0, imagesUnsaved: 0 };
}

/** A page message from a user message as the server keeps it (text, or parts with images). */
function userMessage(content) {
  const parts = typeof content === "string" ? [{ type: "text", text: content }] : Array.isArray(content) ? content : [];
  const text = parts.filter((p) => p?.type === "text" && typeof p.text === "string").map((p) => p.text).join("");
  const images = parts.filter((p) => p?.type === "image_url" && IMAGE_DATA_URL.test(p.image_url?.url ?? ""))
    .map((p, i) => ({ name: `image ${i + 1}`, type: `image/${IMAGE_DATA_URL.exec(p.image_url.url)[1]}`, bytes: imageBytes(p.image_url.url), url: p.image_url.url }));
  const { content: said, files } = splitFiles(text);   // the files it was sent with (chat-core.js withFiles)
  const message = { id: newId(), role: "user", content: said };
  if (files.length) message.files = files;
  if (images.length) message.images = images;
  return message;
}

/**
 * An answer of the page with what the server kept under it (docs/API.md, "An answer's
 * details"): the model, how it ended, its usage and times. Drawn from these, a finished answer
 * looks the same after a reload, in a second tab and on another device as when it streamed.
 */
export function applyDetails(answer, details) {
  if (!details || typeof details !== "object") return answer;
  const int = (v) => (Number.isInteger(v) && v >= 0 ? v : undefined);
  if (typeof details.model === "string" && details.model) answer.model = details.model;
  if (typeof details.stop_reason === "string") answer.stopReason = details.stop_reason;
  if (details.stop_reason === "cancelled") answer.outcome = "aborted";
  if (details.while_thinking === true) answer.whileThinking = true; else delete answer.whileThinking;
  answer.usage = details.usage && typeof details.usage === "object" ? details.usage : null;
  if (int(details.ms) !== undefined) answer.ms = details.ms;
  if (int(details.at) !== undefined) answer.at = details.at;
  if (int(details.writing_ms) !== undefined) answer.writingMs = details.writing_ms;
  if (answer.thinking && int(details.reasoning_ms) !== undefined) answer.thinkingMs = details.reasoning_ms;
  if (details.error && typeof details.error.code === "string") {
    answer.outcome = "failed";
    answer.error = { code: details.error.code, message: String(details.error.message ?? ""), status: 200, retryAfter: null };
  }
  return answer;
}

/** The details the server keeps for an answer of the page (the inverse of applyDetails). */
export function detailsOf(answer) {
  const out = {};
  if (answer.model) out.model = answer.model;
  if (typeof answer.stopReason === "string") out.stop_reason = answer.stopReason;
  if (answer.whileThinking === true) out.while_thinking = true;
  if (answer.usage && typeof answer.usage === "object") out.usage = answer.usage;
  for (const [from, to] of [["ms", "ms"], ["writingMs", "writing_ms"], ["thinkingMs", "reasoning_ms"], ["at", "at"]]) {
    if (Number.isInteger(answer[from]) && answer[from] >= 0) out[to] = answer[from];
  }
  if (answer.error?.code) out.error = { code: answer.error.code, message: String(answer.error.message ?? "") };
  return Object.keys(out).length ? out : null;
}

/**
 * The `details` of a fork's history (an array beside its messages): each assistant message of
 * `history` gets the details of the page's answer it was made from. The history may have lost
 * its oldest messages (trimmed), so answers are matched from the end.
 */
export function historyDetails(chat, history) {
  const answers = chat.messages.filter((m) => m.role === "assistant" && (m.outcome === "complete" || (m.outcome === "aborted" && m.content !== "")));
  const out = history.map(() => null);
  let a = answers.length - 1;
  for (let i = history.length - 1; i >= 0 && a >= 0; i--) {
    if (history[i].role === "assistant") out[i] = detailsOf(answers[a--]);
  }
  return out.some((d) => d !== null) ? out : null;
}

/**
 * A chat of the page from GET /api/v1/conversations/{id} and its entry in the saved list.
 * A first system message equal to the chat's system prompt is that setting, not a message.
 * `serverMessages`: the history exactly as the server holds it, to tell when a fork is needed.
 */
export function chatFromServer(entry, server) {
  const stored = Array.isArray(server?.messages) ? server.messages : [];
  // What the page would send back has no details: they are shown, not sent (needsFork).
  const serverMessages = stored.map((m) => {
    if (!m || typeof m !== "object" || !("details" in m)) return m;
    const { details, ...rest } = m;
    return rest;
  });
  let shown = stored;
  const system = entry.settings?.system?.trim() ? entry.settings.system : null;
  if (shown[0]?.role === "system" && shown[0].content === system) shown = shown.slice(1);
  const messages = shown.filter((m) => ["system", "user", "assistant"].includes(m?.role)).map((m) => {
    if (m.role === "user") return userMessage(m.content);
    const text = typeof m.content === "string" ? m.content : "";
    if (m.role === "system") return { id: newId(), role: "system", content: text };
    const answer = { id: newId(), role: "assistant", content: text, outcome: "complete" };
    if (typeof m.reasoning === "string" && m.reasoning) answer.thinking = m.reasoning;
    return applyDetails(answer, m.details);
  });
  const now = Date.now();
  return {
    id: newId(), conversation: entry.conversation, title: entry.title ?? "", model: entry.model ?? "",
    ...(entry.settings ? { settings: entry.settings } : {}), ...(typeof entry.think === "boolean" ? { think: entry.think } : {}),
    createdAt: now, updatedAt: now,
    messages: branchesFrom(server) ?? messages, serverMessages,
  };
}

// ---- Branches: the versions a chat keeps (edits, regenerations), kept in its conversation ----
const BRANCHES_BYTES = 900 * 1024;   // under the server's 1 MiB: past it, older images go by name
const hasVersions = (messages) => messages.some((m) => m.alts?.length);

/**
 * What POST /api/v1/conversations/{id}/branches keeps for a chat with versions (null without):
 * the page's messages, every version with them, and the length of the server's history they
 * were kept beside (a history that grew since, in another tab, makes them stale).
 */
export function branchesOf(chat) {
  if (!hasVersions(chat.messages)) return null;
  const out = { version: 1, server_length: chat.serverMessages?.length ?? 0, messages: chat.messages };
  if (JSON.stringify(out).length <= BRANCHES_BYTES) return out;
  const byName = (messages) => messages.map((m) => ({
    ...m, ...(m.images ? { images: m.images.map(({ url, ...rest }) => rest) } : {}), ...(m.alts ? { alts: m.alts.map(byName) } : {}),
  }));
  return { ...out, messages: byName(chat.messages) };
}

const isKept = (m) => m && typeof m === "object" && typeof m.id === "string" && ["system", "user", "assistant"].includes(m.role)
  && typeof m.content === "string" && (m.alts === undefined || (Array.isArray(m.alts) && m.alts.every((t) => Array.isArray(t) && t.every(isKept))));

/** The kept versions of a conversation read back, when they still match its history; else null. */
export function branchesFrom(server) {
  const b = server?.branches;
  const stored = Array.isArray(server?.messages) ? server.messages : [];
  if (!b || b.version !== 1 || b.server_length !== stored.length || !Array.isArray(b.messages) || !b.messages.every(isKept)) return null;
  return b.messages;
}

/** Whether the next message needs a new conversation started from `history` (see the top). */
export function needsFork(chat, history) {
  return !chat.conversation || !Array.isArray(chat.serverMessages) || JSON.stringify(chat.serverMessages) !== JSON.stringify(history);
}

/**
 * The server's history after a turn: what it held, the message, and the answer as it stores
 * one (its text, and its thinking as `reasoning`, when it has either or it finished). null when
 * it cannot be known (the message may or may not have been taken): the next message forks.
 */
export function historyAfter(history, content, result) {
  const status = result.error?.status ?? 200;
  // Refused before it began (any HTTP error: the object keeps a message only once its answer
  // starts); no answer at all (status 0) may or may not have reached it.
  if (result.outcome === "failed" && status !== 200) return status === 0 ? null : history;
  if (result.outcome === "aborted" || result.outcome === "cut") return null;   // it may go on without us
  const out = [...history, { role: "user", content }];
  if (result.text || result.thinking || result.stopReason) {
    out.push(result.thinking ? { role: "assistant", content: result.text, reasoning: result.thinking } : { role: "assistant", content: result.text });
  }
  return out;
}
