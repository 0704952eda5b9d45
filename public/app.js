// The chat page: saved chats, the conversation sent trimmed to the service's limits, answers
// rendered as sanitized markdown while they stream. Decisions live in chat-core.js; this
// file draws. User text goes into the page with textContent; model text only through
// markdown.js (sanitized, images never loaded).
import { streamChat } from "./chat-client.js";
import {
  DEFAULT_LIMITS, chatTitle, countChars, currentChat, deleteChat, describeError, editMessage, fitConversation, limitsFrom,
  loadState, newId, reasoningFrom, regenerateFrom, saveState, selectChat, sendableMessages, startChat, thoughtFor, touchChat,
} from "./chat-core.js";
import { StreamingMarkdown, renderMarkdown } from "./markdown.js";

const $ = (id) => document.getElementById(id);
const log = $("log"), form = $("composer"), prompt = $("prompt"), send = $("send"), stop = $("stop");
const modelSelect = $("model"), chatList = $("chat-list"), layout = $("layout"), menu = $("menu");
const announcer = $("announcer"), composerError = $("composer-error"), editing = $("editing");

const EMPTY_TEXT = "Ask anything. Answers stream in as they are written.";
const state = loadState(localStorage);
let limits = { ...DEFAULT_LIMITS };
let reasoning = [];
let inFlight = null;       // { controller, chatId }
let editingId = null;

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
  const dropped = saveState(localStorage, state);
  if (dropped > 0) announce(`Browser storage is full: the ${dropped} oldest chats were removed.`);
}

function announce(text) {
  // Cleared first so the same words twice are still read; polite, once per answer.
  announcer.textContent = "";
  requestAnimationFrame(() => { announcer.textContent = text; });
}

// ---- scrolling --------------------------------------------------------------------------
const nearBottom = () => log.scrollHeight - log.scrollTop - log.clientHeight < 48;
const keepInView = (was) => { if (was) log.scrollTop = log.scrollHeight; };

// ---- the chat list ----------------------------------------------------------------------
function drawChatList() {
  chatList.replaceChildren();
  const chats = state.chats.filter((c) => c.messages.length > 0 || c.id === state.currentId);
  if (chats.length === 0) chatList.append(el("li", { class: "none" }, "No chats yet"));
  for (const chat of chats) {
    const title = chatTitle(chat);
    const open = el("button", { type: "button", class: "open", title }, title);
    open.addEventListener("click", () => switchTo(chat.id));
    const del = el("button", { type: "button", class: "delete", "aria-label": `Delete chat: ${title}`, title: "Delete chat" }, "✕");
    del.addEventListener("click", () => removeChat(chat.id));
    const li = el("li", { "aria-current": String(chat.id === state.currentId) }, open, del);
    chatList.append(li);
  }
}

function closeMenuOnPhone() {
  if (matchMedia("(max-width: 760px)").matches) setMenu(false);
}

function setMenu(open) {
  layout.classList.toggle("chats-hidden", !open);
  menu.setAttribute("aria-expanded", String(open));
}

function switchTo(id) {
  if (inFlight) inFlight.controller.abort();
  selectChat(state, id);
  save();
  cancelEdit();
  drawChat();
  closeMenuOnPhone();
  prompt.focus();
}

function removeChat(id) {
  if (inFlight?.chatId === id) inFlight.controller.abort();
  deleteChat(state, id);
  save();
  drawChat();
}

function newChat() {
  if (inFlight) inFlight.controller.abort();
  startChat(state).model = modelSelect.value;
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
  if (!chat || chat.messages.length === 0) log.append(el("p", { class: "empty", id: "empty" }, EMPTY_TEXT));
  else for (const m of chat.messages) log.append(messageView(chat, m));
  if (chat?.model && [...modelSelect.options].some((o) => o.value === chat.model)) modelSelect.value = chat.model;
  drawChatList();
  log.scrollTop = log.scrollHeight;
}

function actionButton(label, text, onClick) {
  const b = el("button", { type: "button", "aria-label": label }, text);
  b.addEventListener("click", onClick);
  return b;
}

async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Copy failed";
  }
  setTimeout(() => { button.textContent = button.dataset.label ?? "Copy"; }, 1500);
}

function messageView(chat, m) {
  if (m.role === "assistant") return assistantView(chat, m);
  const div = el("article", { class: `msg ${m.role}${m.rejected ? " rejected" : ""}`, "data-id": m.id, "aria-label": m.role === "user" ? "You said" : "System" });
  div.append(el("div", { class: "text" }, m.content));
  if (m.rejected) div.append(el("p", { class: "note" }, "Not sent to the model."));
  if (m.role === "user") {
    const copy = actionButton("Copy message", "Copy", (e) => copyText(m.content, e.currentTarget));
    const edit = actionButton("Edit and resend", "Edit", () => startEdit(m));
    div.append(el("div", { class: "actions" }, copy, edit));
  }
  return div;
}

function thinkingView(m) {
  const text = el("div", { class: "thinking-text" }, m.thinking ?? "");
  const summary = el("summary", {}, m.thinkingMs === undefined ? "Thinking…" : thoughtFor(m.thinkingMs));
  return el("details", { class: "thinking" }, summary, text);
}

function assistantView(chat, m) {
  const div = el("article", { class: "msg assistant", "data-id": m.id, "aria-label": "Answer" });
  if (m.outcome) div.dataset.outcome = m.outcome;
  if (m.thinking) div.append(thinkingView(m));
  const text = el("div", { class: "text markdown" });
  if (m.content) text.append(renderMarkdown(m.content));
  div.append(text);
  finishView(chat, div, m);
  return div;
}

/** Notes, error text and buttons under an answer that has ended. */
function finishView(chat, div, m) {
  div.classList.remove("streaming");
  if (m.outcome) div.dataset.outcome = m.outcome;
  const notes = [];
  if (m.trimmed) {
    const parts = [];
    if (m.trimmed.dropped) parts.push(`the ${m.trimmed.dropped} oldest messages were left out`);
    if (m.trimmed.shortened) parts.push(`${m.trimmed.shortened} long ${m.trimmed.shortened === 1 ? "message was" : "messages were"} shortened`);
    notes.push(`To fit the service's limits, ${parts.join(" and ")} of what the model read.`);
  }
  if (m.outcome === "complete" && m.whileThinking) notes.push("The model used up its length limit while still thinking, so there is no answer. Try again, or ask for something shorter.");
  else if (m.outcome === "complete" && m.stopReason === "length") notes.push("The answer reached its length limit.");
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
  if (m.outcome !== "failed" && m.outcome !== "cut") {
    const copy = actionButton("Copy answer", "Copy", (e) => copyText(m.content, e.currentTarget));
    const again = actionButton("Regenerate answer", "Regenerate", () => regenerate(chat, m.id));
    div.append(el("div", { class: "actions" }, copy, again));
  }
}

// ---- editing ------------------------------------------------------------------------------
function startEdit(m) {
  if (inFlight) return;
  editingId = m.id;
  prompt.value = m.content;
  editing.hidden = false;
  prompt.focus();
}

function cancelEdit() {
  if (editingId === null) return;
  editingId = null;
  editing.hidden = true;
  prompt.value = "";
}

// ---- sending ------------------------------------------------------------------------------
function setBusy(busy) {
  send.hidden = busy;
  send.disabled = busy;
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
  regenerateFrom(chat, id);
  save();
  drawChat();
  ask(chat);
}

async function ask(chat) {
  const body = {};
  if (modelSelect.value) body.model = modelSelect.value;
  chat.model = modelSelect.value;
  const fit = fitConversation(sendableMessages(chat), limits, { extra: body, budgetBytes: chat.budgetBytes ?? Infinity });
  const answer = { id: newId(), role: "assistant", content: "", outcome: null };
  if (fit.dropped || fit.shortened) answer.trimmed = { dropped: fit.dropped, shortened: fit.shortened };
  chat.messages.push(answer);
  const wasNearBottom = nearBottom();
  $("empty")?.remove();
  const div = el("article", { class: "msg assistant streaming", "data-id": answer.id, "aria-label": "Answer" });
  const textBox = el("div", { class: "text markdown" });
  div.append(textBox);
  log.append(div);
  keepInView(wasNearBottom);

  if (!fit.fits) {
    const question = chat.messages.findLast((m) => m.role === "user");
    if (question) question.rejected = true;
    Object.assign(answer, { outcome: "failed", error: { code: fit.reason, status: 0, retryAfter: null, message: "" } });
    endAnswer(chat, div, answer);
    return;
  }

  const controller = new AbortController();
  inFlight = { controller, chatId: chat.id };
  setBusy(true);
  const md = new StreamingMarkdown(textBox);
  let thinking = null, thinkingStarted = 0, thinkingEnded = 0;
  const result = await streamChat({ messages: fit.messages, ...body }, {
    signal: controller.signal,
    onThinking: (text) => {
      if (!thinking) {
        thinkingStarted = performance.now();
        const view = thinkingView({});
        div.prepend(view);
        thinking = view.querySelector(".thinking-text").appendChild(document.createTextNode(""));
      }
      const stick = nearBottom();
      thinking.appendData(text);
      thinkingEnded = performance.now();
      keepInView(stick);
    },
    onText: (text) => {
      const stick = nearBottom();
      const at = log.scrollTop;
      md.append(text);
      // In the frame, follow only if the reader has not scrolled up since (a scroll between
      // this token and the frame would otherwise be undone).
      if (stick) requestAnimationFrame(() => keepInView(log.scrollTop >= at));
    },
  });
  md.finish();
  inFlight = null;
  setBusy(false);
  Object.assign(answer, {
    content: result.text, outcome: result.outcome, stopReason: result.stopReason, whileThinking: result.whileThinking,
  });
  if (result.thinking) Object.assign(answer, { thinking: result.thinking, thinkingMs: Math.round(thinkingEnded - thinkingStarted) });
  if (result.error) {
    const { code, message, status, retryAfter } = result.error;
    answer.error = { code, message, status, retryAfter };
    const said = describeError(answer.error, limits);
    const question = chat.messages.findLast((m) => m.role === "user");
    if (said.rejected && question) {
      question.rejected = true;
      log.querySelector(`[data-id="${question.id}"]`)?.replaceWith(messageView(chat, question));
    }
    if (said.shrink) chat.budgetBytes = Math.floor(new TextEncoder().encode(JSON.stringify({ messages: fit.messages, ...body })).length * 0.6);
  }
  endAnswer(chat, div, answer);
}

function endAnswer(chat, div, answer) {
  const stick = nearBottom();
  const summary = div.querySelector(".thinking summary");
  if (summary) summary.textContent = thoughtFor(answer.thinkingMs);
  finishView(chat, div, answer);
  touchChat(state, chat);
  save();
  drawChatList();
  keepInView(stick);
  const said = answer.outcome === "failed" || answer.outcome === "cut" ? describeError(answer.error, limits).text
    : answer.whileThinking ? "The model ran out of length while thinking; no answer."
    : answer.outcome === "aborted" ? "Stopped." : `Answer: ${answer.content}`;
  announce(said);
  prompt.focus();
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const content = prompt.value;
  if (!content.trim() || inFlight) return;
  const chars = countChars(content);
  if (chars > limits.maxMessageChars) {
    showComposerError(`This message is ${chars.toLocaleString("en-US")} characters; the service takes at most ${limits.maxMessageChars.toLocaleString("en-US")}. Shorten it to send it.`);
    return;
  }
  showComposerError("");
  let chat = currentChat(state) ?? startChat(state);
  if (editingId !== null) {
    editMessage(chat, editingId, content);
    editingId = null;
    editing.hidden = true;
    drawChat();
  } else {
    chat.messages.push({ id: newId(), role: "user", content });
    $("empty")?.remove();
    log.append(messageView(chat, chat.messages.at(-1)));
  }
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

document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  if (inFlight) { event.preventDefault(); inFlight.controller.abort(); }
  else if (editingId !== null) cancelEdit();
});

stop.addEventListener("click", () => inFlight?.controller.abort());
$("clear").addEventListener("click", newChat);
$("cancel-edit").addEventListener("click", () => { cancelEdit(); prompt.focus(); });
menu.addEventListener("click", () => setMenu(menu.getAttribute("aria-expanded") !== "true"));
modelSelect.addEventListener("change", () => { const chat = currentChat(state); if (chat) { chat.model = modelSelect.value; save(); } });

// Copy buttons on code blocks: one listener for every answer, drawn now or later.
log.addEventListener("click", (event) => {
  const button = event.target.closest?.(".copy-code");
  if (!button) return;
  button.dataset.label = "Copy";
  copyText(button.closest(".code-block").querySelector("code").textContent, button);
});

// Leaving mid-answer keeps what arrived, marked as cut.
addEventListener("pagehide", () => {
  if (!inFlight) return;
  const chat = state.chats.find((c) => c.id === inFlight.chatId);
  const answer = chat?.messages.at(-1);
  const live = log.querySelector(".msg.streaming .text");
  if (answer && answer.outcome === null) {
    Object.assign(answer, { outcome: "cut", content: live?.textContent ?? "", error: { code: "connection_lost", message: "", status: 0, retryAfter: null } });
    save();
  }
});

async function loadModels() {
  try {
    const response = await fetch("/api/v1/models");
    if (!response.ok) return;
    const json = await response.json();
    limits = limitsFrom(json);
    reasoning = reasoningFrom(json);
    const { models, default: fallback } = json;
    if (!Array.isArray(models)) return;
    modelSelect.replaceChildren(...models.map((id) => {
      const name = String(id).split("/").pop();
      return el("option", { value: id, title: id, selected: id === fallback }, reasoning.includes(id) ? `${name} (thinks)` : name);
    }));
    const chat = currentChat(state);
    if (chat?.model && models.includes(chat.model)) modelSelect.value = chat.model;
  } catch { /* the default model and limits still work */ }
}

setMenu(!matchMedia("(max-width: 760px)").matches);
if (!currentChat(state)) startChat(state);
drawChat();
loadModels();
prompt.focus();
