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

test("every option and field compiles under --strict", () => {
  assert.equal(compile({ "usage.ts": readFileSync(join(ROOT, "tests/js/types/usage.ts"), "utf8").replaceAll("../../../public/chat-client.js", CLIENT) }), "");
});

test("the README's own example compiles under --strict", () => {
  // The example writes into an element the page already has; only that is declared here.
  const source = readmeExample() + "\ndeclare const output: HTMLElement;\nexport {};\n";
  assert.equal(compile({ "readme-example.ts": source }), "");
});

test("the declarations catch mistakes", () => {
  const cases = {
    "wrong-callback.ts": `import { streamChat } from "/chat-client.js";\nstreamChat({ messages: [] }, { onText: (text: number) => text });\n`,
    "unknown-option.ts": `import { streamChat } from "/chat-client.js";\nstreamChat({ messages: [] }, { onToken: () => {} });\n`,
    "bad-role.ts": `import { streamChat } from "/chat-client.js";\nstreamChat({ messages: [{ role: "robot", content: "x" }] });\n`,
    "nullable-error.ts": `import { streamChat } from "/chat-client.js";\nconst r = await streamChat({ messages: [] });\nr.error.code;\nexport {};\n`,
  };
  const expected = { "wrong-callback.ts": "TS2322", "unknown-option.ts": "TS2353", "bad-role.ts": "TS2322", "nullable-error.ts": "TS18047" };
  for (const [name, source] of Object.entries(cases)) {
    const out = compile({ [name]: source });
    assert.match(out, new RegExp(`${name}\\(\\d+,\\d+\\): error ${expected[name]}`), `${name} should fail with ${expected[name]}, tsc said: ${out || "nothing"}`);
  }
});
