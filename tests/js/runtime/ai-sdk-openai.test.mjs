// @ai-sdk/openai's default client, `openai(model)` (the Responses API), against the Worker on
// workerd (issue 34): the reasoning it shows (`reasoningText`, one reasoning part, no
// duplicate) and the usage details it reads, streamed and not. It reads only the reasoning
// summary, so before the summary events its reasoning was empty. Two turns: the second refers
// to the first's stored items by id (item_reference; store defaults to true), and the model
// must see them (the built-in model's calls). A tool loop after reasoning, generated and
// streamed: the follow-up step refers to the stored reasoning, and the model sees its call.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const MODEL = "@cf/openai/gpt-oss-20b";
const SAID = "[[pace:0]] [[think:3]] [[usage:reasoning]] the capital of France?";

let launcher;
let openai;
let modelUrl;

before(async () => {
  launcher = spawn(process.execPath, ["local/launch.mjs", "--port", "0", "--pace", "1", "--exit-on-stdin-eof"],
    { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: launcher.stdout });
  const ready = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the launcher was not ready in 180 s")), 180_000);
    launcher.once("exit", (code) => reject(new Error(`the launcher exited (${code}) before it was ready`)));
    lines.on("line", (line) => {
      if (line.startsWith("{") && line.includes('"message":"ready"')) { clearTimeout(timer); resolve(JSON.parse(line)); }
    });
  });
  modelUrl = ready.model.replace(/\/$/, "");
  openai = createOpenAI({ baseURL: `${ready.url.replace(/\/$/, "")}/v1`, apiKey: "unused" });
}, { timeout: 200_000 });

after(async () => {
  if (!launcher || launcher.exitCode !== null) return;
  const exited = new Promise((resolve) => launcher.once("exit", resolve));
  launcher.stdin.end();
  await exited;
});

test("generateText shows the reasoning once and reads its token counts", async () => {
  const result = await generateText({ model: openai(MODEL), prompt: SAID });
  assert.equal(result.reasoningText, "Let me think");
  assert.deepEqual(result.reasoning.map((r) => [r.type, r.text]), [["reasoning", "Let me think"]]);
  assert.ok(result.text.length > 0 && !result.text.includes("Let me think"), result.text);
  assert.equal(result.usage.outputTokenDetails.reasoningTokens, 3);
  assert.equal(result.usage.inputTokenDetails.cacheReadTokens, 0);
});

test("streamText streams the reasoning once, then the text", async () => {
  const result = streamText({ model: openai(MODEL), prompt: SAID });
  const parts = [];
  for await (const part of result.fullStream) parts.push(part);
  const kinds = parts.map((p) => p.type).filter((t) => t.startsWith("reasoning") || t.startsWith("text-"));
  const first = kinds.indexOf("text-start");
  assert.deepEqual(kinds.slice(0, first), ["reasoning-start", "reasoning-delta", "reasoning-delta", "reasoning-delta", "reasoning-end"]);
  assert.ok(kinds.slice(first).every((t) => t.startsWith("text-")), kinds.join(","));
  assert.equal(await result.reasoningText, "Let me think");
  assert.equal((await result.usage).outputTokenDetails.reasoningTokens, 3);
});

test("a second turn refers to the first's stored items, and the model sees them", async () => {
  const first = [{ role: "user", content: SAID }];
  const one = await generateText({ model: openai(MODEL), messages: first });
  const itemIds = one.response.messages.flatMap((m) => m.content.map((p) => p.providerOptions?.openai?.itemId));
  assert.ok(itemIds.length > 0 && itemIds.every((id) => typeof id === "string"), JSON.stringify(itemIds));
  const second = [...first, ...one.response.messages, { role: "user", content: "[[pace:0]] and Spain?" }];
  const two = await generateText({ model: openai(MODEL), messages: second });
  assert.ok(two.text.length > 0);
  const calls = await (await fetch(`${modelUrl}/__local/calls`)).json();
  const seen = calls.at(-1).inputs.messages.map((m) => [m.role, m.content]);
  assert.deepEqual(seen, [["user", SAID], ["assistant", one.text], ["user", "[[pace:0]] and Spain?"]]);
});


// A reasoning model that calls a tool, then the follow-up step with the tool's result: the SDK
// sends the first step's reasoning as an item_reference (store defaults to true), so the
// Worker must find it in storage and hand the model its call and reasoning back.
const WEATHER = "[[pace:0]] [[think:3]] [[tool:get_weather]] Paris";

function weatherTool(ran) {
  return tool({
    description: "The weather in a city",
    inputSchema: jsonSchema({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
    execute: async ({ city }) => { ran.push(city); return `sunny in ${city}`; },
  });
}

async function assertTheModelSawTheStoredCall() {
  const calls = await (await fetch(`${modelUrl}/__local/calls`)).json();
  const [first, second] = calls.slice(-2).map((c) => c.inputs.messages);
  assert.deepEqual(first, [{ role: "user", content: WEATHER }]);
  assert.deepEqual(second, [
    { role: "user", content: WEATHER },
    { role: "assistant", content: "", reasoning: "Let me think",
      tool_calls: [{ id: "call_local_0", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
    { role: "tool", content: "sunny in Paris", tool_call_id: "call_local_0" },
  ]);
}

test("generateText: a tool loop after reasoning continues from the stored reasoning", async () => {
  const ran = [];
  const result = await generateText({
    model: openai(MODEL), prompt: WEATHER, tools: { get_weather: weatherTool(ran) }, stopWhen: stepCountIs(3),
  });
  assert.deepEqual(ran, ["Paris"], "the tool ran once");
  assert.equal(result.text, "The tool call_local_0 said: sunny in Paris.");
  assert.deepEqual(result.steps.map((s) => s.finishReason), ["tool-calls", "stop"]);
  for (const step of result.steps) {
    assert.deepEqual(step.reasoning.map((r) => [r.type, r.text]), [["reasoning", "Let me think"]]);
  }
  const reasoningId = result.steps[0].reasoning[0].providerMetadata.openai.itemId;
  assert.match(reasoningId, /^rs_[0-9a-f]{32}_0$/);
  const referred = result.steps[1].request.body.input.filter((i) => i.type === "item_reference");
  assert.deepEqual(referred, [{ type: "item_reference", id: reasoningId }]);
  await assertTheModelSawTheStoredCall();
});

test("streamText: the same tool loop, each step's reasoning streamed once", async () => {
  const ran = [];
  const result = streamText({
    model: openai(MODEL), prompt: WEATHER, tools: { get_weather: weatherTool(ran) }, stopWhen: stepCountIs(3),
  });
  const parts = [];
  for await (const part of result.fullStream) parts.push(part);
  const kinds = parts.map((p) => p.type).filter((t) => ["reasoning-start", "tool-call", "tool-result", "text-start", "finish-step", "error"].includes(t));
  assert.deepEqual(kinds, ["reasoning-start", "tool-call", "tool-result", "finish-step", "reasoning-start", "text-start", "finish-step"]);
  assert.deepEqual(ran, ["Paris"], "the tool ran once");
  assert.equal(await result.text, "The tool call_local_0 said: sunny in Paris.");
  assert.equal(await result.reasoningText, "Let me think");
  await assertTheModelSawTheStoredCall();
});
