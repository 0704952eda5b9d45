// Where a growing markdown text can be cut so that what lies before the cut will render the
// same whatever arrives next. The page renders the part before once and re-renders only the
// part after while an answer streams, so a 4,000-token answer is not re-parsed per token.
//
// A cut goes at the start of a line that follows a blank line, outside a code fence, and
// begins a new block at the left margin that cannot continue the one before: not indented (an
// indented code block or a list item's paragraph may hold blank lines) and not a list item (a
// loose list's items are separated by blank lines). When in doubt, no cut: the only cost is
// re-rendering a longer tail.

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const CONTINUES = /^(?:[ \t]|[-*+](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$))/;

export class BlockSplitter {
  #scanned = 0;      // text before this offset has been looked at (always a line start)
  #fence = null;     // the open fence's marker, e.g. "```" or "~~~~"
  #afterBlank = false;
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
        if (this.#afterBlank && !CONTINUES.test(line)) this.#cut = start;
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
