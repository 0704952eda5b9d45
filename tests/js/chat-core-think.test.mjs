// The Think toggle's decisions without a browser: which models have one, what each choice
// sends, what it says of a model that cannot stop thinking, and how a chat keeps its choice.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  THINK_KEY, loadThink, saveThink, thinkBody, thinkControlsFrom, thinkDefaultFrom, thinkNote, thinkOf,
} from "../../public/chat-core.js";
import { chatFromServer, loadDurable, saveDurable } from "../../public/durable-chats.js";

const GEMMA = "@cf/google/gemma-4-26b-a4b-it", OSS = "@cf/openai/gpt-oss-20b", LLAMA = "@cf/meta/llama-3.1-8b-instruct-fast";
const R1 = "@cf/deepseek-ai/deepseek-r1-distill-qwen-32b", KIMI = "@cf/moonshotai/kimi-k2.6", ODD = "@cf/someone/new-reasoner";
const CANNOT = "cannot be turned off: reasoning_effort none sends its lowest level";
// As GET /api/v1/models says them (src/base/thinking.py Control.describe).
const MODELS = {
  models: [GEMMA, LLAMA, OSS, R1, KIMI, ODD],
  reasoning: [OSS, R1, KIMI, ODD],
  capabilities: {
    [GEMMA]: { vision: true, reasoning: false, reasoning_control: { kind: "switch", can_turn_off: true, field: "chat_template_kwargs.enable_thinking", default: "on" } },
    [LLAMA]: { vision: false, reasoning: false, reasoning_control: { kind: "none", can_turn_off: false } },
    [OSS]: { reasoning: true, reasoning_control: { kind: "effort", can_turn_off: false, field: "reasoning_effort", levels: ["low", "medium", "high"], default: "medium", note: CANNOT } },
    [R1]: { reasoning: true, reasoning_control: { kind: "fixed", can_turn_off: false, note: "always reasons; takes no control" } },
    [KIMI]: { reasoning: true, reasoning_control: { kind: "effort", can_turn_off: true, field: "reasoning_effort", levels: ["none", "high"] } },
    [ODD]: { reasoning: true, reasoning_control: { kind: "unknown", can_turn_off: false, field: "reasoning_effort" } },
  },
};

test("a toggle for every model that thinks (switched by its template or not), none for the others", () => {
  const controls = thinkControlsFrom(MODELS);
  assert.deepEqual(Object.keys(controls).sort(), [GEMMA, OSS, R1, KIMI, ODD].sort());
  assert.deepEqual(controls[GEMMA], { kind: "switch", canTurnOff: true, levels: [] });
  assert.deepEqual(controls[OSS], { kind: "effort", canTurnOff: false, levels: ["low", "medium", "high"] });
  assert.deepEqual(controls[R1], { kind: "fixed", canTurnOff: false, levels: [] });
  // A service that names reasoning models but not their controls: a toggle that promises nothing.
  assert.deepEqual(thinkControlsFrom({ reasoning: [OSS] }), { [OSS]: { kind: "unknown", canTurnOff: false, levels: [] } });
  for (const old of [{}, null, { capabilities: null }, { reasoning: "x" }]) assert.deepEqual(thinkControlsFrom(old), {});
});

test("on sends reasoning_effort medium, off sends none; a model that takes no control gets nothing", () => {
  const controls = thinkControlsFrom(MODELS);
  for (const id of [GEMMA, OSS, KIMI, ODD]) {
    assert.deepEqual(thinkBody(true, controls[id]), { reasoning_effort: "medium" }, id);
    assert.deepEqual(thinkBody(false, controls[id]), { reasoning_effort: "none" }, id);
  }
  assert.deepEqual(thinkBody(true, controls[R1]), {});
  assert.deepEqual(thinkBody(false, controls[R1]), {});
  assert.deepEqual(thinkBody(true, controls[LLAMA]), {});
  assert.deepEqual(thinkBody(false, undefined), {});
});

test("the toggle says so where off does not stop the thinking, and nothing where it does", () => {
  const controls = thinkControlsFrom(MODELS);
  assert.equal(thinkNote(controls[GEMMA], "Gemma 4 26B"), "");
  assert.equal(thinkNote(controls[KIMI], "kimi K2.6"), "");
  assert.equal(thinkNote(controls[OSS], "gpt-oss 20B"), "gpt-oss 20B always thinks: off asks for its least (low).");
  assert.equal(thinkNote(controls[R1], "R1"), "R1 always thinks: it takes no setting.");
  assert.match(thinkNote(controls[ODD], "New"), /^New may think with Think off/);
});

test("a chat keeps its own choice; one without starts from the browser's last, off when none was made", () => {
  assert.equal(thinkOf({ think: true }, false), true);
  assert.equal(thinkOf({ think: false }, true), false);
  assert.equal(thinkOf({}, true), true);
  assert.equal(thinkOf(null, undefined), false);
  const store = new Map();
  const storage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v) };
  assert.equal(loadThink(storage), null, "no choice made yet");
  saveThink(storage, true);
  assert.equal(store.get(THINK_KEY), "on");
  assert.equal(loadThink(storage), true);
  saveThink(storage, false);
  assert.equal(loadThink(storage), false);
  const full = { getItem: () => { throw new Error("denied"); }, setItem: () => { throw new Error("full"); } };
  assert.equal(loadThink(full), null);
  saveThink(full, true);   // no throw
});

test("before any choice, Think starts as the service's AI_THINKING says: on only for auto", () => {
  assert.equal(thinkDefaultFrom({ thinking: "auto" }), true);
  for (const said of [{ thinking: "off" }, {}, null, { thinking: true }]) assert.equal(thinkDefaultFrom(said), false);
});

test("a durable chat's choice is saved in the browser's list and read back with it", () => {
  const store = new Map();
  const storage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v) };
  const a = "1".repeat(32), b = "2".repeat(32);   // conversation ids: 32 hex digits
  const state = { currentId: "x", chats: [
    { id: "x", conversation: a, title: "", model: "", think: true, messages: [] },
    { id: "y", conversation: b, title: "", model: "", messages: [] },
  ] };
  saveDurable(storage, state);
  const saved = loadDurable(storage);
  assert.deepEqual(saved.chats.map((c) => c.think), [true, undefined], JSON.stringify(saved));
  assert.equal(chatFromServer(saved.chats[0], null).think, true);
  assert.equal("think" in chatFromServer(saved.chats[1], null), false);
});
