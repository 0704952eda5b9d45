// The browser's SSE parser is linear in its input (issue 22): the old one took 6.3 s and 7.9 s
// on these (quadratic rescans and concatenations); a linear one takes tens of milliseconds.
// A speed check, so make bench runs it, not make test (issue 44); the bound is generous.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SSEParser } from "../../public/chat-client.js";

test("64,000 events in one read, and a 1 MiB line in 64-character reads, each well under 2 s", (t) => {
  const one = 'event: content_block_delta\ndata: {"index":0,"text":"tok"}\n\n';
  const wire = one.repeat(64000);
  let started = performance.now();
  const events = new SSEParser().feed(wire);
  const manyMs = performance.now() - started;
  assert.equal(events.length, 64000);

  const big = "data: " + "y".repeat(1 << 20) + "\n\n";
  const p = new SSEParser();
  let got = [];
  started = performance.now();
  for (let i = 0; i < big.length; i += 64) got = got.concat(p.feed(big.slice(i, i + 64)));
  const lineMs = performance.now() - started;
  assert.equal(got.length, 1);

  const figures = `SSE parser: 64,000 events in one read ${manyMs.toFixed(1)} ms; 1 MiB line in ${Math.ceil(big.length / 64)} reads of 64 characters ${lineMs.toFixed(1)} ms`;
  t.diagnostic(figures);
  assert.ok(manyMs < 2000, figures);
  assert.ok(lineMs < 2000, figures);
});
