// The local runtime's reading of wrangler.toml / .dev.vars and its static-asset lookup.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig, parseDevVars } from "../../runtime/config.mjs";
import { findAsset } from "../../runtime/server.mjs";

function project(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ai-chat-config-"));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

const TOML = `
main = "src/entry.py"
[assets]
directory = "./public"
[ai]
binding = "AI"
[vars]
A = "top"
B = "top-b"
[env.staging]
[env.staging.ai]
binding = "AI"
[env.staging.vars]
A = "staging"
[env.bare]
`;

test("dotenv syntax: quotes, comments, export, escapes", () => {
  assert.deepEqual(parseDevVars('# c\nexport X=1\nY = "two words" \nZ=\'single\'\nW=plain # trailing\nQ="a\\nb"\nbad line\n'), {
    X: "1", Y: "two words", Z: "single", W: "plain", Q: "a\nb",
  });
});

test("top level: [vars], then .dev.vars on top", () => {
  const dir = project({ "wrangler.toml": TOML, ".dev.vars": "B=dev\nC=new\n" });
  const config = loadConfig(dir);
  assert.deepEqual(config.vars, { A: "top", B: "dev", C: "new" });
  assert.equal(config.aiBinding, "AI");
  assert.equal(config.assetsDir, path.join(dir, "public"));
  assert.equal(config.main, path.join(dir, "src/entry.py"));
});

test("an environment does not inherit [vars] or [ai]; .dev.vars.<env> wins over .dev.vars", () => {
  const dir = project({ "wrangler.toml": TOML, ".dev.vars": "B=dev\n", ".dev.vars.staging": "B=dev-staging\n" });
  assert.deepEqual(loadConfig(dir, "staging").vars, { A: "staging", B: "dev-staging" });
  const bare = loadConfig(dir, "bare");
  assert.deepEqual(bare.vars, { B: "dev" });
  assert.equal(bare.aiBinding, null);
  assert.throws(() => loadConfig(dir, "nope"), /no \[env\.nope\]/);
});

test("assets: files, index.html, .html, and nothing outside the directory", () => {
  const dir = project({ "public/index.html": "i", "public/app.js": "a", "public/about.html": "b", "public/docs/index.html": "d", "secret.txt": "s" });
  const assets = path.join(dir, "public");
  assert.equal(findAsset(assets, "/"), path.join(assets, "index.html"));
  assert.equal(findAsset(assets, "/app.js"), path.join(assets, "app.js"));
  assert.equal(findAsset(assets, "/about"), path.join(assets, "about.html"));
  assert.equal(findAsset(assets, "/docs/"), path.join(assets, "docs/index.html"));
  assert.equal(findAsset(assets, "/api/v1/chat"), null);
  assert.equal(findAsset(assets, "/../secret.txt"), null);
  assert.equal(findAsset(assets, "/%2e%2e/secret.txt"), null);
  assert.equal(findAsset(assets, "/%zz"), null);
});
