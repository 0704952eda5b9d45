// The chat page's decisions, as pure functions with no DOM, so Node tests can check them:
// the service's limits, trimming a conversation to fit them, an error code in plain words,
// and the saved chats. app.js does the drawing; this module decides.

export const DEFAULT_LIMITS = Object.freeze({ maxMessages: 50, maxBodyBytes: 65536, maxMessageChars: 8000 });

const positiveInt = (value, fallback) => (Number.isInteger(value) && value > 0 ? value : fallback);

/** The limits GET /api/v1/models announces; the service's defaults for anything absent or odd. */
export function limitsFrom(models) {
  const limits = models && typeof models === "object" ? models.limits : undefined;
  const get = (key) => (limits && typeof limits === "object" ? limits[key] : undefined);
  return {
    maxMessages: positiveInt(get("max_messages"), DEFAULT_LIMITS.maxMessages),
    maxBodyBytes: positiveInt(get("max_body_bytes"), DEFAULT_LIMITS.maxBodyBytes),
    maxMessageChars: positiveInt(get("max_message_chars"), DEFAULT_LIMITS.maxMessageChars),
  };
}

/** The model ids that reason first, from GET /api/v1/models (`reasoning`), else none. */
export function reasoningFrom(models) {
  const list = models && Array.isArray(models.reasoning) ? models.reasoning : [];
  return list.filter((id) => typeof id === "string");
}

/** Characters as the service counts them (code points, not UTF-16 units). */
export function countChars(text) {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

const encoder = new TextEncoder();
const utf8Bytes = (text) => encoder.encode(text).length;

/** The first `limit` characters (code points) of text, never half a surrogate pair. */
function firstChars(text, limit) {
  let n = 0, i = 0;
  while (i < text.length && n < limit) {
    const c = text.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < text.length ? 2 : 1;
    n++;
  }
  return text.slice(0, i);
}

/**
 * The conversation to send so that the request fits the service's limits.
 *
 * The body sent is exactly `JSON.stringify({ messages, ...extra })`. System messages are
 * always kept and the last message (the one being answered) is never dropped or cut; the
 * oldest turns go first, a whole turn at a time so what is sent never opens with an answer.
 * An earlier message over the character limit (a long answer) is cut to the limit.
 * `budgetBytes` lowers the byte limit (after the model said the conversation was too long).
 *
 * Returns { messages, dropped, shortened, fits, reason }: `fits` false with `reason`
 * "message_too_long" or "body_too_large" when even the last message alone cannot be sent.
 */
export function fitConversation(messages, limits, { extra = {}, budgetBytes = Infinity } = {}) {
  const { maxMessages, maxBodyBytes, maxMessageChars } = limits;
  const out = { messages: [], dropped: 0, shortened: 0, fits: true, reason: null };
  if (messages.length === 0) return out;
  const last = messages[messages.length - 1];
  if (countChars(last.content) > maxMessageChars) return { ...out, messages: messages.slice(), fits: false, reason: "message_too_long" };

  const kept = messages.map((m, i) => {
    if (i === messages.length - 1 || countChars(m.content) <= maxMessageChars) return { role: m.role, content: m.content };
    out.shortened++;
    return { role: m.role, content: firstChars(m.content, maxMessageChars) };
  });
  // Byte size without re-serialising per drop: '{"messages":[' + m1 + "," + m2 + ... + "]" + rest.
  const sizes = kept.map((m) => utf8Bytes(JSON.stringify(m)));
  const base = utf8Bytes(JSON.stringify({ messages: [], ...extra }));
  const budget = Math.min(maxBodyBytes, budgetBytes);
  const alive = kept.map(() => true);
  let count = kept.length;
  let bytes = base + sizes.reduce((a, b) => a + b, 0) + Math.max(0, count - 1);
  const fits = () => count <= maxMessages && bytes <= budget;
  const drop = (i) => { alive[i] = false; count--; bytes -= sizes[i] + (count > 0 ? 1 : 0); out.dropped++; };

  let cursor = 0;
  const lastIndex = kept.length - 1;
  while (!fits()) {
    while (cursor < lastIndex && (!alive[cursor] || kept[cursor].role === "system")) cursor++;
    if (cursor >= lastIndex) break;              // only system messages and the last one are left
    drop(cursor);
    // Whatever answered the dropped message goes with it: the rest opens with a user turn.
    for (let j = cursor + 1; j < lastIndex && kept[j].role === "assistant"; j++) if (alive[j]) drop(j);
  }
  out.messages = kept.filter((_, i) => alive[i]);
  if (!fits()) { out.fits = false; out.reason = count > maxMessages ? "too_many_messages" : "body_too_large"; }
  return out;
}

// Every error code the API sends, and the client's own, in words a chat user understands.
// retry: offering "Retry" can help as the conversation stands.
// rejected: the service refused the request itself; the user's message is not sent again.
// shrink: the conversation was too big for the service: send less of it next time.
export const ERRORS = Object.freeze({
  invalid_json: { text: "The page sent something the service could not read. Reload the page and try again.", rejected: true },
  invalid_field: { text: "The service would not take this message as it is. Edit it and send it again.", rejected: true },
  unknown_field: { text: "This page is out of date with the service. Reload the page and try again.", rejected: true },
  unknown_model: { text: "That model is not offered any more. Choose another model and try again.", rejected: true },
  too_many_messages: { text: "The conversation has more messages than the service takes. The oldest ones will be left out when you try again.", retry: true, shrink: true },
  message_too_long: { text: "Your message is longer than the service takes ({maxMessageChars} characters). Shorten it and send it again.", rejected: true },
  origin_not_allowed: { text: "The service does not accept messages from this page's address." },
  not_found: { text: "The chat service was not found at this address." },
  method_not_allowed: { text: "This page is out of date with the service. Reload the page and try again." },
  body_too_large: { text: "The conversation is too large to send. The oldest messages will be left out when you try again.", retry: true, shrink: true },
  unsupported_media_type: { text: "This page is out of date with the service. Reload the page and try again." },
  server_misconfigured: { text: "The chat service is not set up correctly, so it cannot answer. Its owner has to fix it." },
  upstream_error: { text: "The AI model could not answer this time. Try again.", retry: true },
  upstream_timeout: { text: "The AI model stopped answering partway. Try again.", retry: true },
  upstream_incomplete: { text: "The AI model's answer broke off before the end. Try again.", retry: true },
  internal_error: { text: "Something went wrong in the chat service. Try again.", retry: true },
  ai_unavailable: { text: "The chat is turned off for now. Try again later.", retry: true },
  upstream_busy: { text: "The AI model is busy right now. Try again {after}.", retry: true },
  upstream_quota_exceeded: { text: "Today's AI allowance for this service is used up. Try again {after}.", retry: true },
  context_length_exceeded: { text: "The conversation is too long for this model to read. Older messages will be left out when you try again; or start a new chat.", retry: true, shrink: true },
  upstream_rejected_input: { text: "The AI model would not take this message. Rephrase it and send it again.", rejected: true },
  model_unavailable: { text: "This model is not available right now. Choose another model and try again.", retry: true },
  rate_limited: { text: "You are sending messages faster than the service allows. Try again {after}.", retry: true },
  unauthorized: { text: "This chat service needs a key that this page does not have. Ask its owner for access." },
  network_error: { text: "The chat service could not be reached. Check your connection and try again.", retry: true },
  connection_lost: { text: "The connection broke before the answer was complete. Try again.", retry: true },
  http_error: { text: "The chat service answered with an error{status}. Try again.", retry: true },
});

/** "in 5 seconds", "in about 2 minutes", or "in a little while" when the service did not say. */
export function retryWhen(seconds) {
  if (!Number.isFinite(seconds) || seconds === null) return "in a little while";
  if (seconds <= 1) return "in a second";
  if (seconds < 90) return `in ${Math.ceil(seconds)} seconds`;
  if (seconds < 90 * 60) return `in about ${Math.round(seconds / 60)} minutes`;
  return `in about ${Math.round(seconds / 3600)} hours`;
}

/** An error ({code, status, retryAfter}) as the page shows it, with what the page should do. */
export function describeError(error, limits = DEFAULT_LIMITS) {
  const entry = ERRORS[error?.code] ?? ERRORS.http_error;
  const text = entry.text
    .replace("{after}", retryWhen(error?.retryAfter ?? null))
    .replace("{maxMessageChars}", limits.maxMessageChars.toLocaleString("en-US"))
    .replace("{status}", error?.status ? ` (HTTP ${error.status})` : "");
  return { text, retry: entry.retry === true, rejected: entry.rejected === true, shrink: entry.shrink === true };
}

/** How long the model thought, in words. */
export function thoughtFor(ms) {
  if (!(ms >= 0)) return "Thought";
  if (ms < 1000) return "Thought for less than a second";
  const s = ms / 1000;
  if (s < 60) return `Thought for ${s < 10 ? s.toFixed(1) : Math.round(s)} seconds`;
  const m = Math.floor(s / 60);
  return `Thought for ${m} min ${Math.round(s - m * 60)} s`;
}

// ---- Saved chats ---------------------------------------------------------------------------
// One localStorage key holds every chat: { version, currentId, chats: [{ id, title,
// createdAt, updatedAt, model, budgetBytes, messages: [...] }] }, newest first. A message is
// { id, role, content } plus, for answers, outcome / thinking / thinkingMs / stopReason /
// whileThinking / error, and for a refused user message, rejected: true.

export const STORAGE_KEY = "ai-chat:v1";

export function emptyState() {
  return { version: 1, currentId: null, chats: [] };
}

let counter = 0;
/** An id unique in this browser (randomUUID needs a secure context; a LAN address is not one). */
export function newId(now = Date.now()) {
  counter = (counter + 1) % 1296;
  return now.toString(36) + counter.toString(36).padStart(2, "0") + Math.random().toString(36).slice(2, 8);
}

const isMessage = (m) => m && typeof m === "object" && typeof m.id === "string"
  && ["system", "user", "assistant"].includes(m.role) && typeof m.content === "string";
const isChat = (c) => c && typeof c === "object" && typeof c.id === "string" && Array.isArray(c.messages);

/** The saved state, or a fresh one if nothing is saved or what is saved is unreadable. */
export function loadState(storage) {
  let raw;
  try { raw = storage.getItem(STORAGE_KEY); } catch { return emptyState(); }
  if (!raw) return emptyState();
  let parsed;
  try { parsed = JSON.parse(raw); } catch { return emptyState(); }
  if (!parsed || parsed.version !== 1 || !Array.isArray(parsed.chats)) return emptyState();
  const chats = parsed.chats.filter(isChat).map((c) => ({ ...c, messages: c.messages.filter(isMessage) }));
  const currentId = chats.some((c) => c.id === parsed.currentId) ? parsed.currentId : (chats[0]?.id ?? null);
  return { version: 1, currentId, chats };
}

/**
 * Saves the state. When the browser's storage is full, the oldest chats other than the
 * current one are let go until it fits. Returns how many were let go (0 normally), or -1
 * when even the current chat alone does not fit (it stays in memory for this visit).
 */
export function saveState(storage, state) {
  let dropped = 0;
  for (;;) {
    try {
      storage.setItem(STORAGE_KEY, JSON.stringify(state));
      return dropped;
    } catch {
      const victim = [...state.chats].reverse().find((c) => c.id !== state.currentId);
      if (!victim) return -1;
      state.chats = state.chats.filter((c) => c !== victim);
      dropped++;
    }
  }
}

export function currentChat(state) {
  return state.chats.find((c) => c.id === state.currentId) ?? null;
}

/** A new empty chat, first in the list and current. An empty current chat is reused. */
export function startChat(state, now = Date.now()) {
  const current = currentChat(state);
  if (current && current.messages.length === 0) return current;
  const chat = { id: newId(now), title: "", createdAt: now, updatedAt: now, model: "", messages: [] };
  state.chats.unshift(chat);
  state.currentId = chat.id;
  return chat;
}

export function deleteChat(state, id) {
  state.chats = state.chats.filter((c) => c.id !== id);
  if (state.currentId === id) state.currentId = state.chats[0]?.id ?? null;
}

export function selectChat(state, id) {
  if (state.chats.some((c) => c.id === id)) state.currentId = id;
}

/** The chat's name in the list: the start of its first message. */
export function chatTitle(chat) {
  if (chat.title) return chat.title;
  const first = chat.messages.find((m) => m.role === "user");
  if (!first) return "New chat";
  const line = first.content.replace(/\[\[\w+:[\w.-]+\]\]/g, "").trim().split("\n")[0].trim() || first.content.trim();
  return line.length > 48 ? line.slice(0, 47).trimEnd() + "…" : line || "New chat";
}

/** Moves a chat to the top of the list (it was just used). */
export function touchChat(state, chat, now = Date.now()) {
  chat.updatedAt = now;
  state.chats = [chat, ...state.chats.filter((c) => c !== chat)];
}

/**
 * What of a chat is sent as context: every system and user message except refused ones,
 * and the answers that arrived (complete, or stopped by the user with some text). Failed and
 * cut answers stay on screen only.
 */
export function sendableMessages(chat) {
  return chat.messages.filter((m) => {
    if (m.role === "assistant") return m.outcome === "complete" || (m.outcome === "aborted" && m.content !== "");
    return !m.rejected;
  }).map((m) => ({ role: m.role, content: m.content }));
}

/** Edit-and-resend: the user message gets new text and everything after it goes. */
export function editMessage(chat, id, content) {
  const at = chat.messages.findIndex((m) => m.id === id && m.role === "user");
  if (at < 0) return false;
  chat.messages = chat.messages.slice(0, at + 1);
  chat.messages[at] = { id: chat.messages[at].id, role: "user", content };
  return true;
}

/** Regenerate: the answer and everything after it go; the question before it is asked again. */
export function regenerateFrom(chat, id) {
  const at = chat.messages.findIndex((m) => m.id === id && m.role === "assistant");
  if (at < 0) return false;
  chat.messages = chat.messages.slice(0, at);
  const question = chat.messages.findLast((m) => m.role === "user");
  if (question) delete question.rejected;
  return true;
}
