// A client for durable conversations (README: "Durable conversations"): the answer is written
// by the conversation's Durable Object, so a connection that drops, or a page that reloads,
// picks it up again with Last-Event-ID and gets every event once, in order.
//
//   import { createConversation, streamConversation } from "./conversation-client.js";
//   const id = await createConversation();
//   const result = await streamConversation(id, { content: "Hi" }, { onText: (t) => out.append(t) });
//   // a reload: resumeConversation(id, result.lastEventId, { onText })
import { ChatError, foldEvent, readEvents } from "./chat-client.js";

const BASE = "/api/v1/conversations";
// Headers every call sends unless it is given its own: the page's owner token (useOwnerToken).
let sent = {};
/** Every call from now on speaks for the owner of `token` (X-Owner-Token); null: for nobody. */
export function useOwnerToken(token) { sent = token ? { "x-owner-token": token } : {}; }
const sleep = (ms, signal) => new Promise((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal?.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
});

async function failure(response) {
  let code = "http_error", message = `HTTP ${response.status}`;
  try { const json = await response.json(); code = json.error ?? code; message = json.message ?? message; } catch { /* not JSON */ }
  return new ChatError(code, message, response.status);
}

/**
 * POST /api/v1/conversations: the new conversation's id. Throws a ChatError on failure.
 * `messages` (and the `model` they are checked for): the history it starts from; `details`:
 * beside them, what each answer's page shows under it (durable-chats.js historyDetails).
 */
export async function createConversation({ base = BASE, fetch = globalThis.fetch, headers = sent, messages, details, model } = {}) {
  const init = { method: "POST", headers };
  if (messages?.length) {
    init.headers = { ...headers, "content-type": "application/json" };
    init.body = JSON.stringify({ messages, ...(details ? { details } : {}), ...(model ? { model } : {}) });
  }
  const response = await fetch(base, init);
  if (response.status !== 201) throw await failure(response);
  return (await response.json()).id;
}

/**
 * GET /api/v1/conversations: one page of the owner's conversations, newest first,
 * {data: [{id, title, created_at, updated_at}], has_more, next_cursor}. Throws a ChatError.
 */
export async function listConversations({ base = BASE, fetch = globalThis.fetch, headers = sent, limit = 100, after = null } = {}) {
  const query = new URLSearchParams({ limit: String(limit), ...(after ? { after } : {}) });
  const response = await fetch(`${base}?${query}`, { headers });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/** GET /api/v1/conversations/{id}: {id, messages, streaming}, or null for an unknown id. */
export async function getConversation(id, { base = BASE, fetch = globalThis.fetch, headers = sent } = {}) {
  const response = await fetch(`${base}/${id}`, { headers });
  if (response.status === 404) return null;
  if (!response.ok) throw await failure(response);
  return response.json();
}

/** DELETE /api/v1/conversations/{id}: true when it was there (404: it was not). */
export async function deleteConversation(id, { base = BASE, fetch = globalThis.fetch, headers = sent } = {}) {
  const response = await fetch(`${base}/${id}`, { method: "DELETE", headers });
  if (response.status === 404) return false;
  if (!response.ok) throw await failure(response);
  return true;
}

/** POST .../branches: keeps a client's versions of the conversation beside it (null: none). */
export async function keepBranches(id, branches, { base = BASE, fetch = globalThis.fetch, headers = sent } = {}) {
  const response = await fetch(`${base}/${id}/branches`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify({ branches }) });
  if (!response.ok) throw await failure(response);
  return true;
}

/** POST .../stop: whether an answer was being written (it ends with stop_reason "cancelled"). */
export async function stopConversation(id, { base = BASE, fetch = globalThis.fetch, headers = sent } = {}) {
  const response = await fetch(`${base}/${id}/stop`, { method: "POST", headers });
  if (!response.ok) throw await failure(response);
  return (await response.json()).stopped === true;
}

/** Follows one answer's events, resuming after a cut; resolves like streamChat, plus lastEventId. */
async function follow(first, id, { base, fetch, headers, signal, retries, onText, onThinking, onEvent }, start) {
  const result = { outcome: "cut", text: "", thinking: "", stopReason: null, whileThinking: false, usage: null, error: null, lastEventId: start };
  const state = { result, stopped: false };
  let attempt = 0;
  let open = first;
  for (;;) {
    let response;
    try {
      response = await open(result.lastEventId);
    } catch (err) {
      if (signal?.aborted) return { ...result, outcome: "aborted" };
      response = null;
      result.error = new ChatError("network_error", `Could not reach the service: ${err.message}`);
    }
    if (response && !response.ok) {
      return { ...result, outcome: "failed", error: await failure(response) };
    }
    if (response) {
      result.error = null;  // a cut that was resumed is no error
      try {
        for await (const { event, data, id: eventId } of readEvents(response.body, signal)) {
          if (eventId) result.lastEventId = eventId;
          let payload;
          try { payload = JSON.parse(data); } catch { continue; }
          onEvent(event, payload);
          if (foldEvent(state, event, payload, response.status, onText, onThinking)) return result;
        }
      } catch (err) {
        result.error = new ChatError("connection_lost", `The connection was lost: ${err.message}`);
      }
    }
    if (signal?.aborted) return { ...result, outcome: "aborted" };
    if (attempt >= retries) {
      result.error ??= new ChatError("connection_lost", "The connection ended before the answer was complete.");
      return result;
    }
    // The answer goes on in the conversation's object: come back for the rest.
    await sleep(Math.min(250 * 2 ** attempt, 4000), signal);
    attempt += 1;
    open = (after) => fetch(`${base}/${id}/stream`, { headers: { ...headers, ...(after ? { "last-event-id": after } : {}) }, signal });
  }
}

/**
 * POST a message to conversation `id` ({content, model?, max_tokens?, ...}) and follow the
 * answer; a dropped connection is resumed up to `retries` times. Resolves (never rejects)
 * with {outcome, text, thinking, stopReason, usage, error, lastEventId}: keep lastEventId to
 * resume after a reload with resumeConversation.
 */
export function streamConversation(id, message, {
  base = BASE, fetch = globalThis.fetch, headers = sent, signal, retries = 5,
  onText = () => {}, onThinking = () => {}, onEvent = () => {},
} = {}) {
  const posted = { "content-type": "application/json", accept: "text/event-stream", ...headers };
  const post = () => fetch(`${base}/${id}/messages`, { method: "POST", headers: posted, body: JSON.stringify(message), signal });
  return follow(post, id, { base, fetch, headers, signal, retries, onText, onThinking, onEvent }, null);
}

/** Picks up the last answer of conversation `id` after `lastEventId` (null: from its start). */
export function resumeConversation(id, lastEventId, {
  base = BASE, fetch = globalThis.fetch, headers = sent, signal, retries = 5,
  onText = () => {}, onThinking = () => {}, onEvent = () => {},
} = {}) {
  const get = (after) => fetch(`${base}/${id}/stream`, { headers: { ...headers, ...(after ? { "last-event-id": after } : {}) }, signal });
  return follow(get, id, { base, fetch, headers, signal, retries, onText, onThinking, onEvent }, lastEventId);
}
