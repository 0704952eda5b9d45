// Types for chat-client.js (plain JS, no build step). Checked by `tsc --strict` in
// tests/js/types.test.mjs, which also compiles the README's own example.

/** A part of a user message: text, or an image as a data: URL (png, jpeg, gif or webp). */
export type ContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } };

/** One turn of the conversation, as POST /api/v1/chat takes it. */
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  /** Text, or (a user message, for a model whose capabilities say vision) text and image parts. */
  content: string | ContentPart[];
  /** An assistant message's thinking, sent back to reasoning models. */
  reasoning?: string;
}

/** The request body. Only `messages` is required; the API refuses any other field. */
export interface ChatRequest {
  messages: ChatMessage[];
  /** A model id from GET /api/v1/models; the server's default when absent. */
  model?: string;
  max_tokens?: number;
  /** 0 to 5. */
  temperature?: number;
  /** For reasoning models: how hard to think. */
  reasoning_effort?: "low" | "medium" | "high" | null;
  /** Where the answer stops: a string or up to 16 strings. */
  stop?: string | string[];
}

/** Token counts, as the model reported them. */
export interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  /** Prompt tokens served from the model's prefix cache, when it reports them. */
  cached_tokens?: number;
  [key: string]: unknown;
}

/** How the answer ended. */
export type Outcome =
  /** `message_stop` then `done`: the whole answer arrived. */
  | "complete"
  /** An HTTP error before streaming, or an `error` event after it: `error` says which. */
  | "failed"
  /** The connection ended without `done`: `text` holds what arrived. */
  | "cut"
  /** The caller's `signal` aborted; the connection is closed and the server stops the model. */
  | "aborted";

/** An error with the API's stable code (see the README's error table). */
export declare class ChatError extends Error {
  constructor(code: string, message: string, status?: number, retryAfter?: number | null);
  readonly name: "ChatError";
  /** The API's code (`rate_limited`, `message_too_long`, ...), or the client's own:
   * `network_error` (fetch failed), `connection_lost` (the stream ended early), `http_error`
   * (a non-JSON error response). */
  code: string;
  /** The HTTP status; 0 when no response arrived. Errors after streaming began carry 200. */
  status: number;
  /** Seconds to wait before retrying, from `Retry-After` (429 and 503 answers), else null. */
  retryAfter: number | null;
}

export interface ChatResult {
  outcome: Outcome;
  /** The answer text that arrived (all of it when complete). */
  text: string;
  /** The reasoning that arrived in `thinking_delta` events ("" for models that do not reason). */
  thinking: string;
  /** `message_stop`'s reason: "stop", "length", ...; null when no `message_stop` arrived. */
  stopReason: string | null;
  /** True when the model ran out of tokens while still thinking (`stopReason` is "length"). */
  whileThinking: boolean;
  usage: Usage | null;
  /** `message_stop`'s model: set only when a fallback model answered instead of the one asked. */
  model?: string;
  error: ChatError | null;
}

/** A fetch-like function: the client calls it once, with a string URL and this init. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

export interface StreamChatOptions {
  /** Where to POST. Default "/api/v1/chat" (same origin); a full URL for another origin
   * (it must be in the Worker's CORS_ALLOWED_ORIGINS). */
  url?: string;
  /** The fetch to use. Default `globalThis.fetch`; pass one to add retries, logging, or a fake in tests. */
  fetch?: FetchLike;
  /** Extra request headers, e.g. `{ authorization: "Bearer <key>" }` when the Worker has API_KEYS.
   * Content-Type and Accept are set unless given here. */
  headers?: HeadersInit;
  /** Abort to stop the answer: the connection closes and the Worker cancels the model. */
  signal?: AbortSignal;
  /** Each piece of answer text as it arrives; `index` counts the pieces from 0. */
  onText?: (text: string, index: number) => void;
  /** Each piece of reasoning (`thinking_delta`) as it arrives; `index` counts from 0, on its own. */
  onThinking?: (text: string, index: number) => void;
  /** Every event with its parsed data, including `message_stop`, `error` and `done`. */
  onEvent?: (event: string, data: unknown) => void;
}

/** POST a conversation and follow the answer as it streams. Never rejects: see `outcome`. */
export declare function streamChat(body: ChatRequest, options?: StreamChatOptions): Promise<ChatResult>;

/** What foldEvent folds events into: the result so far, and whether message_stop came. */
export interface FoldState {
  result: ChatResult;
  stopped: boolean;
}

/** Folds one parsed event of the chat API into `state.result`; true at `done`, when
 *  `result.outcome` is set. streamChat and conversation-client.js read events through it. */
export declare function foldEvent(
  state: FoldState,
  event: string,
  payload: Record<string, unknown>,
  status: number,
  onText: (text: string, index: number) => void,
  onThinking: (text: string, index: number) => void,
): boolean;

/** One server-sent event: the `event` field ("message" when absent) and the joined `data` lines. */
export interface SSEEvent {
  event: string;
  data: string;
}

/** Incremental SSE parser, linear in its input: feed decoded text split anywhere. */
export declare class SSEParser {
  /** The events completed by this text (possibly none). */
  feed(text: string): SSEEvent[];
  /** The stream ended: an event not closed by a blank line is dropped, as the spec says. */
  end(): SSEEvent[];
}

/** Yields the events of a response body, whatever its chunk boundaries; aborting `signal` cancels the body. */
export declare function readEvents(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<SSEEvent, void, undefined>;

/** Seconds to wait from a Retry-After value (delta-seconds or an HTTP date); null if absent or unreadable. */
export declare function parseRetryAfter(value: string | null | undefined, now?: number): number | null;
