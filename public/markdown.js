// Model output as safe HTML: marked parses, DOMPurify sanitizes (an allow-list), and the
// page then adds code highlighting and copy buttons. Model text is hostile by default: raw
// HTML is shown as text, images are never loaded (a markdown image is a beacon that can
// carry the conversation to another site), and links work only for http(s) and mailto.
import { Marked } from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.mjs";
import hljs from "./vendor/highlight/core.js";
import bash from "./vendor/highlight/languages/bash.js";
import css from "./vendor/highlight/languages/css.js";
import javascript from "./vendor/highlight/languages/javascript.js";
import json from "./vendor/highlight/languages/json.js";
import markdown from "./vendor/highlight/languages/markdown.js";
import plaintext from "./vendor/highlight/languages/plaintext.js";
import python from "./vendor/highlight/languages/python.js";
import rust from "./vendor/highlight/languages/rust.js";
import sql from "./vendor/highlight/languages/sql.js";
import typescript from "./vendor/highlight/languages/typescript.js";
import xml from "./vendor/highlight/languages/xml.js";
import yaml from "./vendor/highlight/languages/yaml.js";
import { BlockSplitter } from "./markdown-blocks.js";

for (const [name, language] of Object.entries({ bash, css, javascript, json, markdown, plaintext, python, rust, sql, typescript, xml, yaml })) {
  hljs.registerLanguage(name, language);
}
hljs.registerAliases(["sh", "shell", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx", "mjs", "node"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["py", "python3"], { languageName: "python" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["text", "txt"], { languageName: "plaintext" });

const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    // Raw HTML in model output is shown as the text it is, never parsed.
    html: ({ text }) => escapeHtml(text),
    // An image is named, not fetched: its URL could carry anything to anyone.
    image: ({ text }) => `<span class="image-blocked">[image not shown${text ? `: ${escapeHtml(text)}` : ""}]</span>`,
    // Task-list boxes as characters, not unlabeled form controls.
    checkbox: ({ checked }) => (checked ? "☑ " : "☐ "),
  },
});

const PURIFY = {
  ALLOWED_TAGS: ["a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "ol", "p",
    "pre", "s", "span", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul"],
  ALLOWED_ATTR: ["href", "title", "class", "start", "align"],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.nodeName !== "A") return;
  const href = node.getAttribute("href") ?? "";
  if (!/^(?:https?:|mailto:)/i.test(href)) node.removeAttribute("href");
  else {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

/** Code blocks get a language label, a copy button and (when asked) highlighting; tables scroll. */
function enhance(fragment, highlight) {
  for (const code of fragment.querySelectorAll("pre > code")) {
    const pre = code.parentElement;
    const lang = (code.className.match(/\blanguage-([\w+#.-]+)/) ?? [])[1] ?? "";
    if (highlight && lang && hljs.getLanguage(lang)) {
      const html = hljs.highlight(code.textContent, { language: lang, ignoreIllegals: true }).value;
      code.replaceChildren(DOMPurify.sanitize(html, PURIFY));
      code.classList.add("hljs");
    }
    pre.tabIndex = 0;                 // a wide block scrolls sideways: reachable by keyboard
    const box = document.createElement("div");
    box.className = "code-block";
    const bar = document.createElement("div");
    bar.className = "code-bar";
    const label = document.createElement("span");
    label.textContent = lang || "code";
    const copy = document.createElement("button");
    copy.type = "button";
    copy.className = "copy-code";
    copy.textContent = "Copy";
    copy.setAttribute("aria-label", `Copy ${lang || "code"}`);
    bar.append(label, copy);
    pre.replaceWith(box);
    box.append(bar, pre);
  }
  for (const table of fragment.querySelectorAll("table")) {
    const wrap = document.createElement("div");
    wrap.className = "table-wrap";
    wrap.tabIndex = 0;
    wrap.setAttribute("role", "region");
    wrap.setAttribute("aria-label", "Table");
    table.replaceWith(wrap);
    wrap.append(table);
  }
  return fragment;
}

/** Markdown to a sanitized DocumentFragment. */
export function renderMarkdown(text, { highlight = true } = {}) {
  return enhance(DOMPurify.sanitize(marked.parse(text, { async: false }), PURIFY), highlight);
}

/**
 * An answer rendered while it streams. Text before the last finished block is rendered once
 * and kept; only the rest is re-rendered, at most once per animation frame, and without
 * highlighting until its block is finished. `finish()` renders what is left, highlighted.
 */
export class StreamingMarkdown {
  #text = "";
  #doneUpTo = 0;
  #splitter = new BlockSplitter();
  #scheduled = false;
  #done;
  #live;
  stats = { renders: 0, ms: 0 };

  constructor(container, text = "") {
    this.#done = document.createElement("div");
    this.#live = document.createElement("div");
    this.#done.className = this.#live.className = "md-part";
    container.replaceChildren(this.#done, this.#live);
    if (text) this.append(text);
  }

  get text() { return this.#text; }

  append(piece) {
    this.#text += piece;
    if (!this.#scheduled) {
      this.#scheduled = true;
      requestAnimationFrame(() => { if (this.#scheduled) this.flush(); });
    }
  }

  /** Renders now (the frame callback, or a caller that must see the result at once). */
  flush(final = false) {
    this.#scheduled = false;
    const started = performance.now();
    const cut = final ? this.#text.length : this.#splitter.advance(this.#text);
    if (cut > this.#doneUpTo) {
      this.#done.append(renderMarkdown(this.#text.slice(this.#doneUpTo, cut)));
      this.#doneUpTo = cut;
    }
    const rest = this.#text.slice(this.#doneUpTo);
    this.#live.replaceChildren(rest ? renderMarkdown(rest, { highlight: final }) : "");
    this.stats.renders++;
    this.stats.ms += performance.now() - started;
  }

  finish() { this.flush(true); }
}
