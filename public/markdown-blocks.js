// Where a growing markdown text can be cut so that what lies before the cut will render the
// same whatever arrives next. The page renders the part before once and re-renders only the
// part after while an answer streams, so a 4,000-token answer is not re-parsed per token.
//
// A cut goes at the start of a line that follows a blank line, outside a code fence, and
// begins a new block at the left margin that cannot continue the one before: not indented (an
// indented code block or a list item's paragraph may hold blank lines) and not a list item
// while a list is open (a loose list's items are separated by blank lines); a list item after
// a paragraph or a heading begins a new list, so a cut goes before it. When in doubt, no cut:
// the only cost is re-rendering a longer tail.

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const INDENTED = /^[ \t]/;
const LIST_ITEM = /^(?:[-*+](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$))/;

export class BlockSplitter {
  #scanned = 0;      // text before this offset has been looked at (always a line start)
  #fence = null;     // the open fence's marker, e.g. "```" or "~~~~"
  #afterBlank = false;
  #listOpen = false;  // a list began since the last cut: an item after a blank line continues it
  #cut = 0;

  /** The latest safe cut in `text`, which must extend the text given before. Linear overall. */
  advance(text) {
    let start = this.#scanned;
    for (;;) {
      const end = text.indexOf("\n", start);
      if (end < 0) break;                         // an unfinished line can still change
      const line = text.slice(start, end);
      if (this.#fence !== null) {
        const close = FENCE.exec(line);
        if (close && close[1][0] === this.#fence[0] && close[1].length >= this.#fence.length && line.slice(close[0].length).trim() === "") {
          this.#fence = null;
        }
      } else if (line.trim() === "") {
        this.#afterBlank = true;
      } else {
        const item = LIST_ITEM.test(line);
        if (this.#afterBlank && !INDENTED.test(line) && !(item && this.#listOpen)) {
          this.#cut = start;
          this.#listOpen = false;
        }
        if (item) this.#listOpen = true;
        this.#afterBlank = false;
        const open = FENCE.exec(line);
        if (open && !(open[1][0] === "`" && line.slice(open[0].length).includes("`"))) this.#fence = open[1];
      }
      start = end + 1;
    }
    this.#scanned = start;
    return this.#cut;
  }
}

// The growing block: a long list or table is one markdown block, so the cut above cannot
// fall inside it, and re-rendering it whole per frame costs more the longer it gets. This
// scanner finds, in the text after the last cut, a table's rows or a tight list's items that
// are finished (a row whose line ended; an item followed by the next item), so the page can
// render each once and append it. Anything it does not understand for certain (a loose list,
// a lazy continuation line, a row that may start another block) makes it give up: the
// caller then re-renders the whole tail, which is always correct.

const ITEM = /^(?:([-*+])|\d{1,9}([.)]))(?:[ \t]|$)/;
const DELIMITER_ROW = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
const STARTS_BLOCK = /^ {0,3}(?:#{1,6}(?:[ \t]|$)|>|`{3}|~{3}|<|(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)|(?:[-*_][ \t]*){3,}$)/;

export class GrowingBlock {
  kind = null;        // "table" | "list" | null (not known yet, or neither)
  given = false;      // gave up, or the tail is neither: render it whole
  prefixEnd = 0;      // a table's header and delimiter rows end here
  units = [];         // [start, end) of each finished row or item, in order
  open = -1;          // where the unfinished item begins (lists)
  end = -1;           // where the block ended (the start of the blank line after it), once it has
  #scanned = 0;
  #marker = "";
  #blank = false;

  /** Scans the new complete lines of `tail` (which only grows); `final`: its last line is complete too. */
  scan(tail, final = false) {
    let start = this.#scanned;
    while (!this.given && this.end < 0) {
      let stop = tail.indexOf("\n", start);
      if (stop < 0) {
        if (!final || start >= tail.length) break;
        stop = tail.length;
      }
      this.#line(tail.slice(start, stop), start, stop);
      start = stop + 1;
    }
    this.#scanned = Math.min(start, tail.length);
    if (final && !this.given && this.end < 0) this.#close(this.kind === "list" && this.#blank ? this.#lastEnd : tail.length);
    return this;
  }

  #close(at) {
    if (this.kind === "list" && this.open >= 0) { this.units.push([this.open, at]); this.open = -1; }
    this.end = at;
  }

  #line(line, start, stop) {
    const blank = line.trim() === "";
    if (this.kind === null) {
      if (start === 0) {
        const item = ITEM.exec(line);
        if (item) { this.kind = "list"; this.#marker = item[1] ?? item[2]; this.open = 0; this.#lastEnd = stop + 1; return; }
        if (!line.includes("|")) { this.given = true; return; }
        this.#header = cells(line);
        return;                                   // perhaps a table's header row
      }
      // marked takes a table only when the delimiter row has as many cells as the header.
      if (DELIMITER_ROW.test(line) && cells(line) === this.#header) { this.kind = "table"; this.prefixEnd = stop + 1; return; }
      this.given = true;
      return;
    }
    if (this.kind === "table") {
      if (blank) { this.end = start; return; }
      if (!line.includes("|") || STARTS_BLOCK.test(line)) { this.given = true; return; }
      this.units.push([start, stop + 1]);
      return;
    }
    // A tight list at the left margin, one kind of marker.
    if (blank) { this.#blank = true; return; }
    const item = ITEM.exec(line);
    if (this.#blank) {
      if (item || /^[ \t]/.test(line)) { this.given = true; return; }   // a loose list
      this.#close(this.#lastEnd);
      return;
    }
    this.#lastEnd = stop + 1;
    if (item) {
      if ((item[1] ?? item[2]) !== this.#marker) { this.given = true; return; }
      this.units.push([this.open, start]);
      this.open = start;
    } else if (!/^[ \t]/.test(line)) {
      this.given = true;                          // a lazy continuation, or a new block
    }
  }

  #lastEnd = 0;
  #header = 0;
}

const cells = (line) => line.trim().replace(/^\|/, "").replace(/(?<!\\)\|$/, "").split(/(?<!\\)\|/).length;
