// The streaming renderer's cut points: text before a cut renders the same as in the whole.
import { test } from "node:test";
import assert from "node:assert/strict";
import { BlockSplitter } from "../../public/markdown-blocks.js";

function cutsOf(text) {
  const splitter = new BlockSplitter();
  const cuts = new Set();
  for (let i = 0; i <= text.length; i++) cuts.add(splitter.advance(text.slice(0, i)));
  return [...cuts].filter((c) => c > 0).map((c) => text.slice(0, c));
}

test("paragraphs, headings and tables are cut between blocks", () => {
  const text = "# Title\n\nFirst para\nstill first.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nLast\n";
  assert.deepEqual(cutsOf(text), ["# Title\n\n", "# Title\n\nFirst para\nstill first.\n\n", "# Title\n\nFirst para\nstill first.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"]);
});

test("never inside a code fence, even across blank lines; after it closes, yes", () => {
  const text = "Intro\n\n```python\ndef f():\n\n    return 1\n```\n\nAfter\n\n~~~~\n```\n\nstill code\n~~~~\n\nEnd\n";
  assert.deepEqual(cutsOf(text), ["Intro\n\n", "Intro\n\n```python\ndef f():\n\n    return 1\n```\n\n", "Intro\n\n```python\ndef f():\n\n    return 1\n```\n\nAfter\n\n", "Intro\n\n```python\ndef f():\n\n    return 1\n```\n\nAfter\n\n~~~~\n```\n\nstill code\n~~~~\n\n"]);
});

test("not inside loose lists or indented blocks; an unfinished line is never a cut", () => {
  assert.deepEqual(cutsOf("- one\n\n- two\n\n  more of two\n\n1. three\n\n    code\n"), []);
  assert.deepEqual(cutsOf("Para\n\nNext\n"), ["Para\n\n"]);
  assert.deepEqual(cutsOf("Para\n\nNext"), [], "the next block's first line is not finished: it could still be a list item");
  assert.deepEqual(cutsOf("``` inline ``` text\n\nNext\n"), ["``` inline ``` text\n\n"], "backticks in a ` fence's info string make it inline code, not a fence");
});

test("the cut is found in linear time on a 4,000-token answer fed token by token", () => {
  const block = "Some words in a paragraph that goes on.\n\n```js\nconst x = 1;\n```\n\n- a\n- b\n\n";
  const text = block.repeat(250);
  const tokens = text.match(/\s*\S+/g);
  const splitter = new BlockSplitter();
  let so = "", cut = 0;
  const started = performance.now();
  for (const t of tokens) { so += t; cut = splitter.advance(so); }
  const ms = performance.now() - started;
  assert.ok(tokens.length >= 4000, `${tokens.length} tokens`);
  // The last cut is before the last code fence: the list after it is still open.
  assert.equal(cut, text.length - block.length + block.indexOf("```js"));
  assert.ok(ms < 200, `${ms} ms`);
});
