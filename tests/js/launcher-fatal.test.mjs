// The launcher's reading of workerd's output (miniflare 5 hands it over a line at a time as
// {level, message}): lines pass through, warnings and errors to stderr, and Pyodide's fatal
// error is reported (workerd then ends; miniflare starts it again and the launcher says so).
import { test } from "node:test";
import assert from "node:assert/strict";
import { PYODIDE_FATAL, runtimeLogs } from "../../local/launch.mjs";

test("a fatal error at any level is reported, every line passes through", () => {
  const seen = [];
  const logged = [];
  const { log, error } = console;
  console.log = (line) => logged.push(["out", line]);
  console.error = (line) => logged.push(["err", line]);
  try {
    const handle = runtimeLogs(() => seen.push("fatal"));
    handle({ level: "log", message: '{"message":"request"}' });
    handle({ level: "error", message: `${PYODIDE_FATAL}. Please report this to the Pyodide maintainers.` });
    handle({ level: "warn", message: "The cause of the fatal error was:" });
    handle({ level: "info", message: `stdout says ${PYODIDE_FATAL} too` });
  } finally {
    console.log = log;
    console.error = error;
  }
  assert.deepEqual(seen, ["fatal", "fatal"]);
  assert.deepEqual(logged, [
    ["out", '{"message":"request"}'],
    ["err", `${PYODIDE_FATAL}. Please report this to the Pyodide maintainers.`],
    ["err", "The cause of the fatal error was:"],
    ["out", `stdout says ${PYODIDE_FATAL} too`],
  ]);
});
