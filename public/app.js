// The chat page: saved chats, the conversation sent trimmed to the service's limits, answers
// rendered as sanitized markdown while they stream. Decisions live in chat-core.js; this
// file draws. User text goes into the page with textContent; model text only through
// markdown.js (sanitized, images never loaded); the user's own images only as data: URLs of
// the four image types (IMAGE_DATA_URL), checked again where they are drawn.
import { ChatError, streamChat } from "./chat-client.js";
import {
  createConversation, deleteConversation, getConversation, keepBranches, listConversations, resumeConversation, stopConversation,
  streamConversation, useOwnerToken,
} from "./conversation-client.js";
import {
  DURABLE_KEY, OWNER_KEY, applyDetails, branchesOf, chatFromServer, historyAfter, historyDetails, listedEntries, loadDurable,
  loadOwnerToken, needsFork, ownerToken, saveDurable,
} from "./durable-chats.js";
import {
  CONTINUE_PROMPT, DEFAULT_LIMITS, IMAGE_DATA_URL, IMAGE_TYPES, capabilitiesFrom, chatTitle, chatToJSON, chatToMarkdown,
  checkImages, checkTextFile, cleanSettings, countChars, currentChat, deleteChat, describeError, editMessage, fitConversation,
  isTextFile, withFiles,
  imageBytes, limitsFrom, loadDefaults, loadState, modelLabels, newId, reasoningFrom, regenerateFrom, renameChat,
  restoreChat, saveDefaults, saveState, searchChats, selectChat, sendableMessages, settingsBody, startChat,
  switchVersion, thoughtFor, touchChat, usageLine, versionOf,
  loadThink, saveThink, thinkBody, thinkControlsFrom, thinkDefaultFrom, thinkNote, thinkOf,
} from "./chat-core.js";
import { StreamingMarkdown, renderMarkdown } from "./markdown.js";

const $ = (id) => document.getElementById(id);
const log = $("log"), form = $("composer"), prompt = $("prompt"), send = $("send"), stop = $("stop");
const modelSelect = $("model"), chatList = $("chat-list"), layout = $("layout"), menu = $("menu");
const announcer = $("announcer"), composerError = $("composer-error"), editing = $("editing");
const attach = $("attach"), fileInput = $("file"), attachments = $("attachments"), attachNote = $("attach-note");
const storageNote = $("storage-note"), jump = $("jump"), search = $("search"), toast = $("toast");
const settings = $("settings"), shortcuts = $("shortcuts"), offBanner = $("off-banner"), scrim = $("scrim");
const think = $("think"), thinkTools = $("composer-tools"), thinkNoteText = $("think-note");

const EMPTY_TEXT = "Ask anything. Answers stream in as they are written.";
// The owner's settings (GET /api/v1/models `page`: CHAT_TITLE, SYSTEM_PROMPT, CHAT_SUGGESTIONS).
let owned = { title: document.title, systemPrompt: "", suggestions: [] };
const state = loadState(localStorage);
let limits = { ...DEFAULT_LIMITS };
let reasoning = [];
let capabilities = null;   // null: the service announces none (it takes no images, no reasoning back)
let thinkControls = {};    // the models with a Think toggle (chat-core.js thinkControlsFrom)
let chosenThink = loadThink(localStorage);   // the last Think choice made here (null: none yet)
let serviceThink = false;  // where none was made: AI_THINKING "auto" starts it on (GET /api/v1/models)
const lastThink = () => chosenThink ?? serviceThink;   // what a chat without its own choice shows
let defaultModel = "";
let inFlight = null;       // { controller, chatId, stopping }
let owner = null;          // this browser's owner token (durable chats only): Settings, "Your chats"
let durable = false;       // the chats are durable conversations (GET /api/v1/models says so): durable-chats.js
let editingId = null;
let pending = [];          // images attached to the message being written: { name, type, bytes, url }
let pendingFiles = [];     // files of text attached to it: { name, type, bytes, text } (chat-core.js withFiles)
let undo = null;           // { chat, index, timer }
let defaults = loadDefaults(localStorage);   // the settings new chats start with
let ready = false;         // GET /api/v1/models has answered (or failed): until then an answer waits (waitForModels)
let markReady;
const modelsReady = new Promise((resolve) => { markReady = () => { if (!ready) { ready = true; drawImageControls(); resolve(); } }; });
const early = new Set();   // chats written in before it answered: kept when the chats turn out durable
let off = false;           // the service's kill switch is on (503 ai_unavailable): the composer is closed
const phone = matchMedia("(max-width: 760px)");
// A phone's message box is one short line: its placeholder must not wrap.
const promptText = () => (phone.matches ? "Message" : prompt.dataset.placeholder);
prompt.dataset.placeholder = prompt.placeholder;
/** A new chat (or the empty current one), with the settings new chats start with. */
const begin = () => startChat(state, Date.now(), defaults);

const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("aria-") || key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  node.append(...children);
  return node;
};

function save() {
  const { dropped, imagesUnsaved } = durable ? saveDurable(localStorage, state) : saveState(localStorage, state);
  const notes = [];
  if (dropped > 0) notes.push(`Browser storage is full: the ${dropped} oldest chats were removed.`);
  if (dropped < 0) notes.push("Browser storage is full: this chat is kept only until you leave the page.");
  else if (imagesUnsaved > 0) notes.push(`Browser storage is full: ${imagesUnsaved === 1 ? "an image is" : `${imagesUnsaved} images are`} kept only until you leave the page (the chats keep their names).`);
  const text = notes.join(" ");
  if (text && text !== storageNote.textContent) announce(text);
  storageNote.textContent = text;
  storageNote.hidden = !text;
}

function announce(text) {
  // Cleared first so the same words twice are still read; polite, once per answer.
  announcer.textContent = "";
  requestAnimationFrame(() => { announcer.textContent = text; });
}

const STRUCTURE = new Set(["TABLE", "THEAD", "TBODY", "TR", "UL", "OL"]);   // their own text is layout whitespace
const BLOCKS = new Set(["P", "LI", "TR", "H1", "H2", "H3", "H4", "H5", "H6", "PRE", "BLOCKQUOTE", "DIV"]);
/**
 * What a screen reader should hear of a rendered answer: its words, not its markdown or the
 * code blocks' buttons; at most `limit` characters (a 1,000-row table read aloud helps no one,
 * and walking all of it would hold the page up as the answer ends).
 */
function plainText(node, limit = 1500) {
  let out = "";
  const walk = (n) => {
    for (let c = n.firstChild; c && out.length < limit; c = c.nextSibling) {
      if (c.nodeType === Node.TEXT_NODE) { if (!STRUCTURE.has(n.tagName)) out += c.data; }
      else if (c.nodeType === Node.ELEMENT_NODE && !c.classList.contains("code-bar")) {
        walk(c);
        if (BLOCKS.has(c.tagName)) out += "\n";
        else if (c.tagName === "TD" || c.tagName === "TH") out += " ";
      }
    }
  };
  walk(node);
  const text = out.replace(/[ \t]+\n/g, "\n").replace(/\n{2,}/g, "\n").trim();
  return out.length < limit ? text : `${text.slice(0, limit).trimEnd()}… (the answer goes on in the conversation)`;
}

// ---- scrolling --------------------------------------------------------------------------
const nearBottom = () => log.scrollHeight - log.scrollTop - log.clientHeight < 48;
const keepInView = (was) => { if (was) log.scrollTop = log.scrollHeight; };
// Shown and hidden by a class (visibility), not `hidden`: taking a box out of main's grid and
// putting it back each frame would lay the whole conversation out again.
let jumpScheduled = false;
const showJump = (show) => { if (jump.classList.contains("shown") !== show) jump.classList.toggle("shown", show); };
function updateJump() {
  if (jumpScheduled) return;
  jumpScheduled = true;
  requestAnimationFrame(() => { jumpScheduled = false; showJump(!nearBottom()); });
}
log.addEventListener("scroll", updateJump, { passive: true });
jump.addEventListener("click", () => { log.scrollTop = log.scrollHeight; showJump(false); prompt.focus(); });

// ---- the chat list ----------------------------------------------------------------------
function drawChatList() {
  chatList.replaceChildren();
  const shown = state.chats.filter((c) => c.messages.length > 0 || c.id === state.currentId);
  const chats = searchChats(shown, search.value);
  if (chats.length === 0) chatList.append(el("li", { class: "none" }, search.value.trim() ? "No chat matches" : "No chats yet"));
  for (const chat of chats) {
    const title = chatTitle(chat);
    const open = el("button", { type: "button", class: "open", title, "data-chat": chat.id }, title);
    open.addEventListener("click", () => switchTo(chat.id));
    const rename = el("button", { type: "button", class: "rename", "aria-label": `Rename chat: ${title}`, title: "Rename chat" }, "✎");
    rename.addEventListener("click", () => startRename(chat, li));
    const del = el("button", { type: "button", class: "delete", "aria-label": `Delete chat: ${title}`, title: "Delete chat" }, "✕");
    del.addEventListener("click", () => removeChat(chat.id));
    const li = el("li", { "aria-current": String(chat.id === state.currentId) }, open, rename, del);
    chatList.append(li);
  }
}

function startRename(chat, li) {
  const input = el("input", { type: "text", class: "rename-input", value: chatTitle(chat), "aria-label": "Chat name (Enter to save, Escape to cancel)" });
  let done = false;
  const finish = (keep) => {
    if (done) return;
    done = true;
    if (keep) { renameChat(chat, input.value); save(); }
    drawChatList();
    chatList.querySelector(`[data-chat="${chat.id}"]`)?.focus();
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); finish(true); }
    else if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); finish(false); }
  });
  input.addEventListener("blur", () => finish(true));
  li.replaceChildren(input);
  input.focus();
  input.select();
}

function closeMenuOnPhone() {
  if (phone.matches) setMenu(false);
}

function setMenu(open) {
  layout.classList.toggle("chats-hidden", !open);
  menu.setAttribute("aria-expanded", String(open));
}

/** On a phone the chat list is a drawer over the dimmed conversation: a tap outside it, or Escape, closes it. */
const drawerOpen = () => phone.matches && menu.getAttribute("aria-expanded") === "true";
function closeDrawer() {
  setMenu(false);
  menu.focus();
}
scrim.addEventListener("click", closeDrawer);

function switchTo(id) {
  if (inFlight) inFlight.controller.abort();
  selectChat(state, id);
  save();
  cancelEdit();
  drawChat();
  closeMenuOnPhone();
  prompt.focus();
  const chat = currentChat(state);
  if (durable && chat?.stale) loadConversation(chat);   // its answer went on without us: read it back
}

function removeChat(id) {
  if (inFlight?.chatId === id) inFlight.controller.abort();
  // Focus goes where the deleted chat was: the next chat in the list, else the previous, else New chat.
  const buttons = [...chatList.querySelectorAll(".open")];
  const at = buttons.findIndex((b) => b.dataset.chat === id);
  const nextId = (buttons[at + 1] ?? buttons[at - 1])?.dataset.chat;
  const index = state.chats.findIndex((c) => c.id === id);
  const chat = state.chats[index];
  deleteChat(state, id);
  save();
  drawChat();
  offerUndo(chat, index);
  (nextId && chatList.querySelector(`[data-chat="${nextId}"]`) || $("clear")).focus();
}

/** A deleted chat's conversation, deleted on the server once Undo is no longer offered. */
function forget(chat, keepalive = false) {
  if (!durable || !chat?.conversation) return;
  const send = keepalive ? (url, init) => fetch(url, { ...init, keepalive: true }) : fetch;
  deleteConversation(chat.conversation, { fetch: send }).catch(() => {});
}

function offerUndo(chat, index) {
  if (!chat) return;
  if (undo) forget(undo.chat);
  clearTimeout(undo?.timer);
  const title = chatTitle(chat);
  const button = el("button", { type: "button", class: "link" }, "Undo");
  button.addEventListener("click", () => {
    restoreChat(state, chat, index);
    save();
    hideToast();
    drawChat();
    chatList.querySelector(`[data-chat="${chat.id}"]`)?.focus();
    announce(`Chat restored: ${title}.`);
  });
  toast.replaceChildren(el("span", {}, `Deleted “${title}”. `), button);
  toast.hidden = false;
  undo = { chat, index, timer: setTimeout(() => { forget(chat); hideToast(); }, 15000) };
  announce(`Chat deleted: ${title}. Undo is offered below the chat list.`);
}

function hideToast() { clearTimeout(undo?.timer); undo = null; toast.hidden = true; toast.replaceChildren(); }

function newChat() {
  if (inFlight) inFlight.controller.abort();
  begin().model = modelSelect.value;
  save();
  cancelEdit();
  drawChat();
  closeMenuOnPhone();
  prompt.focus();
}

// ---- messages ---------------------------------------------------------------------------
function drawChat() {
  const chat = currentChat(state);
  log.replaceChildren();
  if (!chat || chat.messages.length === 0) log.append(emptyView());
  else for (const m of chat.messages) log.append(messageView(chat, m));
  if (chat?.model && [...modelSelect.options].some((o) => o.value === chat.model)) modelSelect.value = chat.model;
  modelSelect.title = currentModel();
  drawChatList();
  drawImageControls();
  drawThink();
  log.scrollTop = log.scrollHeight;
  updateJump();
}

/** The empty chat: the chat's name, what it does, and the owner's suggestions to click. */
function emptyView() {
  const box = el("div", { class: "empty", id: "empty" }, el("h2", {}, owned.title), el("p", {}, EMPTY_TEXT));
  if (owned.suggestions.length) {
    const list = el("ul", { class: "suggestions", "aria-label": "Suggestions" });
    for (const text of owned.suggestions) {
      const b = el("button", { type: "button", class: "suggestion" }, text);
      b.addEventListener("click", () => {
        if (inFlight || off) return;
        prompt.value = text;
        form.requestSubmit();
      });
      list.append(el("li", {}, b));
    }
    box.append(list);
  }
  return box;
}

function actionButton(label, text, onClick) {
  const b = el("button", { type: "button", "aria-label": label }, text);
  b.addEventListener("click", onClick);
  return b;
}

// Icons of the actions under a message (24-unit paths, drawn with currentColor).
const ICONS = {
  copy: "M9 9h10v11H9z M5 15V4h10",
  edit: "M4 20h4L19 9l-4-4L4 16z M13.5 6.5l4 4",
  again: "M20 11a8 8 0 1 0-2.3 5.7 M20 4v7h-7",
  more: "M5 12h14 M13 6l6 6-6 6",
};
function icon(name) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", "16");
  svg.setAttribute("height", "16");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", ICONS[name]);
  for (const [k, v] of Object.entries({ fill: "none", stroke: "currentColor", "stroke-width": "1.8", "stroke-linecap": "round", "stroke-linejoin": "round" })) path.setAttribute(k, v);
  svg.append(path);
  return svg;
}
/** A small icon button of a message's actions; its name is its label (and tooltip). */
function iconAction(label, name, onClick) {
  const b = el("button", { type: "button", class: "icon-action", "aria-label": label, title: label }, icon(name));
  b.addEventListener("click", onClick);
  return b;
}

async function copyText(text, button) {
  if (button.classList.contains("icon-action")) {   // an icon: a tick for a moment, the words read out
    try { await navigator.clipboard.writeText(text); button.classList.add("done"); announce("Copied to the clipboard."); } catch { announce("Copying failed: the browser did not allow it."); }
    setTimeout(() => button.classList.remove("done"), 1500);
    return;
  }
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
    announce("Copied to the clipboard.");
  } catch {
    button.textContent = "Copy failed";
    announce("Copying failed: the browser did not allow it.");
  }
  setTimeout(() => { button.textContent = button.dataset.label ?? "Copy"; }, 1500);
}

function imagesView(images) {
  const box = el("div", { class: "images" });
  for (const image of images) {
    if (image.url && IMAGE_DATA_URL.test(image.url)) box.append(el("img", { src: image.url, alt: `Attached image: ${image.name}`, class: "thumb" }));
    else box.append(el("span", { class: "image-missing" }, `[image not kept: ${image.name}]`));
  }
  return box;
}

const sizeOf = (n) => (n < 1024 ? `${n} B` : n < 1048576 ? `${Math.round(n / 1024)} KB` : `${(n / 1048576).toFixed(1)} MB`);
/** A message's files of text, each a chip: its name and size (its text went to the model). */
function filesView(files) {
  const list = el("ul", { class: "files", "aria-label": "Attached files" });
  for (const f of files) list.append(el("li", { class: "file-chip", title: f.name }, el("span", { class: "file-name" }, f.name), el("span", { class: "file-size" }, sizeOf(f.bytes ?? 0))));
  return list;
}

/** ‹ 2 / 3 › under a message that has versions. */
function versionsView(chat, m) {
  const { index, count } = versionOf(m);
  if (count < 2) return null;
  const go = (to, which) => () => {
    if (inFlight) return;
    const at = chat.messages.indexOf(m);
    switchVersion(chat, m.id, to);
    save();
    shareBranches(chat);
    drawChat();
    const again = log.querySelector(`[data-id="${chat.messages[at].id}"] .versions`);
    (again?.querySelector(`[aria-label="${which}"]:not(:disabled)`) ?? again?.querySelector("button:not(:disabled)"))?.focus();
  };
  const prev = el("button", { type: "button", "aria-label": "Previous version", disabled: index === 0 }, "‹");
  const next = el("button", { type: "button", "aria-label": "Next version", disabled: index === count - 1 }, "›");
  prev.addEventListener("click", go(index - 1, "Previous version"));
  next.addEventListener("click", go(index + 1, "Next version"));
  return el("span", { class: "versions", role: "group", "aria-label": "Versions" }, prev, el("span", {}, `${index + 1} / ${count}`), next);
}

function messageView(chat, m) {
  if (m.role === "assistant") return assistantView(chat, m);
  const div = el("article", { class: `msg ${m.role}${m.rejected ? " rejected" : ""}`, "data-id": m.id, "aria-label": m.role === "user" ? "You said" : "System" });
  if (m.images?.length) div.append(imagesView(m.images));
  if (m.files?.length) div.append(filesView(m.files));
  if (m.content || !m.files?.length) div.append(el("div", { class: "text" }, m.content));
  if (m.rejected) div.append(el("p", { class: "note" }, "Not sent to the model."));
  if (m.role === "user") {
    const copy = iconAction("Copy message", "copy", (e) => copyText(m.content, e.currentTarget));
    const edit = iconAction("Edit and resend", "edit", () => startEdit(m));
    const actions = el("div", { class: "actions" }, copy, edit);
    const versions = versionsView(chat, m);
    if (versions) actions.prepend(versions);
    div.append(actions);
  }
  return div;
}

function thinkingView(m) {
  const text = el("div", { class: "thinking-text" }, m.thinking ?? "");
  // A finished answer whose time was not kept (stored before it was) has thought, not "is thinking".
  const said = m.thinkingMs !== undefined ? thoughtFor(m.thinkingMs) : m.outcome ? "Thought" : "Thinking…";
  const summary = el("summary", {}, said);
  return el("details", { class: "thinking" }, summary, text);
}

/** The name of the model that wrote an answer, and when it ended, above it (the id in its tooltip). */
function byView(model, at) {
  const by = el("p", { class: "by", title: model ?? "" }, el("span", { class: "by-model", "data-model": model ?? "" }, model ? modelName(model) : ""));
  if (Number.isInteger(at)) {
    const when = new Date(at);
    by.append(el("time", { dateTime: when.toISOString(), title: when.toLocaleString() }, when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })));
  }
  return by;
}

function assistantView(chat, m) {
  const div = el("article", { class: "msg assistant", "data-id": m.id, "aria-label": "Answer" });
  if (m.outcome) div.dataset.outcome = m.outcome;
  div.append(byView(m.model, m.at));
  if (m.thinking) div.append(thinkingView(m));
  const text = el("div", { class: "text markdown" });
  // Drawn by the renderer that drew it streaming, at its end: the same parts, the same DOM.
  new StreamingMarkdown(text, m.content ?? "").flush(true);
  div.append(text);
  finishView(chat, div, m);
  return div;
}

/** Notes, error text and buttons under an answer that has ended. */
function finishView(chat, div, m) {
  div.classList.remove("streaming");
  div.querySelector(".by")?.replaceWith(byView(m.model, m.at));   // the model that wrote it, and when
  if (m.outcome) div.dataset.outcome = m.outcome;
  const notes = [];
  if (m.trimmed) {
    const parts = [];
    if (m.trimmed.dropped) parts.push(`the ${m.trimmed.dropped} oldest messages were left out`);
    if (m.trimmed.shortened) parts.push(`${m.trimmed.shortened} long ${m.trimmed.shortened === 1 ? "message was" : "messages were"} shortened`);
    if (m.trimmed.imagesDropped) parts.push(`${m.trimmed.imagesDropped} earlier ${m.trimmed.imagesDropped === 1 ? "image was" : "images were"} left out`);
    notes.push(`To fit the service's limits, ${parts.join(" and ")} of what the model read.`);
  }
  if (m.textOnly) notes.push(`This model reads text only: ${m.textOnly === 1 ? "an image was" : `${m.textOnly} images were`} not sent.`);
  const last = chat.messages.at(-1) === m;
  const cutShort = m.outcome === "complete" && m.stopReason === "length" && !m.whileThinking;
  if (m.outcome === "complete" && m.whileThinking) notes.push("The model used up its length limit while still thinking, so there is no answer. Try again, or ask for something shorter.");
  else if (cutShort) notes.push(last ? "The answer reached its length limit. Continue asks the model for the rest." : "The answer reached its length limit.");
  if (m.outcome === "aborted") notes.push("Stopped.");
  for (const text of notes) div.append(el("p", { class: "note" }, text));
  if (m.outcome === "failed" || m.outcome === "cut") {
    div.classList.add("error");
    const said = describeError(m.error, limits);
    const note = el("p", { class: "note", role: "status" }, said.text);
    if (said.retry) note.append(actionButton("Retry", "Retry", () => regenerate(chat, m.id)));
    if (m.error?.message) note.append(el("details", {}, el("summary", {}, "Details"), `${m.error.code}: ${m.error.message}`));
    note.querySelector("button")?.classList.add("retry");
    div.append(note);
  }
  const usage = m.ms !== undefined ? usageLine(m.usage, m.ms, m.writingMs) : "";
  if (usage) div.append(el("p", { class: "usage" }, usage));
  if (m.outcome !== "failed" && m.outcome !== "cut") {
    const copy = iconAction("Copy answer", "copy", (e) => copyText(m.content, e.currentTarget));
    const again = iconAction("Regenerate answer", "again", () => regenerate(chat, m.id));
    const actions = el("div", { class: "actions" }, copy, again);
    if (cutShort && last) actions.append(actionButton("Continue the answer", "Continue", () => continueAnswer(chat, m)));
    const versions = versionsView(chat, m);
    if (versions) actions.prepend(versions);
    div.append(actions);
  }
}

// ---- editing ------------------------------------------------------------------------------
function startEdit(m) {
  if (inFlight) return;
  editingId = m.id;
  prompt.value = m.content;
  pending = (m.images ?? []).filter((i) => i.url);
  pendingFiles = (m.files ?? []).map((f) => ({ ...f }));
  drawAttachments();
  editing.hidden = false;
  prompt.focus();
}

function cancelEdit() {
  if (editingId === null) return;
  editingId = null;
  editing.hidden = true;
  prompt.value = "";
  pending = [];
  pendingFiles = [];
  drawAttachments();
}

// ---- the model picker ------------------------------------------------------------------
// Short names (chat-core.js modelLabel), with what a model does beside it where there is room;
// the full id in each option's tooltip and the picker's.
let labels = new Map(), tags = {};
const modelName = (id) => labels.get(id) ?? String(id).split("/").pop();
const currentModel = () => modelSelect.value || defaultModel;

function drawModels() {
  for (const option of modelSelect.options) {
    if (!option.value) continue;
    const said = tags[option.value] ?? [];
    option.textContent = said.length && !phone.matches ? `${modelName(option.value)} (${said.join(", ")})` : modelName(option.value);
    option.title = said.length ? `${option.value} (${said.join(", ")})` : option.value;
  }
  modelSelect.title = currentModel();
  for (const by of log.querySelectorAll(".by-model[data-model]")) if (by.dataset.model) by.textContent = modelName(by.dataset.model);
}
phone.addEventListener("change", () => { drawModels(); if (!off) prompt.placeholder = promptText(); });

// ---- images -------------------------------------------------------------------------------
/** Why the composer takes no image now, or null when it does. */
function noImagesBecause() {
  if (off) return "The chat is turned off for now.";
  if (!ready) return "The list of models is still loading: try again in a moment.";
  if (capabilities === null || limits.maxImages === 0) return "This chat service does not take images.";
  if (!capabilities[currentModel()]?.vision) return `${modelName(currentModel())} reads text only: choose a model that reads images to attach one.`;
  return null;
}

function drawImageControls() {
  const why = noImagesBecause();
  attach.setAttribute("aria-disabled", String(why !== null));
  attach.title = why ?? `Attach an image (PNG, JPEG, GIF or WebP${limits.maxImageBytes ? `, up to ${(limits.maxImageBytes / 1048576).toFixed(0)} MB` : ""}); you can also paste or drop one`;
  attachNote.textContent = why ?? "You can also paste or drop an image into the message box.";
}

function drawAttachments() {
  attachments.replaceChildren();
  attachments.hidden = pending.length === 0 && pendingFiles.length === 0;
  pendingFiles.forEach((file, i) => {
    const remove = el("button", { type: "button", class: "remove-file", "aria-label": `Remove file: ${file.name}` }, "✕");
    remove.addEventListener("click", () => {
      pendingFiles.splice(i, 1);
      drawAttachments();
      (attachments.querySelector(".remove-file, .remove") ?? prompt).focus();
    });
    attachments.append(el("li", { class: "file-chip", title: file.name }, el("span", { class: "file-name" }, file.name), el("span", { class: "file-size" }, sizeOf(file.bytes)), remove));
  });
  pending.forEach((image, i) => {
    const remove = el("button", { type: "button", class: "remove", "aria-label": `Remove image: ${image.name}` }, "✕");
    remove.addEventListener("click", () => {
      pending.splice(i, 1);
      drawAttachments();
      (attachments.querySelector(".remove") ?? prompt).focus();
    });
    const img = IMAGE_DATA_URL.test(image.url) ? el("img", { src: image.url, alt: image.name, class: "thumb" }) : el("span", { class: "name" }, image.name);
    attachments.append(el("li", { title: image.name }, img, remove));
  });
}

const readAsDataURL = (file) => new Promise((resolve, reject) => {
  const reader = new FileReader();
  reader.onload = () => resolve(String(reader.result));
  reader.onerror = () => reject(reader.error);
  reader.readAsDataURL(file);
});

/** Files dropped or pasted: images as images, files of text as text, the rest refused in words. */
async function addFiles(files) {
  const all = [...files];
  const images = all.filter((f) => f.type.startsWith("image/"));
  const texts = all.filter((f) => !f.type.startsWith("image/"));
  if (texts.length) await addTextFiles(texts);
  if (images.length && composerError.hidden) await addImages(images);
}

// Documents Workers AI converts to Markdown (POST /api/v1/files/markdown, the AI binding's
// toMarkdown): by type, or by name when the browser names no type.
const DOCUMENTS = {
  pdf: "application/pdf",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  odt: "application/vnd.oasis.opendocument.text",
  ods: "application/vnd.oasis.opendocument.spreadsheet",
};
const DOCUMENT_BYTES = 10 * 1024 * 1024;
const documentType = (file) => (Object.values(DOCUMENTS).includes(file.type) ? file.type : DOCUMENTS[/\.(\w+)$/.exec(file.name)?.[1]?.toLowerCase()] ?? null);

/** A document as a file of text (its Markdown), or why it could not be, in words. */
async function convertDocument(file, type) {
  if (file.size > DOCUMENT_BYTES) return `“${file.name}” is ${sizeOf(file.size)}; a document can be up to ${sizeOf(DOCUMENT_BYTES)} to be read.`;
  showComposerError("");
  attachments.hidden = false;
  const reading = el("li", { class: "file-chip reading", role: "status" }, el("span", { class: "file-name" }, `Reading ${file.name}…`));
  attachments.append(reading);
  readingDocuments++;
  try {
    const response = await fetch("/api/v1/files/markdown", { method: "POST", headers: { "content-type": type, "x-file-name": encodeURIComponent(file.name) }, body: file });
    const json = await response.json().catch(() => null);
    if (!response.ok) return `“${file.name}” could not be read: ${json?.message ?? `HTTP ${response.status}`}`;
    const text = String(json.markdown ?? "");
    if (!text.trim()) return `“${file.name}” has no text to read (a scanned document, perhaps).`;
    return { name: file.name, type, bytes: file.size, text };
  } catch (err) {
    return `“${file.name}” could not be read: the service was not reachable (${err.message}).`;
  } finally {
    readingDocuments--;
    reading.remove();
  }
}
let readingDocuments = 0;   // documents being converted: the message waits for them

async function addTextFiles(files) {
  if (off) { showComposerError("The chat is turned off for now."); return; }
  for (const file of files) {
    const document = documentType(file);
    if (document) {
      const converted = await convertDocument(file, document);
      if (typeof converted === "string") { showComposerError(converted); return; }
      pendingFiles.push(converted);
      continue;
    }
    if (!isTextFile(file.name, file.type)) {
      showComposerError(`“${file.name || "The file"}” is neither an image nor a file of text: attach text, Markdown, code, CSV or JSON files, or PNG, JPEG, GIF or WebP images.`);
      return;
    }
    const text = file.size <= 4 * 1024 * 1024 ? await file.text() : "";
    const read = { name: file.name || "pasted text", type: file.type || "text/plain", bytes: file.size, text };
    const problem = checkTextFile(read);
    if (problem) { showComposerError(problem); return; }
    pendingFiles.push(read);
  }
  showComposerError("");
  drawAttachments();
}

async function addImages(files) {
  const images = [...files];
  if (images.length === 0) return;
  const why = noImagesBecause();
  if (why) { showComposerError(why); return; }
  for (const file of images) {
    if (!IMAGE_TYPES.includes(file.type)) { showComposerError(`“${file.name || "The file"}” is not a PNG, JPEG, GIF or WebP image.`); return; }
    const url = await readAsDataURL(file);
    const image = { name: file.name || `pasted ${file.type.slice(6)} image`, type: file.type, bytes: imageBytes(url), url };
    const problem = checkImages([...pending, image], limits);
    if (problem) { showComposerError(problem); return; }
    pending.push(image);
  }
  showComposerError("");
  drawAttachments();
}

attach.addEventListener("click", () => {
  const why = noImagesBecause();
  if (why) showComposerError(why);
  else fileInput.click();
});
fileInput.addEventListener("change", () => { addImages(fileInput.files); fileInput.value = ""; });
const textInput = $("text-file");
$("attach-text").addEventListener("click", () => { if (off) showComposerError("The chat is turned off for now."); else textInput.click(); });
textInput.addEventListener("change", async () => { await addTextFiles(textInput.files); textInput.value = ""; });
prompt.addEventListener("paste", (event) => {
  const files = [...(event.clipboardData?.files ?? [])];
  if (files.length === 0) return;
  event.preventDefault();
  addFiles(files);
});
form.addEventListener("dragover", (event) => { if (event.dataTransfer?.types.includes("Files")) { event.preventDefault(); form.classList.add("dropping"); } });
form.addEventListener("dragleave", () => form.classList.remove("dropping"));
form.addEventListener("drop", (event) => {
  form.classList.remove("dropping");
  if (!event.dataTransfer?.files.length) return;
  event.preventDefault();
  addFiles(event.dataTransfer.files);
});

// ---- sending ------------------------------------------------------------------------------
function setBusy(busy) {
  send.hidden = busy;
  send.disabled = busy || off;
  stop.hidden = !busy;
  stop.disabled = !busy;
  log.setAttribute("aria-busy", String(busy));
}

function showComposerError(text) {
  composerError.textContent = text;
  composerError.hidden = !text;
}

function regenerate(chat, id) {
  if (inFlight) return;
  const versions = regenerateFrom(chat, id);
  save();
  drawChat();
  ask(chat, { versions });
}

function continueAnswer(chat, answer) {
  if (inFlight) return;
  ask(chat, { continuing: answer });
}

function streamingView(answer) {
  const div = el("article", { class: "msg assistant streaming", "data-id": answer.id, "aria-label": "Answer" });
  const textBox = el("div", { class: "text markdown" });
  div.append(byView(answer.model), textBox);
  return { div, textBox };
}

async function ask(chat, { versions = {}, continuing = null } = {}) {
  if (!ready && !(await waitForModels(chat, continuing))) return;
  const body = {};
  if (modelSelect.value) body.model = modelSelect.value;
  Object.assign(body, settingsBody(chat, limits));
  chat.model = modelSelect.value;
  // A chat keeps the Think choice it was first answered with (then its own toggles).
  const control = thinkControls[currentModel()];
  if (control) chat.think = thinkOf(chat, lastThink());
  Object.assign(body, thinkBody(chat.think, control));
  const vision = capabilities?.[currentModel()]?.vision === true;
  const messages = sendableMessages(chat, { images: vision, reasoning: capabilities !== null });
  if (continuing) messages.push({ role: "user", content: CONTINUE_PROMPT });
  const fit = fitConversation(messages, limits, { extra: body, budgetBytes: chat.budgetBytes ?? Infinity });
  const wasNearBottom = nearBottom();
  let answer;
  if (continuing) {
    answer = continuing;
    Object.assign(answer, { outcome: null });
    delete answer.stopReason;
  } else {
    answer = { id: newId(), role: "assistant", content: "", outcome: null, ...versions };
    chat.messages.push(answer);
  }
  answer.model = currentModel();   // ask() runs once the models are known (waitForModels)
  delete answer.trimmed;
  if (fit.dropped || fit.shortened || fit.imagesDropped) answer.trimmed = { dropped: fit.dropped, shortened: fit.shortened, imagesDropped: fit.imagesDropped };
  const unsentImages = vision ? 0 : chat.messages.reduce((n, m) => n + (m.role === "user" && !m.rejected ? m.images?.length ?? 0 : 0), 0);
  if (unsentImages) answer.textOnly = unsentImages; else delete answer.textOnly;
  $("empty")?.remove();
  const { div, textBox } = streamingView(answer);
  const old = continuing ? log.querySelector(`[data-id="${answer.id}"]`) : null;
  if (old) old.replaceWith(div); else log.append(div);
  keepInView(wasNearBottom);

  if (!fit.fits) {
    const question = chat.messages.findLast((m) => m.role === "user");
    if (question && !continuing) question.rejected = true;
    Object.assign(answer, { outcome: "failed", error: { code: fit.reason, status: 0, retryAfter: null, message: "" } });
    endAnswer(chat, div, answer);
    return;
  }

  const result = await followAnswer(chat, answer, div, textBox, continuing, (signal, callbacks) => (durable
    ? durableTurn(chat, fit.messages, body, signal, callbacks)
    : streamChat({ messages: fit.messages, ...body }, { signal, ...callbacks })));
  if (durable) await keptDetails(chat, answer, result);
  if (result.error?.code === "ai_unavailable") setOff(true);
  if (result.error) {
    const said = describeError(answer.error, limits);
    const question = chat.messages.findLast((m) => m.role === "user");
    if (said.rejected && question && !continuing) {
      question.rejected = true;
      log.querySelector(`[data-id="${question.id}"]`)?.replaceWith(messageView(chat, question));
    }
    if (said.shrink) chat.budgetBytes = Math.floor(new TextEncoder().encode(JSON.stringify({ messages: fit.messages, ...body })).length * 0.6);
  }
  endAnswer(chat, div, answer);
}

/**
 * An answer asked for before GET /api/v1/models answered (a slow network) waits for it, drawn
 * as an answer about to be written: it then goes the way later ones go (the chosen model, the
 * limits, a durable conversation when the service keeps them). Stop, or leaving the chat,
 * cancels the wait. Resolves true when the answer may go ahead.
 */
async function waitForModels(chat, continuing) {
  const controller = new AbortController();
  inFlight = { controller, chatId: chat.id, stopping: false };
  setBusy(true);
  const { div } = streamingView({ id: "" });
  if (!continuing) {
    $("empty")?.remove();
    log.append(div);
    log.scrollTop = log.scrollHeight;
  }
  const go = await new Promise((resolve) => {
    modelsReady.then(() => resolve(true));
    controller.signal.addEventListener("abort", () => resolve(false), { once: true });
  });
  div.remove();
  inFlight = null;
  setBusy(false);
  return go && state.chats.includes(chat);
}

/**
 * Follows one answer into its view until it ends (`run(signal, callbacks)` streams it); the
 * answer gets its text, outcome, usage, thinking and error. Resolves with the stream's result.
 */
async function followAnswer(chat, answer, div, textBox, continuing, run) {
  const controller = new AbortController();
  const flight = { controller, chatId: chat.id, stopping: false };
  inFlight = flight;
  setBusy(true);
  const before = continuing ? answer.content : "";
  // Each render follows the answer if the reader was at the bottom just before it: one who
  // scrolled up stays where they are.
  const follow = (draw) => { const stick = nearBottom(); draw(); keepInView(stick); updateJump(); };
  const md = new StreamingMarkdown(textBox, before, { frame: follow });
  if (continuing && answer.thinking) div.querySelector(".by").after(thinkingView(answer));
  let thinking = null, thinkingStarted = 0, thinkingEnded = 0, firstAt = 0, thought = "";
  const started = performance.now();
  const result = await run(controller.signal, {
    onThinking: (text) => {
      if (!firstAt) firstAt = performance.now();
      if (!thinking) {
        thinkingStarted = performance.now();
        const view = thinkingView({});
        view.open = true;            // the reasoning is visible while it streams
        div.querySelector(".by").after(view);
        thinking = view.querySelector(".thinking-text").appendChild(document.createTextNode(""));
      }
      // Drawn once per frame, as the answer is: a layout per token would hold the page up.
      if (!thought) requestAnimationFrame(() => follow(() => { thinking.appendData(thought); thought = ""; }));
      thought += text;
      thinkingEnded = performance.now();
    },
    onText: (text) => {
      if (!firstAt) firstAt = performance.now();
      if (thinking && !md.text.length) div.querySelector(".thinking").open = false;
      md.append(text);
    },
  });
  await md.finish();
  const ended = performance.now();
  inFlight = null;
  setBusy(false);
  // A durable answer stopped by the user ends as the server says: stop_reason "cancelled".
  const outcome = result.stopReason === "cancelled" ? "aborted" : result.outcome;
  // Left while it was being written (another chat was opened): it goes on in its conversation.
  if (durable && result.outcome === "aborted" && !flight.stopping) chat.stale = true;
  Object.assign(answer, {
    content: before + result.text, outcome, stopReason: result.stopReason, whileThinking: result.whileThinking,
  });
  if (result.model) answer.model = result.model;   // a fallback answered
  const usage = result.usage && continuing?.usage ? { ...result.usage, completion_tokens: (result.usage.completion_tokens ?? 0) + (continuing.usage.completion_tokens ?? 0) } : result.usage;
  Object.assign(answer, { usage: usage ?? null, ms: Math.round(ended - started) + (continuing?.ms ?? 0), writingMs: Math.round(firstAt ? ended - firstAt : 0) + (continuing?.writingMs ?? 0), at: Date.now() });
  if (result.thinking) Object.assign(answer, { thinking: (continuing?.thinking ?? "") + result.thinking, thinkingMs: Math.round(thinkingEnded - thinkingStarted) });
  if (result.error) {
    const { code, message, status, retryAfter } = result.error;
    answer.error = { code, message, status, retryAfter };
  } else delete answer.error;
  return result;
}

// ---- durable conversations (durable-chats.js) ------------------------------------------
/**
 * One message to the chat's conversation, in a new one started from `messages` but the last
 * when the server's history is not what the page would send (needsFork). Resolves like streamChat.
 */
async function durableTurn(chat, messages, body, signal, callbacks, again = true) {
  const history = messages.slice(0, -1), content = messages.at(-1).content;
  if (needsFork(chat, history)) {
    try {
      const old = chat.conversation;
      chat.conversation = await createConversation({ messages: history, details: historyDetails(chat, history), model: body.model });
      chat.serverMessages = history;
      save();   // the list has the id before the answer starts: a reload finds it
      if (old) deleteConversation(old).catch(() => {});
    } catch (err) {
      if (signal.aborted) return { outcome: "aborted", text: "", thinking: "", stopReason: null, whileThinking: false, usage: null, error: null };
      const error = err instanceof ChatError ? err : new ChatError("network_error", `Could not reach the service: ${err.message}`);
      return { outcome: "failed", text: "", thinking: "", stopReason: null, whileThinking: false, usage: null, error };
    }
  }
  let told = false;
  const onEvent = () => { if (!told) { told = true; tellOtherTabs(chat.conversation); } };
  const result = await streamConversation(chat.conversation, { content, ...body }, { signal, onEvent, ...callbacks });
  chat.serverMessages = historyAfter(history, content, result);
  if (again && result.error?.status === 404) {   // deleted elsewhere (another tab forked it): start it again
    chat.serverMessages = null;
    return durableTurn(chat, messages, body, signal, callbacks, false);
  }
  return result;
}

/**
 * What the conversation kept under the answer that just ended (its model, ending, usage and
 * times: durable-chats.js applyDetails) replaces what this page measured, so that it is drawn
 * now as it will be after a reload or in another tab. The answer is filed as its turn ends,
 * a moment after its last event: asked again until the conversation says it is not streaming.
 */
async function keptDetails(chat, answer, result) {
  const filed = result.outcome === "complete" || result.outcome === "aborted" || (result.outcome === "failed" && result.error?.status === 200);
  if (!filed || !chat.conversation || chat.stale) return;
  for (let attempt = 0; attempt < 8; attempt++) {
    let got;
    try { got = await getConversation(chat.conversation); } catch { return; }
    if (!got) return;
    const last = got.messages?.at(-1);
    if (!got.streaming) {
      if (last?.role === "assistant" && last.details && last.content === answer.content) applyDetails(answer, last.details);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100 * (attempt + 1)));
  }
}

/** The answer the chat's conversation is writing (or last wrote), read from its start, in place. */
async function resumeAnswer(chat) {
  const answer = { id: newId(), role: "assistant", content: "", outcome: null };
  chat.messages.push(answer);
  $("empty")?.remove();
  const { div, textBox } = streamingView(answer);
  log.append(div);
  log.scrollTop = log.scrollHeight;
  const result = await followAnswer(chat, answer, div, textBox, null,
    (signal, callbacks) => resumeConversation(chat.conversation, null, { signal, ...callbacks }));
  await keptDetails(chat, answer, result);
  const history = chat.serverMessages;
  const question = history?.at(-1);
  chat.serverMessages = question?.role === "user" && result.outcome !== "aborted" ? historyAfter(history.slice(0, -1), question.content, result) : null;
  endAnswer(chat, div, answer);
}

// Other tabs of this browser hear of an answer being written (a `storage` event: the key is
// written once per answer, when its first event arrives) and follow it too.
const LIVE_KEY = "ai-chat:conversations:live";
function tellOtherTabs(conversation) {
  try { localStorage.setItem(LIVE_KEY, JSON.stringify({ conversation, at: Date.now() })); } catch { /* full: they read it on their next load */ }
}
/** A chat begun in another tab: listed (read from the server), not opened. */
function adopt(entry) {
  if (state.chats.some((c) => c.conversation === entry.conversation)) return;
  const chat = chatFromServer(entry, null);
  state.chats.unshift(chat);
  loadConversation(chat);
}
/**
 * The other tab's list changed: a conversation it forked (a new id where the old one was) is
 * followed here too; its new chats are listed; the ones it deleted go (unless open here).
 */
function followList(oldValue, newValue) {
  const read = (value) => loadDurable({ getItem: () => value }).chats.map((c) => c.conversation);
  const before = read(oldValue), now = read(newValue);
  now.forEach((id, i) => {
    const old = before[i], chat = state.chats.find((c) => c.conversation === old);
    if (!old || old === id || now.includes(old) || before.includes(id) || !chat || chat.id === inFlight?.chatId) return;
    chat.conversation = id;   // forked there: the same chat here
    if (chat.id === state.currentId) loadConversation(chat);
  });
  const gone = new Set(before.filter((id) => !now.includes(id)));
  const count = state.chats.length;
  state.chats = state.chats.filter((c) => !gone.has(c.conversation) || c.id === state.currentId || c.id === inFlight?.chatId);
  if (state.chats.length !== count) drawChatList();
  for (const entry of loadDurable({ getItem: () => newValue }).chats.reverse()) adopt(entry);
}
addEventListener("storage", (event) => {
  if (!durable || !event.newValue) return;
  if (event.key === DURABLE_KEY) { followList(event.oldValue, event.newValue); return; }
  if (event.key !== LIVE_KEY) return;
  let conversation;
  try { ({ conversation } = JSON.parse(event.newValue)); } catch { return; }
  const chat = state.chats.find((c) => c.conversation === conversation);
  if (chat?.id === state.currentId && !inFlight) loadConversation(chat);
});

/** Reads a chat back from its conversation; a conversation that is gone leaves the list. */
async function loadConversation(chat) {
  let got;
  try { got = await getConversation(chat.conversation); } catch { return; }   // unreachable now: kept as it is
  if (!state.chats.includes(chat) || inFlight?.chatId === chat.id) return;   // gone, or being answered here
  if (got === null) {
    const wasCurrent = chat.id === state.currentId;
    deleteChat(state, chat.id);
    if (wasCurrent && !currentChat(state)) begin().model = modelSelect.value;
    save();
    if (wasCurrent) drawChat(); else drawChatList();
    return;
  }
  const fresh = chatFromServer(chat, got);
  Object.assign(chat, { messages: fresh.messages, serverMessages: fresh.serverMessages });
  delete chat.stale;
  const isCurrent = chat.id === state.currentId;
  if (!isCurrent) { drawChatList(); return; }
  drawChat();
  if (inFlight) return;
  if (got.streaming || chat.messages.at(-1)?.role === "user") resumeAnswer(chat);
  else if (chat.messages.at(-1)?.role === "assistant" && !chat.messages.at(-1).model) readEnding(chat);   // kept before details were
}

/**
 * How the last answer ended (its stop reason: Continue after a length cut, Stopped) is in its
 * stored events, not in the history: read once when the chat is read back.
 */
async function readEnding(chat) {
  const last = chat.messages.at(-1);
  const result = await resumeConversation(chat.conversation, null, { retries: 0 });
  if (chat.messages.at(-1) !== last || result.outcome !== "complete" || inFlight?.chatId === chat.id) return;
  Object.assign(last, { stopReason: result.stopReason, whileThinking: result.whileThinking, usage: result.usage });
  if (result.stopReason === "cancelled") last.outcome = "aborted";
  if (chat.id === state.currentId) log.querySelector(`[data-id="${last.id}"]`)?.replaceWith(messageView(chat, last));
}

/** The chats of the saved list, each read from the server; the current one first. */
async function useConversations() {
  durable = true;
  layout.dataset.chats = "server";   // for whoever looks (tests): the chats live on the server
  owner = loadOwnerToken(localStorage);   // the server lists this browser's chats under it
  useOwnerToken(owner);
  $("tab-owner").hidden = false;
  const saved = loadDurable(localStorage);
  // Chats written in before the model list came stay, first, the open one open; their next
  // message starts their conversation. They leave the browser-only list they were saved in.
  const kept = state.chats.filter((c) => early.has(c) && c.messages.length > 0);
  const keepOpen = kept.some((c) => c.id === state.currentId);
  if (kept.length) {
    const local = loadState(localStorage);
    local.chats = local.chats.filter((c) => !kept.some((k) => k.id === c.id));
    saveState(localStorage, local);
  }
  state.chats = [...kept, ...saved.chats.map((entry) => chatFromServer(entry, null))];
  if (!keepOpen) state.currentId = state.chats.find((c) => c.conversation === saved.currentId)?.id ?? null;
  if (!currentChat(state)) begin().model = modelSelect.value;
  if (keepOpen) drawChatList(); else drawChat();
  markReady();   // an answer that waited goes on now, into a conversation; the chats load meanwhile
  // The chats this token owns that this browser does not know (made on another device), after
  // the ones it knows; no list (no index on this deployment, offline): the saved list alone.
  const listed = await listConversations().catch(() => null);
  const added = listedEntries({ chats: state.chats }, listed).map((entry) => chatFromServer(entry, null));
  if (added.length) { state.chats.push(...added); save(); drawChatList(); }
  const current = currentChat(state);
  const rest = state.chats.filter((c) => c !== current && c.conversation);
  await Promise.all([current, ...rest].filter((c) => c.conversation).map(loadConversation));
}

function stopAnswer() {
  if (!inFlight) return;
  const chat = state.chats.find((c) => c.id === inFlight.chatId);
  if (!durable || !chat?.conversation) { inFlight.controller.abort(); return; }
  // The server ends the answer (stop_reason "cancelled") for every tab that follows it.
  const flight = inFlight;
  flight.stopping = true;
  stopConversation(chat.conversation).catch(() => flight.controller.abort());
}

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A durable chat's versions, kept in its conversation (a reload and other tabs show them). */
function shareBranches(chat) {
  if (!durable || !chat.conversation) return;
  const branches = branchesOf(chat);
  if (branches || chat.sharedBranches) keepBranches(chat.conversation, branches).catch(() => {});
  chat.sharedBranches = branches !== null;
}

/** The end of an answer, in a few tasks: after a long answer each costs a layout of all of it. */
async function endAnswer(chat, div, answer) {
  const stick = nearBottom();
  const summary = div.querySelector(".thinking summary");
  if (summary) summary.textContent = thoughtFor(answer.thinkingMs);
  const details = div.querySelector(".thinking");
  if (details) details.open = false;
  finishView(chat, div, answer);
  touchChat(state, chat);
  shareBranches(chat);
  keepInView(stick);
  prompt.focus();
  await nextTask();
  save();
  drawChatList();
  updateJump();
  await nextTask();
  const said = answer.outcome === "failed" || answer.outcome === "cut" ? describeError(answer.error, limits).text
    : answer.whileThinking ? "The model ran out of length while thinking; no answer."
    : answer.outcome === "aborted" ? "Stopped." : `Answer: ${plainText(div.querySelector(".text"))}`;
  announce(said);
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const content = prompt.value;
  if ((!content.trim() && pending.length === 0 && pendingFiles.length === 0 && readingDocuments === 0) || inFlight || off) return;
  if (readingDocuments > 0) { showComposerError("A document is still being read: send the message once it shows as attached."); return; }
  const chars = countChars(withFiles(content, pendingFiles));
  if (chars > limits.maxMessageChars) {
    showComposerError(`This message${pendingFiles.length ? ", with its files," : ""} is ${chars.toLocaleString("en-US")} characters; the service takes at most ${limits.maxMessageChars.toLocaleString("en-US")}. Shorten it${pendingFiles.length ? " or remove a file" : ""} to send it.`);
    return;
  }
  if (pending.length) {
    const problem = noImagesBecause() ?? checkImages(pending, limits);
    if (problem) { showComposerError(`${problem} Or remove the images to send the text alone.`); return; }
    const bytes = pending.reduce((n, i) => n + i.url.length, 0);
    if (bytes > limits.maxBodyBytes) {
      showComposerError(`These images take ${(bytes / 1048576).toFixed(1)} MB to send; the service takes at most ${(limits.maxBodyBytes / 1048576).toFixed(1)} MB per message. Remove some.`);
      return;
    }
  }
  showComposerError("");
  const images = pending.map((i) => ({ ...i }));
  const files = pendingFiles.map((f) => ({ ...f }));
  let chat = currentChat(state) ?? begin();
  if (!ready) early.add(chat);
  if (editingId !== null) {
    editMessage(chat, editingId, content, images, files);
    editingId = null;
    editing.hidden = true;
    drawChat();
  } else {
    const message = { id: newId(), role: "user", content };
    if (files.length) message.files = files;
    if (images.length) message.images = images;
    chat.messages.push(message);
    $("empty")?.remove();
    log.append(messageView(chat, message));
  }
  pending = [];
  pendingFiles = [];
  drawAttachments();
  touchChat(state, chat);
  save();
  drawChatList();
  prompt.value = "";
  log.scrollTop = log.scrollHeight;   // the one who just sent follows the answer
  ask(chat);
});

prompt.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    form.requestSubmit();
  }
});

// Keyboard shortcuts (the list: index.html #shortcuts). Ctrl or ⌘ alike.
const MAC = /Mac|iPhone|iPad/.test(navigator.platform);
if (MAC) {
  for (const kbd of shortcuts.querySelectorAll("kbd[data-mod]")) kbd.textContent = "⌘";
  $("clear").title = "New chat (⌘+Shift+O)";
  $("clear").setAttribute("aria-keyshortcuts", "Meta+Shift+O");
  $("shortcuts-open").setAttribute("aria-keyshortcuts", "Meta+/");
}
function openShortcuts() {
  if (settings.open || shortcuts.open) return;
  shortcuts.showModal();
}
document.addEventListener("keydown", (event) => {
  const mod = event.ctrlKey || event.metaKey;
  if (mod && event.shiftKey && event.key.toLowerCase() === "o") {
    event.preventDefault();
    if (!settings.open && !shortcuts.open) newChat();
    return;
  }
  if (mod && event.key === "/") { event.preventDefault(); openShortcuts(); return; }
  if (event.key !== "Escape" || settings.open || shortcuts.open) return;
  if (drawerOpen()) { event.preventDefault(); closeDrawer(); }
  else if (inFlight) { event.preventDefault(); stopAnswer(); }
  else if (editingId !== null) cancelEdit();
});
$("shortcuts-open").addEventListener("click", openShortcuts);

// ---- settings: this chat's, and the ones new chats start with -------------------------------
// Two panels of the same three fields: "This chat" (#system, ...) and "New chats" (#default-system, ...).
const fieldsOf = (prefix) => ({ system: $(`${prefix}system`), temperature: $(`${prefix}temperature`), maxTokens: $(`${prefix}max-tokens`) });
const chatFields = fieldsOf(""), newFields = fieldsOf("default-");
const tabs = [$("tab-chat"), $("tab-new"), $("tab-owner"), $("tab-look")];   // "Your chats": durable chats only
let openedWith = "";   // "This chat" as the dialog opened: untouched, an empty chat takes new defaults

function fillFields(fields, s) {
  fields.system.value = s?.system ?? "";
  const said = $(`${fields.system.id}-owner`);
  said.textContent = owned.systemPrompt ? `Empty: the owner's prompt for every chat, “${owned.systemPrompt}”. Yours replaces it.` : "Empty: none.";
  fields.system.placeholder = owned.systemPrompt || "e.g. Answer briefly, in plain English.";
  fields.temperature.value = s?.temperature ?? "";
  fields.maxTokens.value = s?.maxTokens ?? "";
  if (limits.maxTokensLimit) fields.maxTokens.max = String(limits.maxTokensLimit); else fields.maxTokens.removeAttribute("max");
  $(fields.maxTokens.getAttribute("aria-describedby")).textContent = limits.maxTokensLimit
    ? `Up to ${limits.maxTokensLimit.toLocaleString("en-US")}; empty: the service's default${limits.defaultMaxTokens ? ` (${limits.defaultMaxTokens.toLocaleString("en-US")})` : ""}.`
    : "Empty: the service's default.";
}

/** { settings } from a panel's fields, or { error } in words. */
function readFields(fields) {
  const t = fields.temperature.value === "" ? null : Number(fields.temperature.value);
  const m = fields.maxTokens.value === "" ? null : Number(fields.maxTokens.value);
  const error = t !== null && !(t >= 0 && t <= 5) ? "Temperature goes from 0 to 5."
    : m !== null && !(Number.isInteger(m) && m >= 1 && (!limits.maxTokensLimit || m <= limits.maxTokensLimit))
      ? `Max tokens is a whole number from 1${limits.maxTokensLimit ? ` to ${limits.maxTokensLimit.toLocaleString("en-US")}` : ""}.` : "";
  return error ? { error } : { settings: { system: fields.system.value, temperature: t, maxTokens: m } };
}

function showTab(tab, focus = false) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
    $(t.getAttribute("aria-controls")).hidden = !on;
  }
  if (focus) tab.focus();
}
for (const tab of tabs) {
  tab.addEventListener("click", () => showTab(tab));
  tab.addEventListener("keydown", (event) => {
    const shown = tabs.filter((t) => !t.hidden);
    const at = shown.indexOf(tab);
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: shown.length - 1 }[event.key];
    if (to === undefined) return;
    event.preventDefault();
    showTab(shown[(to + shown.length) % shown.length], true);
  });
}

function openSettings() {
  const chat = currentChat(state) ?? begin();
  fillFields(chatFields, chat.settings);
  fillFields(newFields, defaults);
  openedWith = JSON.stringify(readFields(chatFields));
  $("owner-token").value = owner ?? "";
  $("owner-token-paste").value = "";
  $("owner-token-error").hidden = true;
  showTab(tabs[0]);
  $("settings-error").hidden = true;
  settings.showModal();
}

// "Your chats": the owner token, to copy here and paste on another device, which then lists
// the same chats (the page reloads under the pasted token).
$("owner-token-copy").addEventListener("click", (event) => copyText(owner ?? "", event.currentTarget));
$("owner-token-use").addEventListener("click", () => {
  const pasted = ownerToken($("owner-token-paste").value);
  const error = $("owner-token-error");
  if (!pasted) {
    error.textContent = "That is not an owner token: it is 32 hex digits (0-9, a-f), as shown above on the other device.";
    error.hidden = false;
    $("owner-token-paste").focus();
    return;
  }
  try { localStorage.setItem(OWNER_KEY, pasted); } catch { /* full: it is used for this visit only */ }
  location.reload();
});

$("settings-form").addEventListener("submit", (event) => {
  if (event.submitter?.value !== "save") return;
  const mine = readFields(chatFields), fresh = readFields(newFields);
  const failed = mine.error ? [tabs[0], mine.error] : fresh.error ? [tabs[1], `New chats: ${fresh.error}`] : null;
  if (failed) {
    event.preventDefault();
    showTab(failed[0]);
    $("settings-error").textContent = failed[1];
    $("settings-error").hidden = false;
    return;
  }
  const chat = currentChat(state) ?? begin();
  const changed = JSON.stringify(cleanSettings(fresh.settings)) !== JSON.stringify(defaults);
  defaults = cleanSettings(fresh.settings);
  if (changed) saveDefaults(localStorage, defaults);
  // A chat not yet begun, whose own settings were left alone, is one of the new chats.
  chat.settings = changed && chat.messages.length === 0 && JSON.stringify(mine) === openedWith ? { ...defaults } : mine.settings;
  save();
  drawChatList();
});
settings.addEventListener("close", () => $("settings-open").focus());

function download(name, type, text) {
  const a = el("a", { href: URL.createObjectURL(new Blob([text], { type })), download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}
const fileName = (chat, ext) => `${chatTitle(chat).replace(/[^\p{L}\p{N}]+/gu, "-").replace(/^-|-$/g, "").slice(0, 60) || "chat"}.${ext}`;
$("export-md").addEventListener("click", () => { const c = currentChat(state); if (c) { download(fileName(c, "md"), "text/markdown", chatToMarkdown(c)); announce("Chat exported as Markdown."); } });
$("export-json").addEventListener("click", () => { const c = currentChat(state); if (c) { download(fileName(c, "json"), "application/json", chatToJSON(c)); announce("Chat exported as JSON."); } });

stop.addEventListener("click", stopAnswer);
$("clear").addEventListener("click", newChat);
$("settings-open").addEventListener("click", openSettings);
$("cancel-edit").addEventListener("click", () => { cancelEdit(); prompt.focus(); });
menu.addEventListener("click", () => {
  const open = menu.getAttribute("aria-expanded") !== "true";
  setMenu(open);
  if (open && phone.matches) search.focus();
});
search.addEventListener("input", drawChatList);
modelSelect.addEventListener("change", () => {
  const chat = currentChat(state);
  if (chat) { chat.model = modelSelect.value; save(); }
  modelSelect.title = currentModel();
  drawImageControls();
  drawThink();
});

// ---- Think: the toggle beside the message box, for a model that reasons --------------------
// Each chat keeps its own choice (it is sent with every message of the chat, as its model is);
// a new chat starts with the last choice made in this browser, as a person who turned thinking
// on (or off) expects it to stay so until they change it; before any, as AI_THINKING says.
function drawThink() {
  const control = thinkControls[currentModel()];
  thinkTools.hidden = !control;
  if (!control) return;
  const fixed = control.kind === "fixed";
  const on = fixed || thinkOf(currentChat(state), lastThink());
  think.setAttribute("aria-pressed", String(on));
  if (fixed) think.setAttribute("aria-disabled", "true"); else think.removeAttribute("aria-disabled");
  think.classList.toggle("partial", !control.canTurnOff);
  const note = thinkNote(control, modelName(currentModel()));
  thinkNoteText.textContent = note;
  think.title = note || "Think before answering: slower, and the thinking counts as tokens";
}
think.addEventListener("click", () => {
  const control = thinkControls[currentModel()];
  if (!control || control.kind === "fixed") return;
  const on = think.getAttribute("aria-pressed") !== "true";
  const chat = currentChat(state) ?? begin();
  chat.think = on;
  chosenThink = on;
  saveThink(localStorage, on);
  save();
  drawThink();
});

// The theme: theme.js applies and keeps the choice; the radios show it.
const themeRadios = [...document.querySelectorAll('input[name="theme"]')];
const drawTheme = () => { for (const r of themeRadios) r.checked = r.value === document.documentElement.dataset.themeChoice; };
for (const radio of themeRadios) {
  radio.addEventListener("change", () => {
    document.dispatchEvent(new CustomEvent("ai-chat:theme", { detail: radio.value }));
    announce(`Theme: ${radio.value === "system" ? "as the device" : radio.value}.`);
  });
}
addEventListener("storage", (event) => { if (event.key === "ai-chat:theme") drawTheme(); });
drawTheme();

// Copy buttons on code blocks: one listener for every answer, drawn now or later.
log.addEventListener("click", (event) => {
  const button = event.target.closest?.(".copy-code");
  if (!button) return;
  button.dataset.label = "Copy";
  copyText(button.closest(".code-block").querySelector("code").textContent, button);
});

// Leaving mid-answer keeps what arrived, marked as cut.
addEventListener("pagehide", () => {
  if (undo) forget(undo.chat, true);
  if (!inFlight || durable) return;   // a durable answer goes on in its conversation
  const chat = state.chats.find((c) => c.id === inFlight.chatId);
  const answer = chat?.messages.at(-1);
  const live = log.querySelector(".msg.streaming .text");
  if (answer && answer.outcome === null) {
    Object.assign(answer, { outcome: "cut", content: live?.textContent ?? "", error: { code: "connection_lost", message: "", status: 0, retryAfter: null } });
    save();
  }
});

/**
 * GET /api/v1/models: the models, the limits, what each model takes, whether chats are durable
 * conversations, and whether the chat is on at all (503 ai_unavailable: the kill switch).
 */
async function loadModels() {
  let response, json;
  try {
    response = await fetch("/api/v1/models", { cache: "no-store" });
    json = await response.json().catch(() => null);
  } catch { return; }   // unreachable now: the default model and limits still work
  if (response.status === 503 && json?.error === "ai_unavailable") { setOff(true); return; }
  if (!response.ok || !json || !Array.isArray(json.models)) return;
  setOff(false);
  limits = limitsFrom(json);
  reasoning = reasoningFrom(json);
  capabilities = capabilitiesFrom(json);
  thinkControls = thinkControlsFrom(json);
  serviceThink = thinkDefaultFrom(json);
  const { models, default: fallback } = json;
  defaultModel = typeof fallback === "string" ? fallback : "";
  labels = modelLabels(models);
  const context = (id) => { const n = capabilities?.[id]?.contextWindow; return n ? `${n >= 1000 ? `${Math.round(n / 1000)}k` : n} context` : null; };
  tags = Object.fromEntries(models.map((id) => [id, [capabilities?.[id]?.vision && "images", reasoning.includes(id) && "thinks", context(id)].filter(Boolean)]));
  usePage(json.page);
  const chosen = modelSelect.value;
  modelSelect.replaceChildren(...models.map((id) => el("option", { value: id, selected: id === fallback })));
  const chat = currentChat(state);
  const want = chat?.model || chosen;
  if (want && models.includes(want)) modelSelect.value = want;
  drawModels();
  drawThink();
  if (json.conversations === true && !durable) await useConversations();
  if (json.signed_in || json.daily_tokens) showWho();   // after: the owner token is known
}

/** The owner's settings: the title in the header and the tab, the suggestions, the prompt. */
function usePage(page) {
  if (!page || typeof page !== "object") return;
  const text = (v) => (typeof v === "string" ? v : "");
  owned = {
    title: text(page.title).trim() || owned.title,
    systemPrompt: text(page.system_prompt),
    suggestions: Array.isArray(page.suggestions) ? page.suggestions.filter((x) => typeof x === "string" && x.trim()) : [],
  };
  document.title = owned.title;
  $("title").textContent = owned.title;
  $("empty")?.replaceWith(emptyView());
}

// ---- the kill switch: shown as the page loads, gone by itself when the service is back -------
const OFF_CHECK_MS = 20000;   // while it is off, the model list is asked again this often (and on focus)
let offTimer = 0, offChecking = false, offCheckedAt = 0;

function setOff(value) {
  if (off === value) return;
  off = value;
  offBanner.hidden = !off;
  prompt.disabled = off;
  prompt.placeholder = off ? "The chat is turned off for now" : promptText();
  send.disabled = off || inFlight !== null;
  drawImageControls();
  clearTimeout(offTimer);
  if (off) {
    offTimer = setTimeout(checkIfBack, OFF_CHECK_MS);
    announce("The chat is turned off for now. This page opens again by itself when it is back.");
  } else {
    announce("The chat is back on.");
    if (document.activeElement === document.body) prompt.focus();
  }
}

async function checkIfBack() {
  if (!off || offChecking || Date.now() - offCheckedAt < 2000) return;
  clearTimeout(offTimer);
  offChecking = true;
  offCheckedAt = Date.now();
  try { await loadModels(); } finally {
    offChecking = false;
    if (off) offTimer = setTimeout(checkIfBack, OFF_CHECK_MS);
  }
}
addEventListener("focus", checkIfBack);
addEventListener("online", checkIfBack);
document.addEventListener("visibilitychange", () => { if (!document.hidden) checkIfBack(); });

// The renderer's first run compiles marked's and DOMPurify's code and expressions: done while
// the page is idle, not in the first frames of the first answer.
const WARM = "# a\n\n*b* **c** `d` [e](https://example.com) ~~f~~\n\n- g\n1. h\n\n> i\n\n| j | k |\n|:-|-:|\n| l | m |\n\n```js\nconst n = 1;\n```\n";
(self.requestIdleCallback ?? setTimeout)(() => renderMarkdown(WARM));

setMenu(!phone.matches);
prompt.placeholder = promptText();
if (!currentChat(state)) begin();
drawChat();
loadModels().finally(markReady);
prompt.focus();

/**
 * GET /api/v1/usage: who is signed in (Cloudflare Access) and today's tokens against the daily
 * budget (OWNER_DAILY_TOKENS), shown beside the title; asked only when the model list says
 * either is on.
 */
async function showWho() {
  let usage;
  try {
    const response = await fetch("/api/v1/usage", { cache: "no-store", headers: owner ? { "x-owner-token": owner } : {} });
    if (!response.ok) return;
    usage = await response.json();
  } catch { return; }
  const parts = [];
  if (usage.signed_in?.email) parts.push(`Signed in as ${usage.signed_in.email}`);
  if (usage.limit != null) {
    const reset = new Date(usage.resets_at * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    parts.push(`${usage.used ?? 0} of ${usage.limit} tokens today (resets ${reset})`);
  }
  $("who").textContent = parts.join(" · ");
  $("who").hidden = !parts.length;
}
