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
  assert.deepEqual(cutsOf("Para\n\n- a\n- b\n\n- loose c\n\nEnd\n"), ["Para\n\n", "Para\n\n- a\n- b\n\n- loose c\n\n"],
    "a list after a paragraph begins a new block; its items after a blank line do not");
  assert.deepEqual(cutsOf("Para\n- a\n\n- b\n"), [], "a list that interrupts a paragraph is open all the same");
  assert.deepEqual(cutsOf("Para\n\nNext"), [], "the next block's first line is not finished: it could still be a list item");
  assert.deepEqual(cutsOf("``` inline ``` text\n\nNext\n"), ["``` inline ``` text\n\n"], "backticks in a ` fence's info string make it inline code, not a fence");
});

// Its speed on this answer is bench/speed/markdown-blocks.test.mjs's (make bench, issue 44).
test("the cut is found on a 4,000-token answer fed token by token", () => {
  const block = "Some words in a paragraph that goes on.\n\n```js\nconst x = 1;\n```\n\n- a\n- b\n\n";
  const text = block.repeat(250);
  const tokens = text.match(/\s*\S+/g);
  const splitter = new BlockSplitter();
  let so = "", cut = 0;
  for (const t of tokens) { so += t; cut = splitter.advance(so); }
  assert.ok(tokens.length >= 4000, `${tokens.length} tokens`);
  // The last cut is before the last list: it is still open (a loose item could follow).
  assert.equal(cut, text.length - block.length + block.indexOf("- a"));
});

import { GrowingBlock } from "../../public/markdown-blocks.js";

/** Feeds text one character at a time, as a stream would; returns the finished units' texts. */
function grow(text, final = false) {
  const g = new GrowingBlock();
  for (let i = 1; i <= text.length; i++) g.scan(text.slice(0, i));
  if (final) g.scan(text, true);
  return { kind: g.kind, given: g.given, units: g.units.map(([a, b]) => text.slice(a, b)), head: text.slice(0, g.prefixEnd), open: g.open, end: g.end };
}

test("a growing table: header once, each row finished when its line ends, the block's end at the blank line", () => {
  const text = "| a | b |\n|:-|--:|\n| 1 | 2 |\n| 3 | 4 |\n\nAfter\n";
  const g = grow(text);
  assert.deepEqual([g.kind, g.given, g.head, g.units], ["table", false, "| a | b |\n|:-|--:|\n", ["| 1 | 2 |\n", "| 3 | 4 |\n"]]);
  assert.equal(g.end, text.indexOf("\n\n") + 1);
  assert.deepEqual(grow("| a | b |\n|---|\n| 1 | 2 |\n").given, true, "a delimiter row with fewer cells is no table");
  assert.deepEqual(grow("| a |\n|---|\n| 1 |\n# heading\n").given, true, "a line that may start a block: give up");
  assert.deepEqual(grow("Just a paragraph\n").given, true);
});

test("a growing tight list: an item is finished when the next begins; loose lists and lazy lines give up", () => {
  const g = grow("- a\n- b\n  more of b\n- c\n\nAfter\n");
  assert.deepEqual([g.kind, g.given, g.units], ["list", false, ["- a\n", "- b\n  more of b\n", "- c\n"]]);
  assert.deepEqual(grow("1. one\n2. two\n3. thr").units, ["1. one\n"], "the next item begins only when its line is whole");
  assert.deepEqual(grow("1. one\n2. two\n3. three\n").units, ["1. one\n", "2. two\n"]);
  assert.deepEqual(grow("1. one\n2. two", true).units, ["1. one\n", "2. two"], "at the end the last item is finished too");
  assert.deepEqual(grow("- one\n\n- two\n").given, true, "loose");
  assert.deepEqual(grow("- one\nlazy line\n").given, true, "lazy continuation");
  assert.deepEqual(grow("- one\n* two\n").given, true, "another marker starts another list");
  assert.deepEqual(grow("- only\n\nAfter\n").units, ["- only\n"]);
});
