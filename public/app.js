// The chat page: keeps the conversation, sends it whole, renders the answer as it streams.
// Every text the user or the model writes goes into the page with textContent, never as HTML.
import { streamChat } from "./chat-client.js";

const $ = (id) => document.getElementById(id);
const log = $("log"), form = $("composer"), prompt = $("prompt");
const send = $("send"), stop = $("stop"), modelSelect = $("model");

const conversation = [];
let inFlight = null;

function nearBottom() {
  return log.scrollHeight - log.scrollTop - log.clientHeight < 48;
}

function keepInView(wasNearBottom) {
  if (wasNearBottom) log.scrollTop = log.scrollHeight;
}

function bubble(role, text) {
  $("empty")?.remove();
  const div = document.createElement("div");
  div.className = `msg ${role}`;
  const body = document.createElement("span");
  body.className = "text";
  body.textContent = text;
  div.append(body);
  log.append(div);
  return div;
}

function note(div, text, { retry } = {}) {
  const p = document.createElement("span");
  p.className = "note";
  p.textContent = text;
  if (retry) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "retry";
    button.textContent = "Retry";
    button.addEventListener("click", () => { div.remove(); ask(); });
    p.append(button);
  }
  div.append(p);
}

function setBusy(busy) {
  send.disabled = busy;
  stop.hidden = !busy;
  stop.disabled = !busy;
  log.setAttribute("aria-busy", String(busy));
}

async function ask() {
  const wasNearBottom = nearBottom();
  const div = bubble("assistant streaming", "");
  const text = div.querySelector(".text");
  keepInView(wasNearBottom);
  const controller = new AbortController();
  inFlight = controller;
  setBusy(true);
  const body = { messages: conversation.slice() };
  if (modelSelect.value) body.model = modelSelect.value;
  const result = await streamChat(body, {
    signal: controller.signal,
    onText: (t) => { const stick = nearBottom(); text.textContent += t; keepInView(stick); },
  });
  inFlight = null;
  setBusy(false);
  div.classList.remove("streaming");
  div.dataset.outcome = result.outcome;
  if (result.outcome === "complete") {
    conversation.push({ role: "assistant", content: result.text });
    if (result.stopReason === "length") note(div, "The answer reached its length limit.");
  } else if (result.outcome === "aborted") {
    if (result.text) conversation.push({ role: "assistant", content: result.text });
    note(div, "Stopped.");
  } else {
    div.classList.add("error");
    note(div, result.error?.message ?? "The answer could not be completed.", { retry: true });
  }
  keepInView(true);
  prompt.focus();
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const content = prompt.value;
  if (!content.trim() || inFlight) return;
  // A failed answer stays on screen but is not sent back as context.
  log.querySelectorAll(".msg.error .retry").forEach((b) => b.remove());
  conversation.push({ role: "user", content });
  bubble("user", content);
  prompt.value = "";
  ask();
});

prompt.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    form.requestSubmit();
  }
});

stop.addEventListener("click", () => inFlight?.abort());

$("clear").addEventListener("click", () => {
  inFlight?.abort();
  conversation.length = 0;
  log.replaceChildren();
  const p = document.createElement("p");
  p.className = "empty"; p.id = "empty";
  p.textContent = "Ask anything. Answers stream in as they are written.";
  log.append(p);
  prompt.focus();
});

async function loadModels() {
  try {
    const response = await fetch("/api/v1/models");
    if (!response.ok) return;
    const { models, default: fallback } = await response.json();
    modelSelect.replaceChildren(...models.map((id) => {
      const option = document.createElement("option");
      option.value = id;
      option.textContent = id.split("/").pop();
      option.title = id;
      option.selected = id === fallback;
      return option;
    }));
  } catch { /* the default model still works */ }
}

loadModels();
prompt.focus();
