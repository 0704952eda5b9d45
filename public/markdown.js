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
import { BlockSplitter, GrowingBlock } from "./markdown-blocks.js";

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
    const group = tableGroup();
    table.replaceWith(group);
    const rows = [...(table.tBodies[0]?.rows ?? [])];
    table.tBodies[0]?.remove();
    for (let at = 0; at === 0 || at < rows.length; at += TABLE_CHUNK) {
      const { wrap, body } = tableChunk(table, at);
      body.append(...rows.slice(at, at + TABLE_CHUNK));
      group.append(wrap);
    }
    if (rows.length > TABLE_CHUNK) group.classList.add("chunked");
  }
  return fragment;
}

// A table is laid out whole whenever a row is added: a 1,000-row table streaming in cost a
// layout of every row per frame (bench/notes/PAGE-NOTES.md). So a long table is shown as tables of
// TABLE_CHUNK rows, each with the header, in one group; the same whether it streamed in or
// was rendered at once. Fixed layout at full width keeps the chunks' columns aligned.
export const TABLE_CHUNK = 100;

function tableGroup() {
  const group = document.createElement("div");
  group.className = "table-group";
  return group;
}

/**
 * A scrolling box with an empty copy of `table` (its head, an empty body), for its rows from
 * `at` on. Each part's label is its own: regions with one name are landmarks a reader cannot
 * tell apart (axe-core's landmark-unique).
 */
function tableChunk(table, at) {
  const wrap = document.createElement("div");
  wrap.className = "table-wrap";
  wrap.tabIndex = 0;
  wrap.setAttribute("role", "region");
  wrap.setAttribute("aria-label", at > 0 ? `Table, from row ${at + 1}` : "Table");
  const copy = table.cloneNode(false);
  if (table.tHead) copy.append(table.tHead.cloneNode(true));
  const body = document.createElement("tbody");
  copy.append(body);
  wrap.append(copy);
  return { wrap, body };
}

/** Markdown to a sanitized DocumentFragment. */
export function renderMarkdown(text, { highlight = true } = {}) {
  return enhance(DOMPurify.sanitize(marked.parse(text, { async: false }), PURIFY), highlight);
}

/**
 * The DOM of a growing table or list (GrowingBlock finds its parts): the table's head or the
 * list's first item makes the element once; each finished row or item is rendered alone and
 * appended (those finished in one frame in one render); only the unfinished one is
 * re-rendered per frame. So a token costs the same at
 * row 1,000 as at row 1. A lone row renders as a table with the same header and delimiter row
 * (same columns, same alignment); a lone item as a one-item list of the same kind.
 */
class GrowingView {
  scan = new GrowingBlock();
  node = null;          // the table's wrapper or the list element, once made
  #items = null;        // the tbody or the list
  #done = 0;            // units rendered for good
  #live = [];           // the nodes of the unfinished unit

  /** Brings the DOM up to `tail`; returns where the part it shows ends in `tail`. */
  update(tail, final) {
    const g = this.scan.scan(tail, final);
    if (g.given || g.kind === null) return -1;
    if (g.kind === "table" && !this.node) {
      this.node = renderMarkdown(tail.slice(0, g.prefixEnd)).firstElementChild;
      this.#items = this.node.querySelector("tbody");
    }
    if (this.#done < g.units.length) {
      // The rows or items finished since the last frame are contiguous: one render for all.
      this.#append(this.#render(tail, g.units[this.#done][0], g.units.at(-1)[1], true));
      this.#done = g.units.length;
    }
    // A list shows its unfinished item as it grows; a table holds back its unfinished row
    // (a row is a few tokens: it shows once its line is whole).
    const shownTo = g.end >= 0 ? g.end : tail.length;
    for (const n of this.#live) n.remove();
    this.#live = g.kind === "list" && g.end < 0 && g.open >= 0 && shownTo > g.open ? this.#render(tail, g.open, shownTo, false) : [];
    for (const n of this.#live) this.#items.append(n);
    return this.node ? shownTo : -1;
  }

  /** The rows or items of tail[from, to) rendered alone; the list element made from the first. */
  #render(tail, from, to, highlight) {
    const text = this.scan.kind === "table" ? tail.slice(0, this.scan.prefixEnd) + tail.slice(from, to) : tail.slice(from, to);
    const fragment = renderMarkdown(text, { highlight });
    if (this.scan.kind === "table") return [...fragment.querySelectorAll("tbody > tr")];
    const box = fragment.firstElementChild;
    if (!box || !/^(?:UL|OL)$/.test(box.tagName)) return [];
    if (!this.node) {
      this.node = box.cloneNode(false);
      this.#items = this.node;
    }
    return [...box.children];
  }

  #append(nodes) {
    for (const n of nodes) {
      if (this.scan.kind === "table" && this.#items.rows.length >= TABLE_CHUNK) {
        const { wrap, body } = tableChunk(this.node.querySelector("table"), this.node.children.length * TABLE_CHUNK);
        this.node.append(wrap);
        this.node.classList.add("chunked");
        this.#items = body;
      }
      this.#items.append(n);
    }
  }
}

/**
 * An answer rendered while it streams. Text before the last finished block is rendered once
 * and kept; of the rest, a growing table or list keeps its finished rows or items (GrowingView)
 * and whatever else is re-rendered, in an animation frame, and without highlighting until its
 * block is finished. `finish()` renders what is left, highlighted.
 *
 * A render takes in at most MAX_CHARS new characters, so no render is a long task however
 * the tokens arrive. After a frame that cost `c` (the render, then the browser's style, layout
 * and paint of it) the next render waits `RENDER_GAP * c`: on a fast machine that is every
 * frame; on a slow or busy one the page renders less often, with more tokens each time,
 * instead of spending every frame on layout and paint while the reader's input and the stream
 * itself wait. When more than MAX_CHARS wait (a burst, or a page that fell behind), the next
 * render is the next task, not the next frame, so the page keeps up with the stream in parts
 * of bounded size (bench/notes/PAGE-NOTES.md). `frame(render)` wraps each render (the page follows
 * the answer with it).
 */
const RENDER_GAP = 2;
const MAX_WAIT_MS = 250;
export const MAX_CHARS = 500;   // a dozen table rows; whole lines where it can

export class StreamingMarkdown {
  #text = "";
  #doneUpTo = 0;
  #splitter = new BlockSplitter();
  #grow = new GrowingView();
  #scheduled = false;
  #notBefore = 0;
  #upTo = 0;            // the text rendered so far ends here
  #frame;
  #done;
  #live;
  stats = { renders: 0, ms: 0, max: 0 };

  constructor(container, text = "", { frame = (render) => render() } = {}) {
    this.#frame = frame;
    this.#done = this.#part();
    this.#live = this.#part();
    container.replaceChildren(this.#done, this.#live);
    if (text) this.append(text);
  }

  get text() { return this.#text; }

  #part() {
    const div = document.createElement("div");
    div.className = "md-part";
    return div;
  }

  append(piece) {
    this.#text += piece;
    this.#schedule();
  }

  #schedule() {
    if (this.#scheduled) return;
    this.#scheduled = true;
    const wait = this.#notBefore - performance.now();
    if (this.#upTo < this.#text.length - MAX_CHARS) setTimeout(this.#tick, 0);
    else if (wait > 0) setTimeout(() => requestAnimationFrame(this.#tick), wait);
    else requestAnimationFrame(this.#tick);
  }

  #tick = () => {
    if (!this.#scheduled) return;          // flushed meanwhile
    const started = performance.now();
    this.#frame(() => this.#render(false, MAX_CHARS));
    // A message posted now is handled after this frame's style, layout and paint (if any).
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      const now = performance.now();
      this.#notBefore = now + Math.min(MAX_WAIT_MS, RENDER_GAP * (now - started));
      if (this.#upTo < this.#text.length) this.#schedule();   // the rest of a burst
    };
    channel.port2.postMessage(null);
  };

  /** Renders all the text now (for a caller that must see the result at once). */
  flush(final = false) { this.#render(final, Infinity); }

  /**
   * Renders the rest, highlighted. What a burst left undrawn goes first, a bounded part per
   * task, so the end of an answer holds the page no longer than a frame does; the final render
   * is synchronous when nothing is left over (or the page is hidden: no frame would come).
   */
  async finish() {
    while (!document.hidden && this.#text.length - this.#upTo > MAX_CHARS) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      this.#frame(() => this.#render(false, MAX_CHARS));
    }
    this.#render(true, Infinity);
  }

  #render(final, limit) {
    this.#scheduled = false;
    const started = performance.now();
    const text = this.#take(limit);
    const cut = final ? text.length : this.#splitter.advance(text);
    if (cut > this.#doneUpTo) {
      // A grown table or list that ended before the cut stays where it is: the live part that
      // holds it becomes a finished part, and a new live part follows. (Moving it would make
      // the browser build and lay out every row again.)
      const region = text.slice(this.#doneUpTo, cut);
      const shown = this.#grow.update(region, true);
      if (shown >= 0 && this.#live.firstChild === this.#grow.node) {
        while (this.#live.lastChild !== this.#grow.node) this.#live.lastChild.remove();
        if (shown < region.length) this.#live.append(renderMarkdown(region.slice(shown)));
        this.#done = this.#live;
        this.#live = this.#part();
        this.#done.after(this.#live);
      } else {
        this.#done.append(renderMarkdown(region));
      }
      this.#doneUpTo = cut;
      this.#grow = new GrowingView();
    }
    const rest = text.slice(this.#doneUpTo);
    const shown = rest ? this.#grow.update(rest, false) : -1;
    if (shown >= 0) {
      const after = rest.slice(shown);
      if (this.#live.firstChild !== this.#grow.node) this.#live.replaceChildren(this.#grow.node);
      while (this.#live.childNodes.length > 1) this.#live.lastChild.remove();
      if (after.trim()) this.#live.append(renderMarkdown(after, { highlight: false }));
    } else {
      this.#live.replaceChildren(rest ? renderMarkdown(rest, { highlight: final }) : "");
    }
    const ms = performance.now() - started;
    this.stats.renders++;
    this.stats.ms += ms;
    this.stats.max = Math.max(this.stats.max, ms);
  }

  /** The text this render shows: at most `limit` characters more than the last, whole lines if it can. */
  #take(limit) {
    const all = this.#text;
    if (all.length - this.#upTo <= limit) this.#upTo = all.length;
    else {
      const line = all.lastIndexOf("\n", this.#upTo + limit - 1);
      let end = line >= this.#upTo ? line + 1 : this.#upTo + limit;
      if (/[\uD800-\uDBFF]/.test(all[end - 1])) end--;     // never half a surrogate pair
      this.#upTo = end;
    }
    return all.slice(0, this.#upTo);
  }
}
