"""Issue 27's long answers in headless Chromium against the local Worker: a growing list or
table keeps its finished items and rows (the streamed DOM equals rendering the whole answer),
and a 400-item list and a 1,000-row table streamed at ~500 tokens/s with the CPU throttled 4x
(Lighthouse's mid-tier phone) cause no long task over 100 ms, or over 2.5 times this machine's
own render of a 100-row table when that is more (a machine slower than the bound's). Numbers: bench/notes/PAGE-NOTES.md.

A task's length is read as the main thread's CPU time in a Chromium trace. Chromium's 4x throttle
busy-waits on the throttled thread itself (ThreadCPUThrottler's signal handler spins until its
wake-up time), so that time is the task's length on an idle 4x-slower machine, and other
processes on a loaded 2-core CI box cannot stretch it. The Long Tasks API's wall-clock figures
are printed, and asserted too when the machine is not oversubscribed."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest
from conftest import Runtime
from playwright.sync_api import Browser, Page, expect

from browser.conftest import BROWSER_MARKS
from browser.test_page_browser import Opened, answered, open_page, opened, runtime, send, shot  # noqa: F401 (fixtures)

pytestmark = BROWSER_MARKS

SAME_AS_WHOLE = """async (texts) => {
  const { StreamingMarkdown, renderMarkdown } = await import('/markdown.js');
  const norm = (html) => html.replace(/>\\s+</g, '><').trim();
  const out = [];
  for (const text of texts) {
    const a = document.createElement('div'), b = document.createElement('div');
    const md = new StreamingMarkdown(a);
    for (const tok of text.match(/\\s*\\S+|\\s+$/g)) { md.append(tok); md.flush(); }
    md.finish();
    b.append(renderMarkdown(text));
    const streamed = norm([...a.querySelectorAll(':scope > .md-part')].map((p) => p.innerHTML).join(''));
    out.push({ same: streamed === norm(b.innerHTML), streamed: streamed.slice(0, 400), whole: norm(b.innerHTML).slice(0, 400) });
  }
  return out;
}"""

CASES = [
    "Intro\n\n"
    + "".join(f"- Item {i}: **bold** `code`\n" for i in range(1, 60))
    + "\nAfter the list.\n",
    "Intro\n\n| # | name | size |\n|--:|:--|:-:|\n"
    + "".join(f"| {i} | *n{i}* | {i * 8} |\n" for i in range(1, 80))
    + "\nAfter.\n",
    "| n | sq |\n|--:|--:|\n"
    + "".join(f"| {i} | {i * i} |\n" for i in range(250))
    + "\nAfter a table of 3 chunks.\n",
    "3. three\n4. four\n   - nested a\n   - nested b\n5. five\n\n```js\nx\n```\n",
    "- loose one\n\n- loose two\n\n- loose three\n\nEnd\n",
    "- a\nlazy line\n- b\n",
    "- [ ] task\n- [x] done\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 |\n",
    "1. one\n2. two\n\n| h |\n|---|\n| r |",
    "- item with code:\n\n  ```py\n  print(1)\n  ```\n- next\n",
]


def test_streamed_lists_and_tables_render_as_the_whole_answer_does(opened: Opened) -> None:
    results: list[dict[str, Any]] = opened.page.evaluate(SAME_AS_WHOLE, CASES)
    for case, r in zip(CASES, results, strict=False):
        assert r["same"], f"{case[:60]!r}\nstreamed: {r['streamed']}\nwhole:    {r['whole']}"


def test_nodes_drawn_per_frame_stay_flat_in_a_growing_table_and_list(opened: Opened) -> None:
    """One render per 8 tokens (a frame at ~500 tokens/s): the last 30 renders add and remove
    about as many DOM nodes as the first 30 did (after 5 to warm up), however long the block
    has grown. Nodes are counted (a MutationObserver's records, each added or removed subtree
    with all its nodes), not timed: a count does not depend on how busy the machine is."""
    result: dict[str, Any] = opened.page.evaluate(
        """async () => {
          const { StreamingMarkdown } = await import('/markdown.js');
          const size = (node) => 1 + (node.querySelectorAll ? node.querySelectorAll('*').length : 0);
          const out = {};
          for (const [name, text] of [
            ['list', 'Here:\\n\\n' + Array.from({ length: 400 }, (_, i) => `- Item ${i + 1}: stream edge token\\n`).join('')],
            ['table', 'Here:\\n\\n| # | name | size |\\n|--:|:--|:-:|\\n' + Array.from({ length: 1000 }, (_, i) => `| ${i + 1} | edge | ${i * 8} |\\n`).join('')],
          ]) {
            const box = document.createElement('div');
            document.body.append(box);
            const observer = new MutationObserver(() => {});
            observer.observe(box, { childList: true, subtree: true, characterData: true });
            const md = new StreamingMarkdown(box);
            const tokens = text.match(/\\s*\\S+/g);
            const nodes = [];
            for (let i = 0; i < tokens.length; i++) {
              md.append(tokens[i]);
              if (i % 8 === 7) {
                observer.takeRecords();
                md.flush();
                let touched = 0;
                for (const r of observer.takeRecords()) {
                  touched += r.type === 'characterData' ? 1 : 0;
                  for (const n of r.addedNodes) touched += size(n);
                  for (const n of r.removedNodes) touched += size(n);
                }
                nodes.push(touched);
              }
            }
            md.finish();
            observer.disconnect();
            const max = (xs) => Math.max(...xs);
            out[name] = { frames: nodes.length, first: max(nodes.slice(5, 35)), last: max(nodes.slice(-30)), rows: box.querySelectorAll('li, tbody tr').length };
            box.remove();
          }
          return out;
        }"""
    )
    print(f"\nDOM nodes added or removed per frame, most in frames 5-35 vs the last 30: {result}")
    assert result["list"]["rows"] == 400 and result["table"]["rows"] == 1000
    for name in ("list", "table"):
        r = result[name]
        # Flat: a block 10-30x longer draws no more nodes per frame (re-rendering the whole
        # block, issue 27, drew every row again: the count grew with the block).
        assert r["frames"] > 60 and 0 < r["last"] <= r["first"], f"{name}: {r}"


def test_a_burst_is_drawn_a_bounded_part_per_frame_and_finish_ends_as_the_whole(
    opened: Opened,
) -> None:
    """A stream that stalls and then delivers 1,000 rows at once is drawn in many renders, each
    taking in a bounded part; finish() with such a backlog yields before drawing the rest; the
    DOM ends as rendering the whole answer makes it."""
    result: dict[str, Any] = opened.page.evaluate(
        """async () => {
          const { MAX_CHARS, StreamingMarkdown, renderMarkdown } = await import('/markdown.js');
          const norm = (html) => html.replace(/>\\s+</g, '><').trim();
          const rows = (n) => Array.from({ length: n }, (_, i) => `| ${i + 1} | edge |\\n`).join('');
          const text = 'Here:\\n\\n| # | name |\\n|--:|:--|\\n' + rows(1000) + '\\nAfter.\\n';
          const whole = document.createElement('div');
          whole.append(renderMarkdown(text));
          const out = {};
          for (const how of ['frames', 'finish']) {
            const box = document.createElement('div');
            document.body.append(box);
            const counts = [];
            const count = () => box.querySelectorAll('tbody tr').length;
            const md = new StreamingMarkdown(box, '', { frame: (render) => { render(); counts.push(count()); } });
            md.append(text);
            if (how === 'frames') {
              for (let i = 0; i < 500 && counts.at(-1) !== 1000; i++) await new Promise((r) => requestAnimationFrame(r));
            }
            const done = md.finish();
            const atOnce = count();
            await done;
            const streamed = norm([...box.querySelectorAll(':scope > .md-part')].map((p) => p.innerHTML).join(''));
            out[how] = { counts, atOnce, same: streamed === norm(whole.innerHTML), max: MAX_CHARS };
            box.remove();
          }
          return out;
        }"""
    )
    counts: list[int] = result["frames"]["counts"]
    steps = [b - a for a, b in zip([0, *counts], counts, strict=False)]
    print(f"\nrows drawn per render: {steps}")
    assert counts[-1] == 1000, counts
    # A render takes in at most MAX_CHARS characters; a row here has at least 14.
    bound = result["frames"]["max"] // 14
    assert max(steps) <= bound, f"one render drew {max(steps)} rows (at most {bound}): {steps}"
    assert result["frames"]["same"], "drawn over frames, the DOM differs from the whole answer's"
    assert result["finish"]["atOnce"] < 1000, "finish() drew a 1,000-row backlog in one task"
    assert result["finish"]["same"], "after finish(), the DOM differs from the whole answer's"


def set_max_tokens(page: Page, value: str) -> None:
    page.click("#settings-open")
    page.fill("#max-tokens", value)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#settings")).not_to_be_visible()


# The renderer's main-thread tasks (RunTask) with their thread (CPU) time, `tdur`, in µs.
TRACE_CATEGORIES = ["disabled-by-default-devtools.timeline", "devtools.timeline"]


def main_thread_task_cpu_ms(trace: bytes) -> list[float]:
    """The CPU time of every task the page's main thread ran, in ms (thread time: what the task
    cost, without the time the OS gave the CPU to other processes)."""
    events = json.loads(trace)["traceEvents"]
    mains = {
        (e["pid"], e["tid"])
        for e in events
        if e.get("ph") == "M"
        and e.get("name") == "thread_name"
        and e["args"].get("name") == "CrRendererMain"
    }
    return [
        e["tdur"] / 1000
        for e in events
        if e.get("name") == "RunTask"
        and e.get("ph") == "X"
        and "tdur" in e
        and (e["pid"], e["tid"]) in mains
    ]


# The machine's own unit of page work, timed under the same throttle: a 100-row table (the most
# rows the page lays out as one table, markdown.TABLE_CHUNK) rendered whole and laid out, in a
# task of its own, five times. "4x throttled" is Lighthouse's mid-tier phone only on a machine as
# fast as the one the 100 ms bound was set on; on a slower one every task is slower in the same
# proportion, which this unit measures (2026-11-28: a 1.5x slower test machine put tasks of the
# unchanged page at 100-148 ms).
CALIBRATE = """async () => {
  const { renderMarkdown } = await import('/markdown.js');
  let text = '| # | name | size |\\n|--:|:--|:-:|\\n';
  for (let i = 1; i <= 100; i++) text += `| ${i} | *n${i}* | ${i * 8} |\\n`;
  for (let k = 0; k < 5; k++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const div = document.createElement('div');
    div.append(renderMarkdown(text));
    document.body.append(div);
    div.getBoundingClientRect();
    div.remove();
  }
}"""
# A task may cost this many units, and never less than 100 ms. Measured on 2026-11-28, on a test
# machine 1.5x slower than that of the first bound: the longest task of a run was 0.5-1.8 units
# (a unit being 73-145 ms there). A page that rendered whole blocks again would need several
# units a task, since the whole 1,000-row table is ten of them, and it fails the keeping-up check
# too.
UNITS_PER_TASK = 2.5


def unit_ms(page: Page, browser: Browser) -> float:
    """The median CPU time of the calibration's five renders, under the page's throttle."""
    browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
    page.evaluate(CALIBRATE)
    tasks = sorted(main_thread_task_cpu_ms(browser.stop_tracing()))[-5:]
    return tasks[len(tasks) // 2]


LONG = [
    ("[[list:400]]", ".msg.assistant .text li", 400, 1606),
    ("[[table:1000]]", ".msg.assistant .text tbody tr", 1000, 4008),
]
RATE = 500


@pytest.mark.bench  # CPU and wall-clock bounds: make bench runs it (issue 44)
@pytest.mark.parametrize(
    ("directive", "rows", "count", "tokens"), LONG, ids=["list-400", "table-1000"]
)
def test_a_long_block_streams_at_500_tokens_a_second_on_a_4x_throttled_cpu_without_long_tasks(
    browser: Browser, runtime: Runtime, directive: str, rows: str, count: int, tokens: int
) -> None:
    o = open_page(browser, runtime)
    page = o.page
    set_max_tokens(page, "4096")
    page.evaluate(
        "window.__long = []; new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(Math.round(e.duration)); })"
        ".observe({ type: 'longtask' })"
    )
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
    unit = unit_ms(page, browser)
    bound = max(100.0, UNITS_PER_TASK * unit)
    load_before = os.getloadavg()[0]
    browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
    send(page, f"[[rate:{RATE}]] {directive} go")
    answered(page, 1, timeout=180000)
    ended = time.time() * 1000
    cpu_ms = main_thread_task_cpu_ms(browser.stop_tracing())
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
    longs: list[int] = page.evaluate("window.__long")
    expect(page.locator(".msg.assistant").last).to_have_attribute("data-outcome", "complete")
    expect(page.locator(rows)).to_have_count(count)
    expect(page.locator(".msg.assistant .usage").last).to_contain_text(f"{tokens:,} tokens")
    # The stream's real rate, from the model's own clock (epoch ms), and how far the page was
    # behind it at the end: a page that falls behind the stream would hide its long tasks.
    call = runtime.last_call()
    streamed = (call["finishedAt"] - call["startedAt"]) / 1000
    rate = tokens / streamed
    behind = (ended - call["finishedAt"]) / 1000
    print(
        f"\n{directive}: {tokens} tokens streamed in {streamed:.1f} s ({rate:.0f} tokens/s), the page done {behind:.2f} s "
        f"after the last; CPU 4x throttled: {len(longs)} long tasks, longest {max(longs, default=0)} ms, total "
        f"{sum(longs)} ms; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    shot(page, f"long-{directive.strip('[]').replace(':', '-')}")
    assert rate > 0.8 * RATE, (
        f"streamed at {rate:.0f} tokens/s, not ~{RATE}: the test did not test what it says"
    )
    # Keeping up, as CPU: the main thread's work at 4x is of the order of the stream's time
    # (0.7 of it on a quiet machine; the throttle spins longer when the OS preempts the page,
    # up to 1.0 of it at load 10: bench/notes/PAGE-NOTES.md). As wall clock too when the
    # machine is not oversubscribed (then nothing else can make it lag).
    busy = sum(cpu_ms) / 1000
    print(f"  main thread busy {busy:.1f} s of 4x-throttled CPU during a {streamed:.1f} s stream")
    assert busy < 1.5 * streamed, (
        f"the page needs {busy:.1f} s of 4x-throttled CPU for a {streamed:.1f} s stream: it cannot keep up"
    )
    print(f"  main-thread task CPU time (ms, longest 10): {sorted(round(t) for t in cpu_ms)[-10:]}")
    print(
        f"  a 100-row table rendered whole: {unit:.0f} ms of 4x-throttled CPU; bound {bound:.0f} ms"
    )
    assert cpu_ms, "the trace held no main-thread task: the measure measured nothing"
    assert max(cpu_ms) <= bound, (
        f"main-thread tasks over {bound:.0f} ms of 4x-throttled CPU ({UNITS_PER_TASK} x {unit:.0f} ms, "
        f"a 100-row table rendered whole here) (ms): {sorted(round(t) for t in cpu_ms)[-10:]}"
    )
    quiet = max(load_before, os.getloadavg()[0]) < (os.cpu_count() or 1)
    if quiet:
        assert behind < 0.25 * streamed, (
            f"the page ended {behind:.1f} s after a {streamed:.1f} s stream: it fell behind"
        )
        assert max(longs, default=0) <= bound, (
            f"long tasks (ms, wall clock) over {bound:.0f}: {sorted(longs)[-10:]}, on a machine that was not busy"
        )
    page.context.close()
    assert o.errors == []
