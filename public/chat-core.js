// The chat page's decisions, as pure functions with no DOM, so Node tests can check them:
// the service's limits, trimming a conversation to fit them, an error code in plain words,
// and the saved chats. app.js does the drawing; this module decides.

export const DEFAULT_LIMITS = Object.freeze({
  maxMessages: 50, maxBodyBytes: 65536, maxMessageChars: 8000, maxImages: 0, maxImageBytes: 0, maxTokensLimit: null, defaultMaxTokens: null,
});

const positiveInt = (value, fallback) => (Number.isInteger(value) && value > 0 ? value : fallback);
const countInt = (value, fallback) => (Number.isInteger(value) && value >= 0 ? value : fallback);

/**
 * The limits GET /api/v1/models announces; the service's defaults for anything absent or odd.
 * An older service names no image limits (no images then) and no max_tokens bounds (null).
 */
export function limitsFrom(models) {
  const limits = models && typeof models === "object" ? models.limits : undefined;
  const get = (key) => (limits && typeof limits === "object" ? limits[key] : undefined);
  return {
    maxMessages: positiveInt(get("max_messages"), DEFAULT_LIMITS.maxMessages),
    maxBodyBytes: positiveInt(get("max_body_bytes"), DEFAULT_LIMITS.maxBodyBytes),
    maxMessageChars: positiveInt(get("max_message_chars"), DEFAULT_LIMITS.maxMessageChars),
    maxImages: countInt(get("max_images"), DEFAULT_LIMITS.maxImages),
    maxImageBytes: countInt(get("max_image_bytes"), DEFAULT_LIMITS.maxImageBytes),
    maxTokensLimit: positiveInt(get("max_tokens_limit"), DEFAULT_LIMITS.maxTokensLimit),
    defaultMaxTokens: positiveInt(get("default_max_tokens"), DEFAULT_LIMITS.defaultMaxTokens),
  };
}

/**
 * Each model's capabilities from GET /api/v1/models, { id: { contextWindow, vision, tools,
 * reasoning } }, or null from a service that does not announce them: such a service takes
 * neither images nor an answer's reasoning sent back, so the page sends neither.
 */
export function capabilitiesFrom(models) {
  const caps = models && typeof models === "object" ? models.capabilities : undefined;
  if (!caps || typeof caps !== "object" || Array.isArray(caps)) return null;
  const out = {};
  for (const [id, c] of Object.entries(caps)) {
    if (!c || typeof c !== "object") continue;
    out[id] = { contextWindow: positiveInt(c.context_window, null), vision: c.vision === true, tools: c.tools === true, reasoning: c.reasoning === true };
  }
  return out;
}

/** The model ids that reason first, from GET /api/v1/models (`reasoning`), else none. */
export function reasoningFrom(models) {
  const list = models && Array.isArray(models.reasoning) ? models.reasoning : [];
  return list.filter((id) => typeof id === "string");
}

// ---- Thinking ------------------------------------------------------------------------------
// GET /api/v1/models gives each model's `reasoning_control` (src/base/thinking.py): how its
// thinking is controlled and whether it can be turned off. The Think toggle sends
// `reasoning_effort` "medium" when on and "none" when off; the service turns that into what the
// model takes (`chat_template_kwargs.enable_thinking`, or its own lowest level where it cannot
// stop thinking). Until a person chooses, the toggle starts as the service's AI_THINKING says
// (`thinking`: "off", the default, or "auto", each model's own default: thinking).

/** The models with a Think toggle, from GET /api/v1/models: { [id]: { kind, canTurnOff, levels } }. */
export function thinkControlsFrom(models) {
  const caps = models && typeof models === "object" && models.capabilities && typeof models.capabilities === "object" ? models.capabilities : {};
  const ids = new Set(reasoningFrom(models));
  for (const [id, c] of Object.entries(caps)) if (c?.reasoning === true || (c?.reasoning_control?.kind ?? "none") !== "none") ids.add(id);
  const out = {};
  for (const id of ids) {
    const said = caps[id]?.reasoning_control;
    const control = said && typeof said === "object" ? said : {};
    const kind = ["switch", "effort", "fixed", "unknown"].includes(control.kind) ? control.kind : control.kind === "none" ? null : "unknown";
    if (!kind) continue;
    const levels = Array.isArray(control.levels) ? control.levels.filter((l) => typeof l === "string") : [];
    out[id] = { kind, canTurnOff: control.can_turn_off === true, levels };
  }
  return out;
}

export const THINK_EFFORT = "medium";

/** The request's reasoning field for a Think choice: none for a model that takes no control. */
export function thinkBody(on, control) {
  if (!control || control.kind === "fixed") return {};
  return { reasoning_effort: on ? THINK_EFFORT : "none" };
}

/** What the toggle says of a model whose thinking it cannot fully turn off ("" when it can). */
export function thinkNote(control, name) {
  if (!control || control.canTurnOff) return "";
  if (control.kind === "fixed") return `${name} always thinks: it takes no setting.`;
  if (control.kind === "unknown") return `${name} may think with Think off: how to turn its thinking off is not known.`;
  const lowest = control.levels[0];
  return `${name} always thinks: off asks for its least${lowest ? ` (${lowest})` : ""}.`;
}

/** Whether Think starts on where no choice was made: the service's AI_THINKING is "auto". */
export function thinkDefaultFrom(models) {
  return models?.thinking === "auto";
}

/** A chat's Think choice: its own once it has one, else the last one made in this browser. */
export function thinkOf(chat, last) {
  return typeof chat?.think === "boolean" ? chat.think : last === true;
}

export const THINK_KEY = "ai-chat:think:v1";

/** The last Think choice made in this browser: true, false, or null when none was made. */
export function loadThink(storage) {
  let saved = null;
  try { saved = storage.getItem(THINK_KEY); } catch { /* unreadable: as if none was made */ }
  return saved === "on" ? true : saved === "off" ? false : null;
}

export function saveThink(storage, on) {
  try { storage.setItem(THINK_KEY, on ? "on" : "off"); } catch { /* full: it lasts for this visit */ }
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

// ---- Images ---------------------------------------------------------------------------------
// A user message may carry images: [{ name, type, bytes, url }], `url` a data: URL. Only these
// four types, base64, are ever drawn or sent: the one shape of URL an <img> may get from here.
export const IMAGE_DATA_URL = /^data:image\/(png|jpeg|gif|webp);base64,([A-Za-z0-9+/]*={0,2})$/;
export const IMAGE_TYPES = Object.freeze(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** The decoded size of a data: URL of an image, or -1 when it is not one the page takes. */
export function imageBytes(url) {
  const m = typeof url === "string" ? IMAGE_DATA_URL.exec(url) : null;
  if (!m) return -1;
  const b64 = m[2];
  const pad = b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0;
  return Math.floor((b64.length * 3) / 4) - pad;
}

const megabytes = (n) => `${(n / 1048576).toLocaleString("en-US", { maximumFractionDigits: n < 10485760 ? 1 : 0 })} MB`;

/**
 * Why these images cannot go with one message, in words, or null when they can: the type,
 * each image's decoded size against max_image_bytes, their number against max_images.
 */
export function checkImages(images, limits) {
  for (const image of images) {
    const size = imageBytes(image.url);
    if (size < 0) return `“${image.name}” is not a PNG, JPEG, GIF or WebP image.`;
    if (limits.maxImageBytes > 0 && size > limits.maxImageBytes) {
      return `“${image.name}” is ${megabytes(size)}; the service takes images up to ${megabytes(limits.maxImageBytes)}. Use a smaller image.`;
    }
  }
  if (images.length > limits.maxImages) {
    return limits.maxImages === 0 ? "The service takes no images."
      : `A message can carry at most ${limits.maxImages} ${limits.maxImages === 1 ? "image" : "images"}; this one has ${images.length}. Remove some.`;
  }
  return null;
}

// ---- Files of text ----------------------------------------------------------------------------
// A user message may carry files of text (text, Markdown, code, CSV, JSON): [{ name, type, bytes,
// text }], read in the browser. The model receives each before the message's text, as
// <file name="...">text</file>: its name and its text. That is also how the server keeps it, and
// how a message read back from a durable conversation gets its files again (splitFiles).
export const TEXT_FILE_BYTES = 512 * 1024;   // one file; and the message as a whole fits max_message_chars
const TEXT_TYPES = /^(text\/|application\/(json|x-ndjson|xml|javascript|x-javascript|typescript|x-sh|x-python|sql|toml|yaml|x-yaml|csv))/;
const TEXT_NAMES = /\.(txt|text|md|markdown|mdx|rst|csv|tsv|json|jsonl|ndjson|xml|html?|css|scss|js|mjs|cjs|ts|tsx|jsx|py|pyi|rb|go|rs|java|kt|scala|swift|c|h|cc|cpp|hpp|cs|php|pl|lua|r|sh|bash|zsh|fish|ps1|sql|ya?ml|toml|ini|cfg|conf|env|log|tex|vue|svelte|dart|ex|exs|erl|hs|ml|clj|el|vim|diff|patch|gitignore|dockerfile|makefile)$/i;

/** Whether a file of this name and type is one the page reads as text. */
export function isTextFile(name, type) {
  return TEXT_TYPES.test(type ?? "") || TEXT_NAMES.test(name ?? "") || /^(Dockerfile|Makefile|README|LICENSE)$/i.test(name ?? "");
}

/** Why this file of text cannot go with a message, in words, or null. */
export function checkTextFile(file) {
  if (file.bytes > TEXT_FILE_BYTES) return `“${file.name}” is ${megabytes(file.bytes)}; a file of text can be up to ${TEXT_FILE_BYTES / 1024} KB. Attach a part of it.`;
  if (file.text.includes("\u0000")) return `“${file.name}” is not text (it holds binary data): attach text, Markdown, code, CSV or JSON, or an image.`;
  return null;
}

const fileName = (name) => String(name).replace(/["\n\r<>]/g, "_");
/** The text the model receives for a message with files: each file by name, then the message. */
export function withFiles(content, files) {
  if (!files?.length) return content;
  const blocks = files.map((f) => `<file name="${fileName(f.name)}">\n${f.text}\n</file>`);
  return [...blocks, ...(content ? [content] : [])].join("\n\n");
}

const FILE_BLOCK = /^<file name="([^"\n<>]*)">\n([\s\S]*?)\n<\/file>(?:\n\n|$)/;
/** withFiles undone: { content, files } of a message's text as sent. */
export function splitFiles(text) {
  const files = [];
  let rest = text;
  for (let m = FILE_BLOCK.exec(rest); m; m = FILE_BLOCK.exec(rest)) {
    files.push({ name: m[1], type: "text/plain", bytes: utf8Bytes(m[2]), text: m[2] });
    rest = rest.slice(m[0].length);
  }
  return { content: rest, files };
}

/** The text of a message as sent: its string content, or its text parts joined. */
export function textOf(message) {
  if (typeof message.content === "string") return message.content;
  return message.content.filter((p) => p.type === "text").map((p) => p.text).join("");
}

const imagePartsOf = (message) => (typeof message.content === "string" ? [] : message.content.filter((p) => p.type === "image_url"));

/** The message without its first image; back to a plain string when no image is left. */
function withoutFirstImage(message) {
  const parts = message.content.slice();
  parts.splice(parts.findIndex((p) => p.type === "image_url"), 1);
  return parts.some((p) => p.type === "image_url") ? { ...message, content: parts } : { ...message, content: textOf(message) };
}

function shortened(message, limit) {
  if (typeof message.content === "string") return { ...message, content: firstChars(message.content, limit) };
  let left = limit;
  const content = message.content.map((p) => {
    if (p.type !== "text") return p;
    const text = firstChars(p.text, left);
    left -= countChars(text);
    return { ...p, text };
  });
  return { ...message, content };
}

/**
 * The conversation to send so that the request fits the service's limits.
 *
 * The body sent is exactly `JSON.stringify({ messages, ...extra })`. System messages are
 * always kept and the last message (the one being answered) is never dropped or cut; the
 * oldest turns go first, a whole turn at a time so what is sent never opens with an answer.
 * An earlier message over the character limit (a long answer) is cut to the limit.
 * Images are counted against max_images and weigh what their data: URLs weigh: older
 * messages lose their images (oldest first, the text stays) before any turn is dropped.
 * `budgetBytes` lowers the byte limit (after the model said the conversation was too long).
 *
 * Returns { messages, dropped, shortened, imagesDropped, fits, reason }: `fits` false with
 * `reason` "message_too_long", "too_many_images" or "body_too_large" when even the last
 * message alone cannot be sent.
 */
export function fitConversation(messages, limits, { extra = {}, budgetBytes = Infinity } = {}) {
  const { maxMessages, maxBodyBytes, maxMessageChars } = limits;
  const maxImages = limits.maxImages ?? 0;
  const out = { messages: [], dropped: 0, shortened: 0, imagesDropped: 0, fits: true, reason: null };
  if (messages.length === 0) return out;
  const last = messages[messages.length - 1];
  if (countChars(textOf(last)) > maxMessageChars) return { ...out, messages: messages.slice(), fits: false, reason: "message_too_long" };
  if (imagePartsOf(last).length > maxImages) return { ...out, messages: messages.slice(), fits: false, reason: "too_many_images" };

  const kept = messages.map((m, i) => {
    if (i === messages.length - 1 || countChars(textOf(m)) <= maxMessageChars) return m;
    out.shortened++;
    return shortened(m, maxMessageChars);
  });
  // Byte size without re-serialising per drop: '{"messages":[' + m1 + "," + m2 + ... + "]" + rest.
  const sizes = kept.map((m) => utf8Bytes(JSON.stringify(m)));
  const base = utf8Bytes(JSON.stringify({ messages: [], ...extra }));
  const budget = Math.min(maxBodyBytes, budgetBytes);
  const alive = kept.map(() => true);
  let count = kept.length;
  let images = kept.reduce((n, m) => n + imagePartsOf(m).length, 0);
  let bytes = base + sizes.reduce((a, b) => a + b, 0) + Math.max(0, count - 1);
  const fits = () => count <= maxMessages && bytes <= budget && images <= maxImages;
  const drop = (i) => {
    alive[i] = false; count--; bytes -= sizes[i] + (count > 0 ? 1 : 0); out.dropped++;
    images -= imagePartsOf(kept[i]).length;
  };
  const lastIndex = kept.length - 1;

  for (let i = 0; i < lastIndex && (images > maxImages || bytes > budget); i++) {
    while (imagePartsOf(kept[i]).length > 0 && (images > maxImages || bytes > budget)) {
      kept[i] = withoutFirstImage(kept[i]);
      const size = utf8Bytes(JSON.stringify(kept[i]));
      bytes += size - sizes[i];
      sizes[i] = size;
      images--;
      out.imagesDropped++;
    }
  }
  let cursor = 0;
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
  too_many_images: { text: "This message has more images than the service takes. Remove some and send it again.", rejected: true },
  too_many_messages: { text: "The conversation has more messages than the service takes. The oldest ones will be left out when you try again.", retry: true, shrink: true },
  message_too_long: { text: "Your message is longer than the service takes ({maxMessageChars} characters). Shorten it and send it again.", rejected: true },
  origin_not_allowed: { text: "The service does not accept messages from this page's address." },
  not_found: { text: "The chat service was not found at this address." },
  method_not_allowed: { text: "This page is out of date with the service. Reload the page and try again." },
  body_too_large: { text: "The conversation is too large to send. The oldest messages will be left out when you try again.", retry: true, shrink: true },
  unsupported_media_type: { text: "This page is out of date with the service. Reload the page and try again." },
  server_misconfigured: { text: "The chat service is not set up correctly, so it cannot answer. Its owner has to fix {setting}." },
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
  turn_in_progress: { text: "An answer is still being written in this chat (perhaps in another tab). Wait for it to end, or stop it, then try again.", retry: true },
  conversation_too_large: { text: "This chat has grown larger than the service keeps. The oldest messages will be left out when you try again; or start a new chat.", retry: true, shrink: true },
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

/** "the setting AI_DEFAULT_MODEL", from server_misconfigured's message (src/base/settings.py
 * SettingsError.public_message), or null when it names none. */
function misconfiguredSetting(message) {
  const match = /fix the setting ([A-Z][A-Z0-9_]*)/.exec(typeof message === "string" ? message : "");
  return match ? `the setting ${match[1]}` : null;
}

/** An error ({code, status, retryAfter}) as the page shows it, with what the page should do. */
export function describeError(error, limits = DEFAULT_LIMITS) {
  const entry = ERRORS[error?.code] ?? ERRORS.http_error;
  const text = entry.text
    .replace("{after}", retryWhen(error?.retryAfter ?? null))
    .replace("{maxMessageChars}", limits.maxMessageChars.toLocaleString("en-US"))
    .replace("{status}", error?.status ? ` (HTTP ${error.status})` : "")
    .replace("{setting}", misconfiguredSetting(error?.message) ?? "it");
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
// whileThinking / error / usage / ms, a user message's images ([{ name, type, bytes, url }]),
// rejected: true for a refused user message, and versions (alts, altIndex). A chat may have
// settings: { system, temperature, maxTokens }.

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

const isImage = (i) => i && typeof i === "object" && typeof i.name === "string" && (i.url === undefined || imageBytes(i.url) >= 0);
const isMessage = (m) => m && typeof m === "object" && typeof m.id === "string"
  && ["system", "user", "assistant"].includes(m.role) && typeof m.content === "string";

/** A saved message as the page may use it: images only of the allowed shape, versions checked alike. */
function cleanMessage(m) {
  const out = { ...m };
  if (out.images !== undefined) out.images = Array.isArray(out.images) ? out.images.filter(isImage) : [];
  if (out.files !== undefined) out.files = Array.isArray(out.files) ? out.files.filter((f) => f && typeof f.name === "string" && typeof f.text === "string") : [];
  if (out.alts !== undefined) {
    out.alts = Array.isArray(out.alts) ? out.alts.filter((t) => Array.isArray(t) && t.length > 0 && t.every(isMessage)).map((t) => t.map(cleanMessage)) : [];
    if (!(Number.isInteger(out.altIndex) && out.altIndex >= 0 && out.altIndex <= out.alts.length)) out.altIndex = out.alts.length;
  }
  return out;
}
const isChat = (c) => c && typeof c === "object" && typeof c.id === "string" && Array.isArray(c.messages);

/** The saved state, or a fresh one if nothing is saved or what is saved is unreadable. */
export function loadState(storage) {
  let raw;
  try { raw = storage.getItem(STORAGE_KEY); } catch { return emptyState(); }
  if (!raw) return emptyState();
  let parsed;
  try { parsed = JSON.parse(raw); } catch { return emptyState(); }
  if (!parsed || parsed.version !== 1 || !Array.isArray(parsed.chats)) return emptyState();
  const chats = parsed.chats.filter(isChat).map((c) => ({ ...c, messages: c.messages.filter(isMessage).map(cleanMessage) }));
  const currentId = chats.some((c) => c.id === parsed.currentId) ? parsed.currentId : (chats[0]?.id ?? null);
  return { version: 1, currentId, chats };
}

// Images are what fills the browser's storage (about 5 MB for a site): when they do not fit,
// they are saved by name only and stay in memory for this visit.
const withoutImageData = (key, value) => (key === "images" && Array.isArray(value)
  ? value.map(({ url, ...rest }) => ({ ...rest, ...(url === undefined ? {} : { unsaved: true }) })) : value);
const countImageData = (state) => {
  let n = 0;
  const visit = (messages) => { for (const m of messages) { n += m.images?.filter((i) => i.url).length ?? 0; for (const t of m.alts ?? []) visit(t); } };
  for (const c of state.chats) visit(c.messages);
  return n;
};

/**
 * Saves the state. When the browser's storage is full, images are saved by name only (kept in
 * memory for this visit); then the oldest chats other than the current one are let go until it
 * fits. Returns { dropped, imagesUnsaved }: how many chats were let go (-1 when even the current
 * chat alone does not fit; it stays in memory for this visit), how many images were not saved.
 */
export function saveState(storage, state) {
  const attempt = (replacer) => {
    try { storage.setItem(STORAGE_KEY, JSON.stringify(state, replacer)); return true; } catch { return false; }
  };
  if (attempt()) return { dropped: 0, imagesUnsaved: 0 };
  const imagesUnsaved = countImageData(state);
  let dropped = 0;
  for (;;) {
    if (attempt(imagesUnsaved ? withoutImageData : undefined)) return { dropped, imagesUnsaved };
    const victim = [...state.chats].reverse().find((c) => c.id !== state.currentId);
    if (!victim) return { dropped: -1, imagesUnsaved };
    state.chats = state.chats.filter((c) => c !== victim);
    dropped++;
  }
}

export function currentChat(state) {
  return state.chats.find((c) => c.id === state.currentId) ?? null;
}

/**
 * A new empty chat, first in the list and current, with a copy of `defaults` (the settings new
 * chats start with) when any is set. An empty current chat is reused as it is.
 */
export function startChat(state, now = Date.now(), defaults = null) {
  const current = currentChat(state);
  if (current && current.messages.length === 0) return current;
  const chat = { id: newId(now), title: "", createdAt: now, updatedAt: now, model: "", messages: [] };
  if (defaults && hasSettings(defaults)) chat.settings = { ...defaults };
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
 * What of a chat is sent as context: its system prompt (settings), every system and user
 * message except refused ones, and the answers that arrived (complete, or stopped by the user
 * with some text). Failed and cut answers stay on screen only.
 *
 * `images`: user messages carry their images as image_url parts (a model that takes them);
 * else text only. `reasoning`: an answer's thinking goes back as `reasoning` (a service that
 * announces capabilities takes it; an older one would refuse the field).
 */
export function sendableMessages(chat, { images = false, reasoning = false } = {}) {
  const system = chat.settings?.system?.trim() ? [{ role: "system", content: chat.settings.system }] : [];
  return system.concat(chat.messages.filter((m) => {
    if (m.role === "assistant") return m.outcome === "complete" || (m.outcome === "aborted" && m.content !== "");
    return !m.rejected;
  }).map((m) => {
    if (m.role === "user" && m.files?.length) m = { ...m, content: withFiles(m.content, m.files) };
    const sent = images && m.role === "user" ? m.images?.filter((i) => imageBytes(i.url) >= 0) ?? [] : [];
    if (sent.length > 0) {
      const parts = m.content ? [{ type: "text", text: m.content }] : [];
      return { role: m.role, content: parts.concat(sent.map((i) => ({ type: "image_url", image_url: { url: i.url } }))) };
    }
    if (reasoning && m.role === "assistant" && m.thinking) return { role: m.role, content: m.content, reasoning: m.thinking };
    return { role: m.role, content: m.content };
  }));
}

/** What the model is asked after an answer that reached its length limit. */
export const CONTINUE_PROMPT = "Continue exactly where your last answer stopped, without repeating anything.";

// ---- Settings new chats start with -----------------------------------------------------
export const DEFAULTS_KEY = "ai-chat:defaults:v1";

/** Settings as the page keeps them: { system: string, temperature: 0-5 | null, maxTokens: int >= 1 | null }. */
export function cleanSettings(value) {
  const v = value && typeof value === "object" ? value : {};
  const t = v.temperature, m = v.maxTokens;
  return {
    system: typeof v.system === "string" ? v.system : "",
    temperature: typeof t === "number" && t >= 0 && t <= 5 ? t : null,
    maxTokens: Number.isInteger(m) && m > 0 ? m : null,
  };
}

/** Whether any of the settings is set (an empty system prompt is none). */
export function hasSettings(settings) {
  return Boolean(settings.system?.trim()) || settings.temperature != null || settings.maxTokens != null;
}

/** The settings new chats start with, as saved in this browser (none set when nothing is). */
export function loadDefaults(storage) {
  try { return cleanSettings(JSON.parse(storage.getItem(DEFAULTS_KEY) ?? "null")); } catch { return cleanSettings(null); }
}

/** Saves them; false when the browser's storage refused (they then last for this visit). */
export function saveDefaults(storage, defaults) {
  try { storage.setItem(DEFAULTS_KEY, JSON.stringify(cleanSettings(defaults))); return true; } catch { return false; }
}

// ---- Model names ---------------------------------------------------------------------------
// Parts of a model id that say how it was trained or packed, not which model it is.
const NOISE = /^(instruct|it|chat|hf|awq|gguf|fp8|fp16|bf16|int4|int8|a\d+(\.\d+)?b)$/i;

/**
 * A short name for a Workers AI model id, to fit the model picker (the id goes in its tooltip):
 * "@cf/google/gemma-4-26b-a4b-it" is "Gemma 4 26B", "@cf/meta/llama-3.1-8b-instruct-fast"
 * "Llama 3.1 8B fast", "@cf/openai/gpt-oss-20b" "gpt-oss 20B", "@cf/zai-org/glm-4.7-flash"
 * "GLM 4.7 flash". Words stay joined as the id joins them; numbers and sizes stand apart.
 */
export function modelLabel(id) {
  const parts = String(id).split("/").pop().split("-").filter(Boolean);
  const kept = parts.filter((p, i) => i === 0 || !NOISE.test(p));
  const groups = [];
  for (const part of kept) {
    const word = /^[a-z]+$/i.test(part);
    const last = groups.at(-1);
    if (word && last?.word) last.text += `-${part}`;
    else groups.push({ word, text: /^\d+(\.\d+)?[bm]$/i.test(part) ? part.toUpperCase() : part });
  }
  if (groups.length === 0) return String(id);
  const first = groups[0].text;
  if (/^[a-z]{1,3}$/.test(first)) groups[0].text = first.toUpperCase();
  else if (/^[a-z]{4,}$/.test(first)) groups[0].text = first[0].toUpperCase() + first.slice(1);
  return groups.map((g) => g.text).join(" ");
}

/** Short names for a list of ids: where two would read the same, both keep their ids' last part. */
export function modelLabels(ids) {
  const labels = new Map(ids.map((id) => [id, modelLabel(id)]));
  const count = new Map();
  for (const label of labels.values()) count.set(label, (count.get(label) ?? 0) + 1);
  for (const [id, label] of labels) if (count.get(label) > 1) labels.set(id, String(id).split("/").pop());
  return labels;
}

/** The body fields a chat's settings add: { temperature, max_tokens } when set and in range. */
export function settingsBody(chat, limits) {
  const body = {};
  const t = chat.settings?.temperature;
  if (typeof t === "number" && t >= 0 && t <= 5) body.temperature = t;
  const max = chat.settings?.maxTokens;
  if (Number.isInteger(max) && max > 0) body.max_tokens = limits.maxTokensLimit ? Math.min(max, limits.maxTokensLimit) : max;
  return body;
}

// ---- Versions ------------------------------------------------------------------------------
// Regenerating an answer or editing a message keeps what was there: the message at that
// place holds the other versions of the conversation from there on (`alts`: tails of
// messages, their own first message without `alts`) and where the current one sits among them
// all (`altIndex`). Switching swaps the tails; a tail's later messages keep their own versions.

function allVersions(chat, at) {
  const head = chat.messages[at];
  const { alts = [], altIndex = alts.length, ...bare } = head;
  const all = alts.slice();
  all.splice(altIndex, 0, [bare, ...chat.messages.slice(at + 1)]);
  return all;
}

/** { index, count } of the message's versions (count 1 when it has none). */
export function versionOf(message) {
  const count = (message.alts?.length ?? 0) + 1;
  return { index: message.altIndex ?? count - 1, count };
}

/** Shows version `index` of the conversation from message `id` on. */
export function switchVersion(chat, id, index) {
  const at = chat.messages.findIndex((m) => m.id === id);
  if (at < 0) return false;
  const all = allVersions(chat, at);
  if (!(index >= 0 && index < all.length)) return false;
  const [head, ...rest] = all[index];
  const alts = all.filter((_, i) => i !== index);
  chat.messages = [...chat.messages.slice(0, at), { ...head, alts, altIndex: index }, ...rest];
  return true;
}

/** Edit-and-resend: the user message gets new text (and images); what was there stays a version. */
export function editMessage(chat, id, content, images = undefined, files = undefined) {
  const at = chat.messages.findIndex((m) => m.id === id && m.role === "user");
  if (at < 0) return false;
  const alts = allVersions(chat, at);
  const edited = { id: newId(), role: "user", content, alts, altIndex: alts.length };
  if (files?.length) edited.files = files;
  if (images?.length) edited.images = images;
  chat.messages = [...chat.messages.slice(0, at), edited];
  return true;
}

/**
 * Regenerate: the answer and everything after it go (kept as versions when it had text); the
 * question before it is asked again. Returns the versions the new answer takes ({ alts, altIndex }).
 */
export function regenerateFrom(chat, id) {
  const at = chat.messages.findIndex((m) => m.id === id && m.role === "assistant");
  if (at < 0) return false;
  const all = allVersions(chat, at).filter((tail) => tail[0].content !== "" || tail[0].outcome === "complete");
  chat.messages = chat.messages.slice(0, at);
  const question = chat.messages.findLast((m) => m.role === "user");
  if (question) delete question.rejected;
  return all.length ? { alts: all, altIndex: all.length } : {};
}

// ---- Finding, naming, exporting, undoing ---------------------------------------------------

/** Renames a chat; an empty name goes back to the automatic one (its first message). */
export function renameChat(chat, title) {
  chat.title = title.replace(/\s+/g, " ").trim().slice(0, 120);
}

/** The chats whose name or any message contains every word of the query (any case). */
export function searchChats(chats, query) {
  const words = query.toLocaleLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return chats.slice();
  return chats.filter((c) => {
    const hay = [chatTitle(c), ...c.messages.map((m) => m.content)].join("\n").toLocaleLowerCase();
    return words.every((w) => hay.includes(w));
  });
}

/** A chat as a Markdown document: its name, settings, each turn under a heading. */
export function chatToMarkdown(chat) {
  const out = [`# ${chatTitle(chat)}`, ""];
  if (chat.model) out.push(`Model: ${chat.model}`, "");
  if (chat.settings?.system?.trim()) out.push("## System prompt", "", chat.settings.system, "");
  for (const m of chat.messages) {
    out.push(m.role === "user" ? "## You" : m.role === "system" ? "## System" : "## Answer", "");
    if (m.thinking) out.push("<details><summary>Thinking</summary>", "", m.thinking, "", "</details>", "");
    if (m.content) out.push(m.content, "");
    for (const image of m.images ?? []) out.push(`[image: ${image.name}]`, "");
    for (const file of m.files ?? []) out.push(`[file: ${file.name}]`, "");
  }
  return out.join("\n").trimEnd() + "\n";
}

/**
 * A chat as JSON: what the page keeps of it, versions included. Not its durable conversation's
 * id (knowing it is the right to read the conversation: a shared file must not carry it) nor the
 * page's copy of the server's history.
 */
export function chatToJSON(chat) {
  const { conversation, serverMessages, stale, sharedBranches, ...kept } = chat;
  return JSON.stringify({ format: "ai-chat", version: 1, chat: kept }, null, 2) + "\n";
}

/** Puts a deleted chat back where it was, and makes it current. */
export function restoreChat(state, chat, index) {
  if (state.chats.some((c) => c.id === chat.id)) return;
  state.chats.splice(Math.min(index, state.chats.length), 0, chat);
  state.currentId = chat.id;
}

/** An answer's usage line: "312 tokens · 4.2 s · 81.3 tokens/s" (tokens/s over the time it wrote). */
export function usageLine(usage, ms, writingMs) {
  const parts = [];
  const tokens = usage?.completion_tokens;
  if (Number.isInteger(tokens) && tokens >= 0) parts.push(`${tokens.toLocaleString("en-US")} ${tokens === 1 ? "token" : "tokens"}`);
  if (ms >= 0) parts.push(`${(ms / 1000).toFixed(1)} s`);
  if (Number.isInteger(tokens) && tokens > 1 && writingMs > 0) parts.push(`${((tokens * 1000) / writingMs).toFixed(1)} tokens/s`);
  return parts.join(" · ");
}
