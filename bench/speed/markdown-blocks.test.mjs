// The page's block splitter finds the cut in linear time: a 4,000-token answer fed token by
// token in well under 200 ms. A speed check, so make bench runs it, not make test (issue 44).
import { test } from "node:test";
import assert from "node:assert/strict";
import { BlockSplitter } from "../../public/markdown-blocks.js";

test("the cut is found in linear time on a 4,000-token answer fed token by token", (t) => {
  const block = "Some words in a paragraph that goes on.\n\n```js\nconst x = 1;\n```\n\n- a\n- b\n\n";
  const tokens = block.repeat(250).match(/\s*\S+/g);
  const splitter = new BlockSplitter();
  let so = "";
  const started = performance.now();
  for (const token of tokens) { so += token; splitter.advance(so); }
  const ms = performance.now() - started;
  t.diagnostic(`${tokens.length} tokens: ${ms.toFixed(1)} ms`);
  assert.ok(ms < 200, `${ms} ms`);
});
