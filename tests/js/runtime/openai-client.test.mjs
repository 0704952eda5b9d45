// The npm `openai` client (pinned in package.json) against the Worker on workerd: a tool
// round trip streamed, and models.retrieve() with an id that has slashes. It starts its own
// runtime with the launcher and stops it by closing the launcher's stdin.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const MODEL = "@cf/openai/gpt-oss-20b";
const WEATHER = { type: "function", function: { name: "get_weather", description: "The weather now",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } };

let launcher;
let client;

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
  client = new OpenAI({ baseURL: `${ready.url.replace(/\/$/, "")}/v1`, apiKey: "unused", maxRetries: 0, timeout: 10_000 });
}, { timeout: 200_000 });

after(async () => {
  if (!launcher || launcher.exitCode !== null) return;
  const exited = new Promise((resolve) => launcher.once("exit", resolve));
  launcher.stdin.end();
  await exited;
});

test("a streamed tool call round trip through the npm openai client", async () => {
  const messages = [{ role: "user", content: "[[tool:get_weather]] Lyon" }];
  const stream = await client.chat.completions.create({ model: MODEL, messages, tools: [WEATHER], stream: true });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    for (const piece of choice.delta.tool_calls ?? []) {
      if (piece.id) calls[piece.index] = { id: piece.id, type: piece.type, name: piece.function.name, arguments: "" };
      calls[piece.index].arguments += piece.function?.arguments ?? "";
    }
    finish = choice.finish_reason ?? finish;
  }
  assert.equal(finish, "tool_calls");
  assert.deepEqual(calls.map((c) => [c.type, c.name, JSON.parse(c.arguments)]), [["function", "get_weather", { city: "Lyon" }]]);

  const follow = [...messages,
    { role: "assistant", content: null, tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) },
    { role: "tool", tool_call_id: calls[0].id, content: "rain" }];
  const answer = await client.chat.completions.create({ model: MODEL, messages: follow, tools: [WEATHER] });
  assert.equal(answer.choices[0].finish_reason, "stop");
  assert.equal(answer.choices[0].message.content, `The tool ${calls[0].id} said: rain.`);
});

test("models.retrieve() takes an id with slashes; an unknown id is a NotFoundError", async () => {
  const model = await client.models.retrieve(MODEL);
  assert.deepEqual({ id: model.id, object: model.object }, { id: MODEL, object: "model" });
  await assert.rejects(client.models.retrieve("@cf/nope/x"), (err) => err instanceof OpenAI.NotFoundError && err.code === "model_not_found");
});
