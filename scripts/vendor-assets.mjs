// Copies the page's third-party libraries from node_modules (pinned by package-lock.json)
// into public/vendor/, so the Worker serves them as its own static assets: no CDN, and
// the bytes are the ones the lock file names. Run by `make setup`; public/vendor/ is not
// committed. Prints what it copied; fails loudly if a file moved in a new release.
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const NM = join(ROOT, "node_modules");
const OUT = join(ROOT, "public", "vendor");

// Code highlighting: the core and a few languages people paste most, not the 190 of "common".
export const LANGUAGES = ["bash", "css", "javascript", "json", "markdown", "plaintext", "python", "rust", "sql", "typescript", "xml", "yaml"];

const version = (pkg) => JSON.parse(readFileSync(join(NM, pkg, "package.json"), "utf8")).version;

function copy(from, to) {
  mkdirSync(dirname(join(OUT, to)), { recursive: true });
  copyFileSync(join(NM, from), join(OUT, to));
  return to;
}

// highlight.js ships its core only as CommonJS (its es/core.js re-imports lib/core.js), so
// the core is wrapped, byte for byte, between a `module` object and one `export default`.
// That is safe only while the file requires nothing and exports once: checked, not assumed.
function wrapHighlightCore(to) {
  const source = readFileSync(join(NM, "highlight.js/lib/core.js"), "utf8");
  const exportsCount = source.split("module.exports").length - 1;
  if (source.includes("require(") || exportsCount !== 1) {
    throw new Error(`highlight.js/lib/core.js changed shape (require or ${exportsCount} module.exports): update ${fileURLToPath(import.meta.url)}`);
  }
  mkdirSync(dirname(join(OUT, to)), { recursive: true });
  writeFileSync(join(OUT, to),
    `// highlight.js ${version("highlight.js")} lib/core.js, unchanged, wrapped as an ES module by scripts/vendor-assets.mjs\n` +
    "const module = { exports: {} };\n" + source + "\nexport default module.exports;\n");
  return to;
}

export function vendor() {
  rmSync(OUT, { recursive: true, force: true });
  const written = [
    copy("marked/lib/marked.esm.js", "marked.esm.js"),
    copy("marked/lib/marked.esm.js.map", "marked.esm.js.map"),
    copy("marked/LICENSE", "marked.LICENSE"),
    copy("dompurify/dist/purify.es.mjs", "purify.es.mjs"),
    copy("dompurify/dist/purify.es.mjs.map", "purify.es.mjs.map"),
    copy("dompurify/LICENSE", "dompurify.LICENSE"),
    wrapHighlightCore("highlight/core.js"),
    copy("highlight.js/LICENSE", "highlight/LICENSE"),
    copy("highlight.js/styles/github.min.css", "highlight/github.min.css"),
    copy("highlight.js/styles/github-dark.min.css", "highlight/github-dark.min.css"),
    ...LANGUAGES.map((name) => copy(`highlight.js/es/languages/${name}.js`, `highlight/languages/${name}.js`)),
  ];
  writeFileSync(join(OUT, "VERSIONS.json"), JSON.stringify({
    marked: version("marked"), dompurify: version("dompurify"), "highlight.js": version("highlight.js"),
  }, null, 2) + "\n");
  return written;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const written = vendor();
  console.log(`vendor-assets: ${written.length} files into public/vendor/ (${readFileSync(join(OUT, "VERSIONS.json"), "utf8").replace(/\s+/g, " ").trim()})`);
}
