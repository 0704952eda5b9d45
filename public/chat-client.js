// A streaming client for the chat API: fetch POST + a stream reader (EventSource cannot
// send a body). No dependencies, no build step; usable by any front end. Types, and every
// option explained: chat-client.d.ts beside this file.
//
//   import { streamChat } from "./chat-client.js";
//   const result = await streamChat({ messages }, { onText: (text, index) => out.append(text), signal });
//   result.outcome  // "complete" | "failed" | "cut" | "aborted"

const LF = 10, CR = 13;

/**
 * Incremental SSE parser: feed it decoded text split anywhere; it returns whole events.
 * Linear in what it is fed: each character is looked at a bounded number of times, and a
 * line split over many feeds is kept as pieces joined once, when its end arrives.
 */
export class SSEParser {
  #pending = [];     // pieces of a line whose end has not arrived yet
  #skipLF = false;   // the last feed ended in CR: a LF opening the next one belongs to it
  #data = [];
  #event = "";
  #hasData = false;
  #id = "";          // the last event ID: kept from event to event, as the spec says

  feed(text) {
    const events = [];
    let start = 0;
    if (this.#skipLF && text.length > 0) {
      if (text.charCodeAt(0) === LF) start = 1;
      this.#skipLF = false;
    }
    // The next CR and LF are searched for once each and reused until passed: searching both
    // from every line start would rescan a CR-free stream to its end once per line.
    let lf = text.indexOf("\n", start);
    let cr = text.indexOf("\r", start);
    while (lf !== -1 || cr !== -1) {
      let stop, next;
      if (cr === -1 || (lf !== -1 && lf < cr)) {
        stop = lf; next = lf + 1;
      } else {
        stop = cr;
        if (cr + 1 < text.length) next = text.charCodeAt(cr + 1) === LF ? cr + 2 : cr + 1;
        else { next = cr + 1; this.#skipLF = true; }
      }
      let line = text.slice(start, stop);
      if (this.#pending.length > 0) {
        this.#pending.push(line);
        line = this.#pending.join("");
        this.#pending = [];
      }
      const event = this.#line(line);
      if (event) events.push(event);
      start = next;
      if (lf !== -1 && lf < start) lf = text.indexOf("\n", start);
      if (cr !== -1 && cr < start) cr = text.indexOf("\r", start);
    }
    if (start < text.length) this.#pending.push(start === 0 ? text : text.slice(start));
    return events;
  }

  /** The end of the stream: an event not closed by a blank line is dropped (as the spec says). */
  end() {
    this.#pending = [];
    this.#skipLF = false;
    this.#data = [];
    this.#hasData = false;
    this.#event = "";
    return [];
  }

  #line(line) {
    if (line === "") {
      if (!this.#hasData) { this.#event = ""; return null; }
      const event = { event: this.#event || "message", data: this.#data.join("\n") };
      if (this.#id) event.id = this.#id;   // only streams that number their events have one
      this.#data = []; this.#hasData = false; this.#event = "";
      return event;
    }
    if (line.charCodeAt(0) === 58 /* ":" */) return null;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32 /* " " */) value = value.slice(1);
    if (field === "data") { this.#data.push(value); this.#hasData = true; }
    else if (field === "event") this.#event = value;
    else if (field === "id" && !value.includes("\0")) this.#id = value;
    return null;
  }
}

/** Yields {event, data} from a ReadableStream of bytes, whatever the chunk boundaries. */
export async function* readEvents(body, signal) {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");   // drops a leading BOM, as the SSE spec asks
  const parser = new SSEParser();
  // fetch() aborts the body too, but cancelling here closes it in every runtime at once.
  const onAbort = () => reader.cancel(signal.reason).catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield* parser.feed(decoder.decode(value, { stream: true }));
    }
    yield* parser.feed(decoder.decode());
    parser.end();
  } finally {
    signal?.removeEventListener("abort", onAbort);
    reader.releaseLock();
  }
}

export class ChatError extends Error {
  constructor(code, message, status = 0, retryAfter = null) {
    super(message);
    this.name = "ChatError";
    this.code = code;
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

/** Seconds to wait from a Retry-After header (seconds or an HTTP date), or null. */
export function parseRetryAfter(value, now = Date.now()) {
  if (value == null) return null;
  const text = String(value).trim();
  if (/^\d+$/.test(text)) return Number(text);
  if (!/^[A-Za-z]{3}, /.test(text)) return null;   // an HTTP date ("Wed, 21 Oct 2026 07:28:00 GMT"), nothing looser
  const when = Date.parse(text);
  return Number.isNaN(when) ? null : Math.max(0, Math.ceil((when - now) / 1000));
}

/**
 * Folds one parsed event of our protocol into `state.result` ({text, thinking, stopReason,
 * whileThinking, usage, error, outcome}); true at `done`, when the outcome is set. Shared by
 * streamChat and conversation-client.js, so the two read the protocol the same way.
 */
export function foldEvent(state, event, payload, status, onText, onThinking) {
  const result = state.result;
  if (event === "content_block_delta" && typeof payload.text === "string") {
    result.text += payload.text;
    onText(payload.text, payload.index);
  } else if (event === "thinking_delta" && typeof payload.text === "string") {
    result.thinking += payload.text;
    onThinking(payload.text, payload.index);
  } else if (event === "message_stop") {
    state.stopped = true;
    result.stopReason = payload.stop_reason ?? null;
    result.whileThinking = payload.while_thinking === true;
    result.usage = payload.usage ?? null;
    if (typeof payload.model === "string") result.model = payload.model;   // a fallback answered
  } else if (event === "error") {
    result.error = new ChatError(payload.error ?? "error", payload.message ?? "The answer failed.", status);
  } else if (event === "done") {
    result.outcome = result.error ? "failed" : state.stopped ? "complete" : "cut";
    return true;
  }
  return false;
}

/**
 * POST a conversation and follow the answer as it streams.
 * Resolves (never rejects) with what happened:
 *   outcome "complete": message_stop then done; stopReason and usage set
 *   outcome "failed":   an error event (or an HTTP error before streaming); error set
 *   outcome "cut":      the connection ended without `done`; text holds what arrived
 *   outcome "aborted":  the caller's signal aborted; the connection is closed
 */
export async function streamChat(body, {
  url = "/api/v1/chat", signal, fetch = globalThis.fetch, headers = {},
  onText = () => {}, onThinking = () => {}, onEvent = () => {},
} = {}) {
  const result = { outcome: "cut", text: "", thinking: "", stopReason: null, whileThinking: false, usage: null, error: null };
  const sent = new Headers(headers);
  if (!sent.has("content-type")) sent.set("content-type", "application/json");
  if (!sent.has("accept")) sent.set("accept", "text/event-stream");
  let response;
  try {
    response = await fetch(url, { method: "POST", headers: sent, body: JSON.stringify(body), signal });
  } catch (err) {
    if (signal?.aborted) return { ...result, outcome: "aborted" };
    return { ...result, outcome: "failed", error: new ChatError("network_error", `Could not reach the service: ${err.message}`) };
  }
  if (!response.ok) {
    let code = "http_error", message = `HTTP ${response.status}`;
    try { const json = await response.json(); code = json.error ?? code; message = json.message ?? message; } catch { /* not JSON */ }
    const retryAfter = parseRetryAfter(response.headers.get("retry-after"));
    return { ...result, outcome: "failed", error: new ChatError(code, message, response.status, retryAfter) };
  }
  const state = { result, stopped: false };
  try {
    for await (const { event, data } of readEvents(response.body, signal)) {
      let payload;
      try { payload = JSON.parse(data); } catch { continue; }
      onEvent(event, payload);
      if (foldEvent(state, event, payload, response.status, onText, onThinking)) return result;
    }
  } catch (err) {
    if (signal?.aborted) return { ...result, outcome: "aborted" };
    result.error = new ChatError("connection_lost", `The connection was lost: ${err.message}`);
    return result;
  }
  if (signal?.aborted) return { ...result, outcome: "aborted" };
  result.error ??= new ChatError("connection_lost", "The connection ended before the answer was complete.");
  return result;
}
