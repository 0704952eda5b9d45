#!/usr/bin/env node
// The built-in offline model: an HTTP server in its own process that speaks the Workers AI
// binding's wire protocol, so the Worker's `env.AI` is workerd's own `Ai` class
// (`cloudflare-internal:ai-api`) talking to it exactly as it talks to Cloudflare:
//
//   POST /run?version=3   header cf-consn-model-id: <model>   body {"inputs": {...}, "options": {...}}
//   POST /ai-gateway/run?version=3   the same, when options.gateway.id is set (workerd's Ai class)
//   -> 200 text/event-stream (inputs.stream) | 200 application/json (the result object)
//   -> non-2xx {"internalCode", "description", "name"} (what Ai._parseError reads)
//
// miniflare's AI plugin reaches it through its remote-proxy client, which wraps the request:
// the URL in `MF-URL` and every original header as `MF-Header-<name>`; both forms are accepted.
//
//   GET  /ai-api/models/search?task=&search=&page=&per_page=   the catalog (Ai.models()): {"result": [...]}
//        as the service answers it: each model's name, task and properties ({property_id, value},
//        string values); PUT /__local/catalog {"models": [...]}, {"fail": STATUS} or {"fail": "hang"} changes it,
//        DELETE /__local/catalog restores it, GET /__local/catalog says how often it was asked.
//
// The account is on the Free plan: PAID_PLAN ids answer 403, internalCode 5035. With an
// x-session-affinity header, the model remembers each key's last conversation and reports the
// prompt tokens of a conversation that continues it as usage.prompt_tokens_details.cached_tokens.
// Every call's options (rejectIfBusy, gateway) and affinity header are in /__local/calls.
//
// Embedding models (EMBEDDING_WIDTHS) take {"text": string | string[]} and answer
// {"shape", "data", "pooling"}, as Workers AI does: each text's vector is a function of it
// (embeddingVector), a unit vector of float32 values; at most 100 texts a call, as their input
// schema says; [[pace:N]] in the last text makes the call take N ms. `prompt` is one user message.
//
// Directives in the last user message steer it, for tests and demos:
//   [[busy:PART]]        models whose id contains PART are busy: 429, internalCode 3040, at once
//                        when options.rejectIfBusy is set, else the call queues (BUSY_QUEUE_MS) and
//                        is answered (repeat for several models)
//   [[fault:throw]]      run() fails before streaming (500, internalCode 5000)
//   [[error:NNNN]]       run() fails with that Workers AI error (3040, 3036, 4006, 5006, 5007, 5021, 5028)
//   [[fault:midstream]]  the connection breaks after 3 tokens
//   [[fault:malformed]]  malformed JSON frames between tokens (the answer still completes);
//                        in an embedding text, a null and a string in its vector
//   [[fault:stall]]      the stream goes silent after 2 tokens, forever
//   [[fault:nodone]]     the stream ends without `data: [DONE]`
//   [[fault:split]]      frames re-cut at random byte boundaries (seeded, so repeatable)
//   [[fault:nostream]]   the whole answer as one JSON object even though a stream was asked for
//   [[fault:bom]]        the stream starts with a UTF-8 byte order mark
//   [[fault:hang]]       no answer at all, not even the response head, until the caller leaves
//   [[pace:N]]           N ms between tokens (default: --pace)
//   [[rate:N]]           N tokens a second, on a schedule: a token that is late (a timer fires
//                        late on a busy machine) does not delay the ones after it, so the
//                        answer takes tokens/N seconds (the page's long-answer tests)
//   [[wire:eof]]         the stream without HTTP chunked framing, its end the connection's close.
//                        Measured on workerd: each chunked frame reaches the Worker in two reads
//                        (the first ends 32 bytes into the chunk, its size line included); a
//                        body read to its end arrives as the socket has it (bench/notes/HISTORY.md)
//   [[tokens:N]]         answer with exactly N filler tokens
//   [[list:N]] [[table:N]]  a markdown list of N items, or a table of N rows (columns aligned
//                        right, left, center), between a line before and a line after, in
//                        4 tokens per item or row: the page's long-answer rendering tests
//   [[think:N]]          reason for N tokens first (reasoning models; native models wrap it in
//                        <think>...</think>, [[thinktag:open]] drops the opening tag as real models do)
//   [[reasoning:FIELD]]  OpenAI-shaped reasoning in `reasoning_content`, `reasoning` or `both`
//   [[usage:first]]      OpenAI shape: the real usage first, a zero-usage chunk last
//   [[usage:cumulative]] OpenAI shape: cumulative usage on every chunk (qwen over REST)
//   [[usage:reasoning]]  the usage counts the reasoning tokens (completion_tokens_details)
//   [[shape:2026]]       the stream every @cf/ model sends in late 2026 (field-2026-11-28.md: agents
//                        0.32.0 docs/models.md), whatever the model id: OpenAI chunks with the
//                        running usage on every delta, a `choices: []` heartbeat every
//                        HEARTBEAT_EVERY chunks, reasoning under `reasoning` ([[reasoning:FIELD]]
//                        picks another), noise fields (p, token_ids, prompt_token_ids,
//                        kv_transfer_params), a Google model's name echoed with -external, and the
//                        native tail {"response":"","usage":{...}} before [DONE]
//   [[tool:NAME]]        with inputs.tools: call the tool NAME (repeat for parallel calls), its
//                        arguments {<first parameter>: <the message without directives>};
//                        reasoning models stream OpenAI-shaped delta.tool_calls (arguments in
//                        pieces), others one native frame {"tool_calls":[{"name","arguments":{}}]}
// A conversation whose last message is a `tool` result is answered with text quoting it.
// inputs.response_format json_object / json_schema (JSON mode, never streamed): the answer is
// a JSON object {"answer": <text>} (native models: as an object in `response`, as the service does).
// Shapes follow the model id: ids in REASONING_MODELS stream OpenAI-shaped chunks with
// reasoning (gpt-oss, kimi, glm, qwq); every other id the native frames, in the shape
// Workers AI really sends: {"response","tool_calls":[],"p"} with empty first and last frames,
// a frame with no "response", then {"response":"","usage":{...}} and [DONE].
import crypto from "node:crypto";
import http from "node:http";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import zlib from "node:zlib";

const encoder = new TextEncoder();
const FILLER = ["stream", "edge", "token", "relay", "python", "worker", "event", "byte"];
const THOUGHT = ["Let", "me", "think", "about", "this", "carefully", "first", "then", "answer"];
const MAX_CALLS = 5000;
// Wall-clock ms (epoch), so a test in another process can compare its own times with ours.
const now = () => performance.timeOrigin + performance.now();

// Public error texts of Workers AI (cloudflare-docs, cloudflare/ai issues); status as the API sends it.
export const ERRORS = {
  3036: [429, "AiError", "You have used up your daily free allocation of 10,000 neurons. Please upgrade to Cloudflare's Workers Paid plan if you would like to continue usage."],
  3040: [429, "AiError", "Capacity temporarily exceeded, please try again."],
  4006: [429, "AiError", "you have used up your daily free allocation of 10,000 neurons, please upgrade to Cloudflare's Workers Paid plan if you would like to continue usage."],
  5000: [500, "InferenceUpstreamError", "The built-in model refused (fault:throw)."],
  5006: [400, "InferenceUpstreamError", "Error: required properties at '/' are 'prompt' or 'messages'"],
  5007: [400, "InferenceUpstreamError", "No such model @cf/nope or task"],
  5021: [400, "InferenceUpstreamError", "The estimated number of input and maximum output tokens (8810) exceeded this model context window limit (8192)."],
  5028: [400, "AiError", "This model was deprecated on 2026-05-30. Please use an alternative model."],
  5035: [403, "AiError", "This model requires the Workers Paid plan. Upgrade your plan to use it."],
};

// Workers Paid only since 2026-07-28 (Workers AI changelog); this account is on the Free plan.
export const PAID_PLAN = /kimi-k2\.6|kimi-k2\.7|glm-5\.2/;
// How long a busy model keeps a call waiting when it may queue (no rejectIfBusy).
export const BUSY_QUEUE_MS = 300;

// The catalog as Ai.models() returns it (cloudflare-docs src/content/workers-ai-models/*.json:
// id, source, name, description, task {id, name, description}, tags, properties with string
// values), for the models this service names and a few of their neighbours.
const TEXT_GENERATION = { id: "c329a1f9-323d-4e91-b2aa-582dd4188d34", name: "Text Generation",
  description: "Family of generative text models, such as large language models (LLM), that can be adapted for a variety of natural language tasks." };
function entry(name, description, props) {
  return { id: `local-${name.split("/").pop()}`, source: 1, name, description, task: TEXT_GENERATION, tags: [],
    properties: Object.entries(props).map(([property_id, value]) => ({ property_id, value: String(value) })) };
}
const TEXT_EMBEDDINGS = { id: "0137cdcf-162a-4108-94f2-1ca59e8c65ee", name: "Text Embeddings",
  description: "Feature extraction models transform raw data into numerical features that can be processed while preserving the information in the original dataset." };
export const CATALOG = [
  entry("@cf/google/gemma-4-26b-a4b-it", "Gemma 4 26B A4B: vision, tools, thinking.", { context_window: 256000, function_calling: true, vision: true }),
  entry("@cf/meta/llama-3.1-8b-instruct-fast", "Llama 3.1 8B, fast.", { context_window: 128000 }),
  entry("@cf/openai/gpt-oss-20b", "gpt-oss-20b.", { context_window: 128000, function_calling: true, reasoning: true }),
  entry("@cf/openai/gpt-oss-120b", "gpt-oss-120b.", { context_window: 128000, function_calling: true, reasoning: true }),
  entry("@cf/meta/llama-4-scout-17b-16e-instruct", "Llama 4 Scout.", { context_window: 131000, function_calling: true, vision: true }),
  entry("@cf/zai-org/glm-4.7-flash", "GLM-4.7-Flash.", { context_window: 131072, function_calling: true, reasoning: true, enable_thinking: true }),
  entry("@cf/moonshotai/kimi-k2.6", "Kimi K2.6 (Workers Paid).", { context_window: 262144, function_calling: true, reasoning: true, vision: true }),
  entry("@cf/qwen/qwen3-30b-a3b-fp8", "Qwen3 30B A3B.", { context_window: 32768, function_calling: true, reasoning: true, enable_thinking: true }),
  { ...entry("@cf/baai/bge-m3", "BGE-M3: multilingual embeddings.", { context_window: 8192 }), task: TEXT_EMBEDDINGS },
  { ...entry("@cf/baai/bge-base-en-v1.5", "BAAI general embedding, base.", { context_window: 512 }), task: TEXT_EMBEDDINGS },
  { ...entry("@cf/google/embeddinggemma-300m", "EmbeddingGemma 300M.", { context_window: 2048 }), task: TEXT_EMBEDDINGS },
];

export function isReasoningModel(model) {
  return /gpt-oss|kimi|glm|qwq/.test(model);
}

function directives(text) {
  const found = {};
  for (const m of text.matchAll(/\[\[(\w+):([\w.-]+)\]\]/g)) found[m[1]] = m[2];
  return found;
}

// "Hello!" already ends a sentence: "You said: Hello!", never "Hello!.".
const sentence = (text) => (/[.!?…]$/u.test(text) ? text : `${text}.`);

// The answer is a pure function of the conversation, so tests can predict every byte.
export function answerTokens(messages, maxTokens, tools = undefined) {
  const lastUser = [...messages].reverse().find((m) => m.role === "user");
  const said = lastUser ? contentText(lastUser.content) : "";
  const opts = directives(said);
  const last = messages[messages.length - 1];
  const calls = last?.role === "user" ? toolCalls(said, tools) : [];
  let tokens;
  if (calls.length) {
    tokens = [];
  } else if (last?.role === "tool") {
    const text = `The tool ${last.tool_call_id ?? "?"} said: ${sentence(contentText(last.content))}`;
    tokens = text.match(/\s*\S+/g) ?? [];
  } else if (opts.list !== undefined || opts.table !== undefined) {
    tokens = longBlockTokens(opts);
  } else if (opts.tokens !== undefined) {
    const n = Number(opts.tokens);
    tokens = Array.from({ length: n }, (_, i) => (i === 0 ? "" : " ") + FILLER[i % FILLER.length]);
  } else {
    const clean = said.replace(/\[\[\w+:[\w.-]+\]\]/g, "").trim();
    const text = `${clean ? `You said: ${sentence(clean)}` : "You said nothing."} This answer comes from the ` +
      `built-in offline model, one token at a time, in turn ${messages.length}.`;
    tokens = text.match(/\s*\S+/g) ?? [];
  }
  const thinking = Array.from({ length: Number(opts.think ?? 0) }, (_, i) => (i === 0 ? "" : " ") + THOUGHT[i % THOUGHT.length]);
  // Reasoning spends the same max_tokens budget as the answer, first.
  const budget = maxTokens ?? Infinity;
  const thought = thinking.slice(0, budget);
  const said2 = tokens.slice(0, Math.max(0, budget - thought.length));
  const truncated = thought.length + said2.length < thinking.length + tokens.length;
  return { tokens: said2, thinking: thought, truncated, opts, calls };
}

function longBlockTokens(opts) {
  const word = (i) => FILLER[i % FILLER.length];
  const tokens = ["Here", " it", " is:\n"];
  if (opts.list !== undefined) {
    for (let i = 1; i <= Number(opts.list); i++) tokens.push(`\n- Item ${i}`, `: ${word(i)}`, ` ${word(i + 1)}`, ` ${word(i + 2)}`);
  } else {
    tokens.push("\n| # | name | size |", "\n|--:|:--|:-:|");
    for (let i = 1; i <= Number(opts.table); i++) tokens.push(`\n| ${i}`, ` | ${word(i)}`, ` | ${i * 8 % 1000}`, " |");
  }
  tokens.push("\n\nThat", " is", " all.");
  return tokens;
}

// [[tool:NAME]] directives naming tools that were given, in order: [{name, arguments}].
function toolCalls(said, tools) {
  if (!Array.isArray(tools) || !tools.length) return [];
  const byName = new Map(tools.map((t) => [t?.function?.name ?? t?.name, t?.function ?? t]));
  const clean = said.replace(/\[\[\w+:[\w.-]+\]\]/g, "").trim();
  const calls = [];
  for (const m of said.matchAll(/\[\[tool:([\w.-]+)\]\]/g)) {
    const tool = byName.get(m[1]);
    if (!tool) continue;
    const key = Object.keys(tool.parameters?.properties ?? {})[0] ?? "input";
    calls.push({ name: m[1], arguments: { [key]: clean } });
  }
  return calls;
}

// Arguments text in pieces of 6 characters, as models stream them.
function argumentPieces(args) {
  const text = JSON.stringify(args);
  const pieces = [];
  for (let at = 0; at < text.length; at += 6) pieces.push(text.slice(at, at + 6));
  return pieces;
}

function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p.text === "string" ? p.text : "")).join("");
  return content == null ? "" : String(content);
}

function promptTokens(messages) {
  return messages.reduce((n, m) => n + (contentText(m.content).match(/\S+/g) ?? []).length + 3, 0);
}

// The prefix cache of one replica, as far as tests need it: a call that continues the key's
// last conversation (starts with all of its messages, and has more) finds that prompt cached.
// A repeated or unrelated conversation finds nothing, so answers stay predictable.
// A conversation is remembered as a digest per message and its prompt tokens, not its text:
// the tests send conversations of megabytes.
function remembered(messages) {
  return { digests: messages.map((m) => crypto.createHash("sha256").update(JSON.stringify(m)).digest("base64")), tokens: promptTokens(messages) };
}

function cachedTokens(previous, current) {
  if (!previous || previous.digests.length >= current.digests.length) return 0;
  return previous.digests.every((d, i) => d === current.digests[i]) ? previous.tokens : 0;
}

function mulberry32(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PAD = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

// Frames for one answer: {raw, token} where token marks a frame that carries model output
// (paced). `rand` makes the padding lengths, as random as the service's, but repeatable.
export function frames(model, answer, usage, rand) {
  const { tokens, thinking, truncated, opts } = answer;
  const out = [];
  const pad = () => PAD.slice(0, 1 + Math.floor(rand() * PAD.length));
  const data = (value) => `data: ${JSON.stringify(value)}\n\n`;
  if (opts.fault === "malformed") out.push({ raw: 'data: {"response": "bro\n\n', token: false });
  if (opts.shape === "2026") return frames2026(model, answer, usage, pad, data, out);
  if (isReasoningModel(model)) {
    const id = "chatcmpl-local";
    const created = 1767225600;
    const field = opts.reasoning ?? "reasoning_content";
    const chunk = (delta, finish = null, usageValue = undefined) => {
      const value = { id, object: "chat.completion.chunk", created, model,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish, stop_reason: null }] };
      if (usageValue !== undefined) value.usage = usageValue;
      value.p = pad();
      return data(value);
    };
    const zero = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    let sent = 0;
    const running = () => ({ prompt_tokens: usage.prompt_tokens, completion_tokens: sent,
      total_tokens: usage.prompt_tokens + sent });
    const cumulative = opts.usage === "cumulative";
    out.push({ raw: chunk({ role: "assistant", content: "" }, null, cumulative ? running() : undefined), token: false });
    thinking.forEach((t, i) => {
      sent += 1;
      const delta = field === "both" ? { reasoning_content: t, reasoning: t, content: null } : { [field]: t, content: null };
      out.push({ raw: chunk(delta, null, cumulative ? running() : undefined), token: true });
      if (opts.fault === "malformed" && i % 2 === 1) out.push({ raw: "data: {not json}\n\n", token: false });
    });
    tokens.forEach((t, i) => {
      sent += 1;
      out.push({ raw: chunk({ content: t }, null, cumulative ? running() : undefined), token: true });
      if (opts.fault === "malformed" && i % 2 === 1) out.push({ raw: "data: {not json}\n\n", token: false });
    });
    answer.calls.forEach((call, index) => {
      const id = `call_local_${index}`;
      out.push({ raw: chunk({ tool_calls: [{ index, id, type: "function", function: { name: call.name, arguments: "" } }], content: null }), token: true });
      for (const piece of argumentPieces(call.arguments)) {
        sent += 1;
        out.push({ raw: chunk({ tool_calls: [{ index, function: { arguments: piece } }], content: null }), token: true });
      }
    });
    const finish = truncated ? "length" : answer.calls.length ? "tool_calls" : "stop";
    if (opts.usage === "first") {
      out.push({ raw: chunk({}, finish, usage) });
      out.push({ raw: data({ response: "", usage: zero }) });
    } else if (cumulative) {
      out.push({ raw: chunk({}, finish, usage) });
    } else {
      out.push({ raw: chunk({}, finish, zero) });
      out.push({ raw: data({ response: "", usage }) });
    }
  } else {
    const native = (response) => data(response === undefined ? { tool_calls: [], p: pad() } : { response, tool_calls: [], p: pad() });
    out.push({ raw: native(""), token: false });
    const texts = [];
    if (thinking.length) {
      if (opts.thinktag !== "open") texts.push("<think>");
      for (const t of thinking) texts.push(t);
      texts.push("</think>");
    }
    // One push per token: a spread of 150,000 arguments overflows the stack.
    for (const t of tokens) texts.push(t);
    texts.forEach((t, i) => {
      out.push({ raw: native(t), token: true });
      if (opts.fault === "malformed" && i % 2 === 1) out.push({ raw: 'data: {"response": "bro\n\n', token: false });
    });
    // Native tool calls come whole, in one frame.
    if (answer.calls.length) out.push({ raw: data({ response: "", tool_calls: answer.calls, p: pad() }), token: true });
    out.push({ raw: native(""), token: false });
    out.push({ raw: native(undefined), token: false });
    out.push({ raw: data({ response: "", usage }) });
  }
  if (opts.fault !== "nodone") out.push({ raw: "data: [DONE]\n\n" });
  if (opts.fault === "bom") out[0] = { ...out[0], raw: "\uFEFF" + out[0].raw };
  return out;
}

// [[shape:2026]]: a heartbeat (`choices: []`, the usage so far) after every this many chunks.
export const HEARTBEAT_EVERY = 16;

function frames2026(model, answer, usage, pad, data, out) {
  const { tokens, thinking, truncated, opts } = answer;
  const id = "chatcmpl-local";
  const created = 1767225600;
  const echoed = model.startsWith("@cf/google/") ? `${model}-external` : model;
  const field = opts.reasoning ?? "reasoning";
  let sent = 0;
  let chunks = 0;
  const running = () => ({ prompt_tokens: usage.prompt_tokens, completion_tokens: sent, total_tokens: usage.prompt_tokens + sent });
  const chunk = (delta, finish = null, extra = {}) => {
    const choice = { index: 0, delta, logprobs: null, finish_reason: finish, stop_reason: null, token_ids: delta.content || delta[field] ? [1000 + sent] : [] };
    return data({ id, object: "chat.completion.chunk", created, model: echoed, choices: [choice], usage: running(), p: pad(), ...extra });
  };
  const push = (raw, token) => {
    out.push({ raw, token });
    if (++chunks % HEARTBEAT_EVERY === 0) out.push({ raw: data({ id, object: "chat.completion.chunk", created, model: echoed, choices: [], usage: running() }), token: false });
  };
  push(chunk({ role: "assistant", content: "" }, null, { prompt_token_ids: [1, 2, 3], kv_transfer_params: null }), false);
  for (const t of thinking) {
    sent += 1;
    const delta = field === "both" ? { reasoning_content: t, reasoning: t, content: null } : { [field]: t, content: null };
    push(chunk(delta), true);
  }
  for (const t of tokens) { sent += 1; push(chunk({ content: t }), true); }
  answer.calls.forEach((call, index) => {
    push(chunk({ tool_calls: [{ index, id: `call_local_${index}`, type: "function", function: { name: call.name, arguments: "" } }], content: null }), true);
    for (const piece of argumentPieces(call.arguments)) { sent += 1; push(chunk({ tool_calls: [{ index, function: { arguments: piece } }], content: null }), true); }
  });
  const finish = truncated ? "length" : answer.calls.length ? "tool_calls" : "stop";
  out.push({ raw: chunk({}, finish) });
  out.push({ raw: data({ response: "", usage }) });
  if (opts.fault !== "nodone") out.push({ raw: "data: [DONE]\n\n" });
  return out;
}

// Chunks for the wire: one frame per write, or (fault:split) the same bytes re-cut.
function chunksOf(list, opts) {
  if (opts.fault !== "split") return list.map((f) => ({ bytes: encoder.encode(f.raw), token: f.token }));
  const all = encoder.encode(list.map((f) => f.raw).join(""));
  const rand = mulberry32(1234);
  const chunks = [];
  for (let at = 0; at < all.length;) {
    const size = 1 + Math.floor(rand() * 24);
    chunks.push({ bytes: all.subarray(at, at + size), token: true });
    at += size;
  }
  return chunks;
}

// The whole answer as the non-streamed result object, in the model's shape.
function oneShot(model, answer, usage, format) {
  const text = answer.tokens.join("");
  const reasoning = answer.thinking.join("");
  const json = format?.type === "json_object" || format?.type === "json_schema";
  if (isReasoningModel(model)) {
    const tool_calls = answer.calls.map((call, index) => ({ id: `call_local_${index}`, type: "function",
      function: { name: call.name, arguments: JSON.stringify(call.arguments) } }));
    const message = { role: "assistant", content: answer.calls.length ? null : json ? JSON.stringify({ answer: text }) : text,
      reasoning_content: reasoning || null };
    if (tool_calls.length) message.tool_calls = tool_calls;
    return { id: "chatcmpl-local", object: "chat.completion", created: 1767225600, model,
      choices: [{ index: 0, message, finish_reason: answer.truncated ? "length" : tool_calls.length ? "tool_calls" : "stop" }], usage };
  }
  // Native JSON mode answers with the object itself in `response`.
  const response = json ? { answer: text } : reasoning ? `<think>${reasoning}</think>${text}` : text;
  return { response, tool_calls: answer.calls, usage };
}

// Embedding models (task "Text Embeddings") and the width of their vectors; a call takes at
// most EMBEDDING_BATCH texts (the input schema's maxItems), else 400, internalCode 5006.
export const EMBEDDING_WIDTHS = {
  "@cf/baai/bge-m3": 1024,
  "@cf/baai/bge-base-en-v1.5": 768,
  "@cf/baai/bge-small-en-v1.5": 384,
  "@cf/baai/bge-large-en-v1.5": 1024,
  "@cf/google/embeddinggemma-300m": 768,
};
export const EMBEDDING_BATCH = 100;

function embeddingTexts(inputs) {
  if (typeof inputs.text === "string") return [inputs.text];
  return Array.isArray(inputs.text) ? inputs.text.map(String) : null;
}

// A deterministic unit vector per text: numbers from a generator seeded by the text's SHA-256,
// as float32 values (what a model's tensor holds), so base64 and float answers are the same.
export function embeddingVector(text, width) {
  const seed = crypto.createHash("sha256").update(text, "utf8").digest().readInt32LE(0);
  const rand = mulberry32(seed);
  const raw = Array.from({ length: width }, () => rand() * 2 - 1);
  const norm = Math.sqrt(raw.reduce((sum, x) => sum + x * x, 0));
  return raw.map((x) => Math.fround(x / norm));
}

// As Workers AI answers: {shape: [n, width], data: [[...]], pooling}; no usage.
function embeddings(model, texts) {
  const width = EMBEDDING_WIDTHS[model];
  const data = texts.map((t) => embeddingVector(t, width));
  // [[fault:malformed]] in a text: its vector holds a null and a string among the numbers.
  texts.forEach((t, i) => { if (t.includes("[[fault:malformed]]")) data[i].splice(1, 2, null, "0.5"); });
  return { shape: [texts.length, width], data, pooling: "cls" };
}

function sendJson(res, status, value, headers = {}) {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

async function readBody(req) {
  const parts = [];
  for await (const part of req) parts.push(part);
  return Buffer.concat(parts).toString("utf8");
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The text of a simple PDF, as env.AI.toMarkdown's stand-in reads it: the strings its content
// streams show (Tj, TJ, ' and "; FlateDecode inflated), a line per text block. Real PDFs with
// embedded fonts and their own encodings need Cloudflare's conversion; this is for the tests.
export function pdfText(buf) {
  const raw = buf.toString("latin1");
  const lines = [];
  const head = /<<((?:[^<>]|<<[^]*?>>)*)>>\s*stream\r?\n/g;
  for (let m = head.exec(raw); m; m = head.exec(raw)) {
    const start = m.index + m[0].length;
    const end = raw.indexOf("endstream", start);
    if (end < 0) break;
    let data = buf.subarray(start, end);
    if (/\/FlateDecode/.test(m[1])) {
      try { data = zlib.inflateSync(data); } catch { continue; }
    }
    const text = data.toString("latin1");
    for (const block of text.split(/\bET\b/)) {
      const strings = [...block.matchAll(/\(((?:\\.|[^\\)])*)\)/g)].map((s) => s[1].replace(/\\([nrt()\\])/g, (_, c) => ({ n: "\n", r: "\r", t: "\t" })[c] ?? c));
      if (strings.length) lines.push(strings.join(""));
    }
  }
  return lines.join("\n\n");
}

export function startModel({ port = 0, paceMs = 40 } = {}) {
  const calls = [];
  let seq = 0;
  let catalog = CATALOG;
  let catalogFail = null;
  let catalogCalls = 0;
  const sessions = new Map();  // model + x-session-affinity -> its last call's conversation, remembered

  function search(url, res) {
    catalogCalls += 1;
    if (catalogFail === "hang") return;  // never answers: the Worker's own wait must end it
    if (catalogFail !== null) return sendJson(res, catalogFail, { success: false, errors: [{ code: 7000, message: "the catalog is unavailable (local fault)" }] });
    const q = url.searchParams;
    const task = q.get("task");
    const term = q.get("search");
    let found = catalog.filter((m) => (!task || m.task?.name === task || m.task?.id === task) && (!term || m.name.includes(term)));
    const perPage = Number(q.get("per_page") ?? 20);
    const page = Number(q.get("page") ?? 1);
    found = found.slice((page - 1) * perPage, page * perPage);
    sendJson(res, 200, { success: true, result: found, errors: [], messages: [] });
  }

  function header(req, name) {
    return req.headers[`mf-header-${name}`] ?? req.headers[name];
  }

  async function run(req, res, path) {
    const model = header(req, "cf-consn-model-id") ?? "";
    let body;
    try { body = JSON.parse(await readBody(req)); } catch { body = null; }
    const inputs = body?.inputs ?? {};
    const call = {
      id: ++seq, model, inputs, options: body?.options ?? null, path, startedAt: now(),
      affinity: header(req, "x-session-affinity") ?? null, queuedMs: 0,
      chunksSent: 0, chunksTotal: 0, closedAt: null, finishedAt: null, clientClosedAt: null,
      chunksAtClose: null, erroredAt: null, status: 200,
    };
    calls.push(call);
    if (calls.length > MAX_CALLS) calls.splice(0, calls.length - MAX_CALLS);
    const reqId = `local-${call.id}`;
    if (!body || typeof inputs !== "object") {
      call.status = 400;
      return sendJson(res, 400, { internalCode: 5006, description: "Error: request body is not a JSON object", name: "InferenceUpstreamError" });
    }
    // Workers AI's `prompt` input is one user message to the chat template; an embedding
    // call's texts carry their directives ([[error:3040]], say) the same way.
    const texts = embeddingTexts(inputs);
    const messages = Array.isArray(inputs.messages) ? inputs.messages
      : typeof inputs.prompt === "string" ? [{ role: "user", content: inputs.prompt }]
      : (texts ?? []).map((content) => ({ role: "user", content }));
    const answer = answerTokens(messages, inputs.max_tokens, inputs.tools);
    const { opts } = answer;
    const busy = [...contentText([...messages].reverse().find((m) => m.role === "user")?.content ?? "").matchAll(/\[\[busy:([\w.-]+)\]\]/g)]
      .some((m) => model.includes(m[1]));
    let code = opts.fault === "throw" ? 5000 : opts.error !== undefined ? Number(opts.error) : null;
    if (PAID_PLAN.test(model)) code = 5035;
    else if (busy && call.options?.rejectIfBusy === true) code = 3040;
    else if (busy) {
      // A caller that leaves while its call is queued: recorded, and nothing is sent after.
      const left = () => { call.clientClosedAt = call.closedAt = now(); call.chunksAtClose = 0; };
      res.once("close", left);
      call.queuedMs = BUSY_QUEUE_MS;
      await sleep(BUSY_QUEUE_MS);
      res.off("close", left);
      if (call.closedAt !== null) return;
    }
    if (code !== null) {
      const [status, name, description] = ERRORS[code] ?? [500, "InferenceUpstreamError", `error ${code}`];
      call.status = status;
      call.erroredAt = now();
      return sendJson(res, status, { internalCode: code, description, name }, { "cf-ai-req-id": reqId });
    }
    if (opts.fault === "hang") {
      // run() never answers: the Worker's own limit must end the request, and close this.
      res.on("close", () => { call.clientClosedAt = call.closedAt = now(); call.chunksAtClose = 0; });
      return;
    }
    if (texts !== null) {
      if (!EMBEDDING_WIDTHS[model]) {
        call.status = 400;
        return sendJson(res, 400, { internalCode: 5006, description: `Error: ${model} takes messages or prompt, not text`, name: "InferenceUpstreamError" });
      }
      if (texts.length > EMBEDDING_BATCH) {
        call.status = 400;
        return sendJson(res, 400, { internalCode: 5006, description: `Error: Array at '/text' has ${texts.length} items, more than ${EMBEDDING_BATCH}`, name: "InferenceUpstreamError" });
      }
      if (opts.pace !== undefined) {  // the call's own latency, which a caller may not wait out
        res.on("close", () => { if (call.finishedAt === null) { call.clientClosedAt = call.closedAt = now(); call.chunksAtClose = 0; } });
        await sleep(Number(opts.pace));
        if (res.destroyed) return;
      }
      call.finishedAt = now();
      return sendJson(res, 200, embeddings(model, texts), { "cf-ai-req-id": reqId });
    }
    if (EMBEDDING_WIDTHS[model]) {
      call.status = 400;
      return sendJson(res, 400, { internalCode: 5006, description: "Error: required properties at '/' are 'text'", name: "InferenceUpstreamError" });
    }
    const pt = promptTokens(messages);
    const completion = answer.tokens.length + answer.thinking.length + answer.calls.reduce((n, c) => n + argumentPieces(c.arguments).length, 0);
    const usage = { prompt_tokens: pt, completion_tokens: completion, total_tokens: pt + completion };
    if (opts.usage === "reasoning") usage.completion_tokens_details = { reasoning_tokens: answer.thinking.length };
    if (call.affinity !== null) {
      const session = `${model}\n${call.affinity}`;  // a cache belongs to one model's replicas
      const current = remembered(messages);
      const cached = cachedTokens(sessions.get(session), current);
      if (cached) usage.prompt_tokens_details = { cached_tokens: cached };
      sessions.delete(session);
      sessions.set(session, current);
      if (sessions.size > 1000) sessions.delete(sessions.keys().next().value);
    }
    if (!inputs.stream || opts.fault === "nostream") {
      // A whole answer takes as long as its tokens would have: a caller can leave meanwhile.
      const pace = opts.pace !== undefined ? Number(opts.pace) : paceMs;
      res.on("close", () => { if (call.finishedAt === null) { call.clientClosedAt = call.closedAt = now(); call.chunksAtClose = 0; } });
      const count = answer.tokens.length + answer.thinking.length;
      if (opts.rate !== undefined) await sleep((1000 * count) / Number(opts.rate));
      else if (pace > 0) await sleep(pace * count);
      if (res.destroyed) return;
      call.finishedAt = now();
      return sendJson(res, 200, oneShot(model, answer, usage, inputs.response_format), { "cf-ai-req-id": reqId });
    }
    const seed = [...JSON.stringify(messages)].reduce((h, c) => (Math.imul(h, 31) + c.charCodeAt(0)) | 0, 7);
    const chunks = chunksOf(frames(model, answer, usage, mulberry32(seed)), opts);
    call.chunksTotal = chunks.length;
    const pace = opts.pace !== undefined ? Number(opts.pace) : paceMs;
    if (opts.wire === "eof") { res.useChunkedEncodingByDefault = false; res.shouldKeepAlive = false; }
    res.writeHead(200, { "content-type": "text/event-stream", "cf-ai-req-id": reqId });
    res.flushHeaders();
    // The Worker leaving before the last byte is what the disconnect tests look for.
    res.on("close", () => {
      call.closedAt = now();
      if (call.finishedAt === null) { call.clientClosedAt = call.closedAt; call.chunksAtClose = call.chunksSent; }
    });
    let tokens = 0;
    const rate = Number(opts.rate ?? 0);
    const begun = performance.now();
    for (const chunk of chunks) {
      if (chunk.token && rate > 0) {
        const early = begun + (1000 * tokens) / rate - performance.now();
        if (early > 0) await sleep(early);
      } else if (chunk.token && pace > 0) await sleep(pace);
      if (res.destroyed || res.writableEnded) return;
      if (opts.fault === "stall" && tokens >= 2) return;  // silent forever; the socket stays open
      if (opts.fault === "midstream" && tokens >= 3) {
        // What was written goes out first, as on a real network: destroy() drops unflushed writes.
        await new Promise((resolve) => res.write("", resolve));
        await sleep(5);
        call.erroredAt = now();
        res.destroy(new Error("fault:midstream"));
        return;
      }
      if (chunk.token) tokens += 1;
      call.chunksSent += 1;
      // Held back (the Worker reads nothing): wait for room, and leave no listener behind.
      if (!res.write(chunk.bytes)) {
        await new Promise((resolve) => {
          const go = () => { res.off("drain", go); res.off("close", go); resolve(); };
          res.once("drain", go);
          res.once("close", go);
        });
      }
    }
    call.finishedAt = now();
    res.end();
  }

  // POST /to-everything/markdown/transformer: what env.AI.toMarkdown() sends (workerd's
  // ToMarkdownService, base64 files), answered as Cloudflare answers: {result: [{name,
  // mimeType, format: "markdown", tokens, data} or {format: "error", error}]}. PDFs through
  // pdfText, text as it is; anything else is an error result. Recorded in /__local/calls.
  async function toMarkdown(req, res) {
    const { files = [] } = JSON.parse(await readBody(req) || "{}");
    const result = files.map((f, i) => {
      const bytes = Buffer.from(String(f.data ?? ""), "base64");
      const base = { id: String(i), name: f.name, mimeType: f.mimeType };
      if (f.mimeType === "application/pdf") {
        if (!bytes.subarray(0, 5).equals(Buffer.from("%PDF-"))) return { ...base, format: "error", error: "The file is not a valid PDF." };
        const data = pdfText(bytes);
        return { ...base, format: "markdown", tokens: data.split(/\s+/).filter(Boolean).length, data };
      }
      if (String(f.mimeType).startsWith("text/")) return { ...base, format: "markdown", tokens: 0, data: bytes.toString("utf8") };
      return { ...base, format: "error", error: `Unsupported file type: ${f.mimeType}` };
    });
    calls.push({ seq: ++seq, model: "toMarkdown", inputs: { files: files.map((f) => ({ name: f.name, mimeType: f.mimeType, bytes: Buffer.from(String(f.data ?? ""), "base64").length })) }, result, closedAt: now() });
    sendJson(res, 200, { success: true, result });
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.headers["mf-url"] ?? req.url, "http://model.local");
    if (req.method === "GET" && url.pathname === "/__local/calls") return sendJson(res, 200, calls);
    if (req.method === "DELETE" && url.pathname === "/__local/calls") { calls.length = 0; return sendJson(res, 200, {}); }
    if (req.method === "GET" && url.pathname === "/ai-api/models/search") return search(url, res);
    if (url.pathname === "/__local/catalog") {
      if (req.method === "GET") return sendJson(res, 200, { calls: catalogCalls, fail: catalogFail, models: catalog.length });
      if (req.method === "DELETE") { catalog = CATALOG; catalogFail = null; catalogCalls = 0; return sendJson(res, 200, {}); }
      if (req.method === "PUT") {
        return readBody(req).then((text) => {
          const change = JSON.parse(text || "{}");
          if (Array.isArray(change.models)) catalog = change.models;
          catalogFail = change.fail ?? null;
          sendJson(res, 200, {});
        }).catch((err) => sendJson(res, 400, { error: String(err) }));
      }
    }
    if (req.method === "POST" && (url.pathname === "/run" || url.pathname === "/ai-gateway/run")) {
      return run(req, res, url.pathname).catch((err) => { console.error(err); if (!res.headersSent) sendJson(res, 500, { internalCode: 5000, description: "built-in model crashed", name: "InferenceUpstreamError" }); else res.destroy(); });
    }
    if (req.method === "POST" && url.pathname === "/to-everything/markdown/transformer") {
      return toMarkdown(req, res).catch((err) => sendJson(res, 400, { success: false, errors: [{ code: 1000, message: String(err) }] }));
    }
    // Anything else (miniflare's RPC websocket for non-fetch calls included) is not served.
    sendJson(res, 404, { internalCode: 5007, description: `no route ${req.method} ${url.pathname}`, name: "InferenceUpstreamError" });
  });
  // Longer than workerd's own idle limit for pooled connections (kj's HttpClientSettings default,
  // 5 s): with equal limits a request workerd sends on a connection as this server closes it
  // fails, and the Worker answers 502 (bench/notes/2026-11-24-soak.md). workerd closes first.
  server.keepAliveTimeout = 65_000;
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve({ server, calls, url: `http://127.0.0.1:${server.address().port}/` }));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { port: { type: "string" }, pace: { type: "string" } } });
  const { url } = await startModel({ port: Number(values.port ?? 0), paceMs: Number(values.pace ?? 40) });
  console.log(`built-in model on ${url}`);
  // Started by the launcher with a pipe on stdin: when the launcher dies, so does the model.
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("error", () => process.exit(0));
  process.stdin.resume();
}
