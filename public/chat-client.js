// A streaming client for the chat API: fetch POST + a stream reader (EventSource cannot
// send a body). No dependencies, no build step; usable by any front end.
//
//   import { streamChat } from "./chat-client.js";
//   const result = await streamChat({ messages }, { onText: (t) => out.append(t), signal });
//   result.outcome  // "complete" | "failed" | "cut" | "aborted"

/** Incremental SSE parser: feed it decoded text split anywhere; it returns whole events. */
export class SSEParser {
  #buffer = "";
  #skipLF = false;
  #data = [];
  #event = "";
  #hasData = false;

  feed(text) {
    const events = [];
    if (this.#skipLF && text) {
      if (text[0] === "\n") text = text.slice(1);
      this.#skipLF = false;
    }
    const buffer = this.#buffer + text;
    let start = 0;
    for (;;) {
      const lf = buffer.indexOf("\n", start);
      let cr = buffer.indexOf("\r", start);
      if (lf >= 0 && cr > lf) cr = -1;
      let stop, next;
      if (cr >= 0) {
        stop = cr;
        if (cr + 1 < buffer.length) next = buffer[cr + 1] === "\n" ? cr + 2 : cr + 1;
        else { next = cr + 1; this.#skipLF = true; }
      } else if (lf >= 0) { stop = lf; next = lf + 1; }
      else break;
      const event = this.#line(buffer.slice(start, stop));
      if (event) events.push(event);
      start = next;
    }
    this.#buffer = buffer.slice(start);
    return events;
  }

  /** The end of the stream: an event not closed by a blank line is dropped (as the spec says). */
  end() {
    this.#buffer = "";
    this.#data = [];
    this.#hasData = false;
    this.#event = "";
    return [];
  }

  #line(line) {
    if (line === "") {
      if (!this.#hasData) { this.#event = ""; return null; }
      const event = { event: this.#event || "message", data: this.#data.join("\n") };
      this.#data = []; this.#hasData = false; this.#event = "";
      return event;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") { this.#data.push(value); this.#hasData = true; }
    else if (field === "event") this.#event = value;
    return null;
  }
}

/** Yields {event, data} from a ReadableStream of bytes, whatever the chunk boundaries. */
export async function* readEvents(body, signal) {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
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
  constructor(code, message, status = 0) {
    super(message);
    this.name = "ChatError";
    this.code = code;
    this.status = status;
  }
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
  url = "/api/v1/chat", signal, fetch = globalThis.fetch, headers = {}, onText = () => {}, onEvent = () => {},
} = {}) {
  const result = { outcome: "cut", text: "", stopReason: null, usage: null, error: null };
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
      body: JSON.stringify(body),
      signal,
    });
  } catch (err) {
    if (signal?.aborted) return { ...result, outcome: "aborted" };
    return { ...result, outcome: "failed", error: new ChatError("network_error", `Could not reach the service: ${err.message}`) };
  }
  if (!response.ok) {
    let code = "http_error", message = `HTTP ${response.status}`;
    try { const json = await response.json(); code = json.error ?? code; message = json.message ?? message; } catch { /* not JSON */ }
    return { ...result, outcome: "failed", error: new ChatError(code, message, response.status) };
  }
  let stopped = false;
  try {
    for await (const { event, data } of readEvents(response.body, signal)) {
      let payload;
      try { payload = JSON.parse(data); } catch { continue; }
      onEvent(event, payload);
      if (event === "content_block_delta" && typeof payload.text === "string") {
        result.text += payload.text;
        onText(payload.text, payload.index);
      } else if (event === "message_stop") {
        stopped = true;
        result.stopReason = payload.stop_reason ?? null;
        result.usage = payload.usage ?? null;
      } else if (event === "error") {
        result.error = new ChatError(payload.error ?? "error", payload.message ?? "The answer failed.", response.status);
      } else if (event === "done") {
        result.outcome = result.error ? "failed" : stopped ? "complete" : "cut";
        return result;
      }
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
