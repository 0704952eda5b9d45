// The launcher's watch on workerd's output: lines pass through, and Pyodide's fatal error is
// reported (the launcher then restarts workerd: the pinned workerd cannot replace the isolate).
import { test } from "node:test";
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { PYODIDE_FATAL, watchRuntime } from "../../local/launch.mjs";

test("a fatal error on either stream is reported, every line passes through", async () => {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const seen = [];
  const logged = [];
  const { log, error } = console;
  console.log = (line) => logged.push(["out", line]);
  console.error = (line) => logged.push(["err", line]);
  try {
    watchRuntime(() => seen.push("fatal"))(stdout, stderr);
    stdout.write('{"message":"request"}\n');
    stderr.write(`${PYODIDE_FATAL}. Please report this to the Pyodide maintainers.\nThe cause`);
    stderr.end(" of the fatal error was:\n");
    stdout.end();
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    console.log = log;
    console.error = error;
  }
  assert.deepEqual(seen, ["fatal"]);
  assert.deepEqual(logged, [
    ["out", '{"message":"request"}'],
    ["err", `${PYODIDE_FATAL}. Please report this to the Pyodide maintainers.`],
    ["err", "The cause of the fatal error was:"],
  ]);
});
