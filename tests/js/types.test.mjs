// chat-client.d.ts under `tsc --strict`: the usage file, the README's own example, and
// mistakes the types must catch (so a declaration that accepts anything fails here).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as client from "../../public/chat-client.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");
const CLIENT = join(ROOT, "public", "chat-client.js");

/** Compiles the given files in a fresh project; returns tsc's output ("" when clean). */
function compile(files) {
  const dir = mkdtempSync(join(tmpdir(), "chat-client-types-"));
  try {
    const names = Object.entries(files).map(([name, source]) => {
      if (source !== null) writeFileSync(join(dir, name), source);
      return source === null ? name : join(dir, name);
    });
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        strict: true, noEmit: true, target: "es2022", module: "esnext", moduleResolution: "bundler",
        lib: ["es2022", "dom", "dom.iterable", "dom.asynciterable"], types: [],
        // The README imports the client the way a page does, from the site root.
        paths: { "/chat-client.js": [CLIENT.replace(/\.js$/, "")] },
      },
      files: names,
    }));
    try {
      execFileSync(process.execPath, [TSC, "-p", dir, "--pretty", "false"], { encoding: "utf8", cwd: dir });
      return "";
    } catch (err) {
      return err.stdout + err.stderr;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The ```js block of the README's client section that calls streamChat. */
function readmeExample() {
  const readme = readFileSync(join(ROOT, "docs", "API.md"), "utf8");
  const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
  const example = blocks.find((b) => b.includes("streamChat(") && b.includes('from "/chat-client.js"'));
  assert.ok(example, "docs/API.md has no ```js block importing streamChat from /chat-client.js");
  return example;
}

test("the declarations name exactly what the module exports", () => {
  const declared = [...readFileSync(CLIENT.replace(/\.js$/, ".d.ts"), "utf8").matchAll(/^export declare (?:function|class) (\w+)/gm)]
    .map((m) => m[1]).sort();
  assert.deepEqual(declared, Object.keys(client).sort());
});

// One tsc run for every file (each run costs most of a second): tsc reports each error with
// its file, so a clean file and a file that must fail are told apart in one output.
const CASES = {
  "wrong-callback.ts": `import { streamChat } from "/chat-client.js";\nstreamChat({ messages: [] }, { onText: (text: number) => text });\n`,
  "unknown-option.ts": `import { streamChat } from "/chat-client.js";\nstreamChat({ messages: [] }, { onToken: () => {} });\n`,
  "bad-role.ts": `import { streamChat } from "/chat-client.js";\nstreamChat({ messages: [{ role: "robot", content: "x" }] });\n`,
  "nullable-error.ts": `import { streamChat } from "/chat-client.js";\nconst r = await streamChat({ messages: [] });\nr.error.code;\nexport {};\n`,
};
const EXPECTED = { "wrong-callback.ts": "TS2322", "unknown-option.ts": "TS2353", "bad-role.ts": "TS2322", "nullable-error.ts": "TS18047" };
let compiled = null;
function compiledOnce() {
  compiled ??= compile({
    "usage.ts": readFileSync(join(ROOT, "tests/js/types/usage.ts"), "utf8").replaceAll("../../../public/chat-client.js", CLIENT),
    // The example writes into an element the page already has; only that is declared here.
    "readme-example.ts": readmeExample() + "\ndeclare const output: HTMLElement;\nexport {};\n",
    ...CASES,
  });
  return compiled;
}
/** tsc's error lines about one file. */
const errorsIn = (name) => compiledOnce().split("\n").filter((line) => line.includes(`${name}(`));

test("every option and field compiles under --strict", () => {
  assert.deepEqual(errorsIn("usage.ts"), []);
});

test("the README's own example compiles under --strict", () => {
  assert.deepEqual(errorsIn("readme-example.ts"), []);
});

test("the declarations catch mistakes", () => {
  for (const name of Object.keys(CASES)) {
    const out = errorsIn(name).join("\n");
    assert.match(out, new RegExp(`${name}\\(\\d+,\\d+\\): error ${EXPECTED[name]}`), `${name} should fail with ${EXPECTED[name]}, tsc said: ${out || "nothing"}`);
  }
  // Nothing else failed: every error line is about one of the cases.
  const lines = compiledOnce().split("\n").filter((line) => / error TS\d+/.test(line));
  assert.deepEqual(lines.filter((line) => !Object.keys(CASES).some((name) => line.includes(`${name}(`))), []);
});
