"""Issue 27's everyday features in headless Chromium against the local Worker: settings per
chat, Continue after a length stop, the usage line, Jump to latest, versions, rename, search,
export, undo after delete, and the accessibility items; axe-core in each state, light and dark.
Screenshots go to test-artifacts/page-work-*.png."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import Runtime
from playwright.sync_api import Browser, Page, expect

from browser.conftest import BROWSER_MARKS
from browser.test_page_browser import (  # noqa: F401 (fixtures)
    Opened,
    answered,
    axe_violations,
    open_page,
    opened,
    reasoning_model,
    runtime,
    send,
    shot,
)

pytestmark = BROWSER_MARKS

CONTINUE_PROMPT = "Continue exactly where your last answer stopped, without repeating anything."


def settings(page: Page, *, system: str = "", temperature: str = "", max_tokens: str = "") -> None:
    page.click("#settings-open")
    expect(page.locator("#settings")).to_be_visible()
    page.fill("#system", system)
    page.fill("#temperature", temperature)
    page.fill("#max-tokens", max_tokens)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#settings")).not_to_be_visible()


def test_settings_per_chat_reach_the_request_and_continue_finishes_a_cut_answer(
    opened: Opened,
) -> None:
    page = opened.page
    settings(page, system="Answer in one line.", temperature="0.3", max_tokens="5")
    send(page, "[[pace:0]] tell me more")
    answered(page, 1)
    body = opened.chat_bodies[-1]
    assert body["messages"] == [
        {"role": "system", "content": "Answer in one line."},
        {"role": "user", "content": "[[pace:0]] tell me more"},
    ]
    assert (body["temperature"], body["max_tokens"]) == (0.3, 5)
    answer = page.locator(".msg.assistant").last
    expect(answer.locator(".note")).to_have_text(
        "The answer reached its length limit. Continue asks the model for the rest."
    )
    expect(answer.locator(".usage")).to_have_text(
        re.compile(r"^5 tokens · \d+\.\d s · \d+\.\d tokens/s$")
    )
    first = answer.locator(".text").inner_text()
    assert first == "You said: tell me more."
    answer.get_by_role("button", name="Continue the answer").click()
    answered(page, 1)
    body = opened.chat_bodies[-1]
    assert body["messages"][-2:] == [
        {"role": "assistant", "content": "You said: tell me more."},
        {"role": "user", "content": CONTINUE_PROMPT},
    ]
    answer = page.locator(".msg.assistant").last
    expect(answer.locator(".text")).to_have_text(
        "You said: tell me more.You said: Continue exactly where"
    )
    expect(answer.locator(".usage")).to_have_text(re.compile(r"^10 tokens · "))
    assert page.locator(".msg.assistant").count() == 1, "Continue adds to the same answer"
    # The settings belong to this chat: a new chat starts without them; the old one keeps them.
    page.click("#clear")
    send(page, "[[pace:0]] plain")
    answered(page, 1)
    assert opened.chat_bodies[-1] == {
        "messages": [{"role": "user", "content": "[[pace:0]] plain"}],
        "model": opened.chat_bodies[-1]["model"],
        "reasoning_effort": "none",  # the Think toggle, off (the default model reasons)
    }
    page.reload()
    page.locator("#chat-list .open", has_text="tell me more").click()
    page.click("#settings-open")
    expect(page.locator("#system")).to_have_value("Answer in one line.")
    expect(page.locator("#temperature")).to_have_value("0.3")
    expect(page.locator("#max-tokens")).to_have_value("5")
    shot(page, "work-settings")
    page.fill("#temperature", "7")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#settings-error")).to_have_text("Temperature goes from 0 to 5.")
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#settings-open")).to_be_focused()


def test_max_tokens_goes_up_to_the_servers_limit_from_the_models_list(
    opened: Opened, runtime: Runtime
) -> None:
    page = opened.page
    with runtime.client() as client:
        limits = client.get("/api/v1/models").json()["limits"]
    top = int(limits["max_tokens_limit"])
    page.click("#settings-open")
    expect(page.locator("#max-tokens")).to_have_attribute("max", str(top))
    expect(page.locator("#max-tokens-hint")).to_contain_text(f"Up to {top:,}")
    page.fill("#max-tokens", str(top + 1))
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#settings-error")).to_have_text(
        f"Max tokens is a whole number from 1 to {top:,}."
    )
    page.fill("#max-tokens", str(top))
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#settings")).not_to_be_visible()
    send(page, "[[pace:0]] at the limit")
    answered(page, 1)
    assert opened.chat_bodies[-1]["max_tokens"] == top
    expect(page.locator(".msg.assistant").last).to_have_attribute("data-outcome", "complete")


def test_reasoning_is_visible_while_it_streams_then_folds_away(opened: Opened) -> None:
    page = opened.page
    page.select_option("#model", reasoning_model(page))
    send(page, "[[pace:30]] [[think:60]] why")
    thinking = page.locator(".msg.assistant .thinking").last
    # Open, and its words on screen, while the model is still thinking.
    expect(thinking).to_have_attribute("open", "")
    expect(thinking.locator(".thinking-text")).to_be_visible()
    expect(thinking.locator(".thinking-text")).to_contain_text("Let me think")
    assert page.locator(".msg.assistant .text").last.inner_text() == "", "the answer began too soon"
    answered(page, 1)
    assert thinking.get_attribute("open") is None, "the thinking block stays open after the answer"
    assert len(thinking.locator(".thinking-text").text_content() or "") > 100


def test_jump_to_latest_appears_when_the_reader_scrolls_up(opened: Opened) -> None:
    page = opened.page
    page.set_viewport_size({"width": 900, "height": 500})
    send(page, "[[pace:10]] [[tokens:400]] long")
    page.wait_for_function(
        "document.getElementById('log').scrollHeight > 3 * document.getElementById('log').clientHeight"
    )
    jump = page.get_by_role("button", name="Jump to latest")
    expect(jump).to_be_hidden()
    page.locator("#log").evaluate("l => { l.scrollTop = 0; }")
    expect(jump).to_be_visible()
    shot(page, "work-jump")
    jump.click()
    expect(jump).to_be_hidden()
    assert (
        page.evaluate(
            "(() => { const l = document.getElementById('log'); return l.scrollHeight - l.scrollTop - l.clientHeight; })()"
        )
        < 48
    )
    page.keyboard.press("Escape")
    answered(page, 1)


def test_regenerate_and_edit_keep_versions(opened: Opened) -> None:
    page = opened.page
    send(page, "[[pace:0]] first question")
    answered(page, 1)
    page.get_by_role("button", name="Regenerate answer").click()
    page.wait_for_function("document.querySelectorAll('.msg.assistant[data-outcome]').length === 1")
    answer = page.locator(".msg.assistant").last
    expect(answer.locator(".versions")).to_have_text("‹2 / 2›")
    answer.get_by_role("button", name="Regenerate answer").click()
    page.wait_for_function("document.querySelectorAll('.msg.assistant[data-outcome]').length === 1")
    expect(page.locator(".msg.assistant .versions")).to_have_text("‹3 / 3›")
    page.locator(".msg.assistant").get_by_role("button", name="Previous version").click()
    expect(page.locator(".msg.assistant .versions")).to_have_text("‹2 / 3›")
    page.locator(".msg.assistant").get_by_role("button", name="Previous version").click()
    expect(page.locator(".msg.assistant .versions")).to_have_text("‹1 / 3›")
    expect(page.get_by_role("button", name="Next version")).to_be_focused()
    # An edit keeps the question it replaced, with its answer.
    page.locator(".msg.user").get_by_role("button", name="Edit and resend").click()
    page.fill("#prompt", "[[pace:0]] second question")
    page.press("#prompt", "Enter")
    answered(page, 1)
    user = page.locator(".msg.user")
    expect(user.locator(".versions")).to_have_text("‹2 / 2›")
    user.get_by_role("button", name="Previous version").click()
    expect(page.locator(".msg.user .text")).to_have_text("[[pace:0]] first question")
    expect(page.locator(".msg.assistant .versions")).to_have_text("‹1 / 3›")
    page.reload()
    expect(page.locator(".msg.user .versions")).to_have_text("‹1 / 2›")
    shot(page, "work-versions")


def test_rename_search_export_and_undo_a_delete(browser: Browser, runtime: Runtime) -> None:
    o = open_page(browser, runtime, accept_downloads=True)
    page = o.page
    for q in ("alpha question", "beta question"):
        page.click("#clear")
        send(page, f"[[pace:0]] {q}")
        answered(page, 1)
    page.get_by_role("button", name="Rename chat: beta question").click()
    page.keyboard.press("Control+a")
    page.keyboard.type("Beta, renamed")
    page.keyboard.press("Enter")
    expect(page.locator("#chat-list .open")).to_have_text(["Beta, renamed", "alpha question"])
    expect(page.locator("#chat-list .open").first).to_be_focused()
    page.fill("#search", "ALPHA")
    expect(page.locator("#chat-list .open")).to_have_text(["alpha question"])
    page.fill("#search", "nothing like it")
    expect(page.locator("#chat-list li")).to_have_text(["No chat matches"])
    page.fill("#search", "")
    page.locator("#chat-list .open", has_text="Beta, renamed").click()
    page.click("#settings-open")
    with page.expect_download() as md:
        page.get_by_role("button", name="Markdown").click()
    assert md.value.suggested_filename == "Beta-renamed.md"
    text = md.value.path().read_text(encoding="utf-8")
    assert text.startswith("# Beta, renamed\n\n")
    assert "## You\n\n[[pace:0]] beta question\n\n## Answer\n\nYou said: beta question." in text
    with page.expect_download() as js:
        page.get_by_role("button", name="JSON").click()
    saved: dict[str, Any] = json.loads(js.value.path().read_text(encoding="utf-8"))
    assert (saved["format"], saved["chat"]["title"], len(saved["chat"]["messages"])) == (
        "ai-chat",
        "Beta, renamed",
        2,
    )
    page.get_by_role("button", name="Cancel").click()
    # Delete: focus goes to the chat that takes its place; Undo puts it back.
    page.get_by_role("button", name="Delete chat: Beta, renamed").click()
    expect(page.locator("#chat-list .open")).to_have_text(["alpha question"])
    expect(page.locator("#chat-list .open").first).to_be_focused()
    expect(page.locator("#toast")).to_have_text("Deleted “Beta, renamed”. Undo")
    shot(page, "work-undo")
    assert axe_violations(page) == [], "with the undo offer"
    page.locator("#toast").get_by_role("button", name="Undo").click()
    expect(page.locator("#chat-list .open")).to_have_text(["Beta, renamed", "alpha question"])
    expect(page.locator(".msg.user .text")).to_have_text(["[[pace:0]] beta question"])
    page.reload()
    expect(page.locator("#chat-list .open")).to_have_text(["Beta, renamed", "alpha question"])
    page.context.close()
    assert o.errors == []


MARKDOWN = (
    "[[pace:0]] intro\n\n## Title\n\n| left | middle | right |\n|:--|:-:|--:|\n| a | b | c |\n\n"
    "```python\nprint(len([1, 2]))\n```\n\nDone."
)


def test_the_announcement_reads_words_not_markdown_and_copy_is_announced(
    browser: Browser, runtime: Runtime
) -> None:
    o = open_page(browser, runtime)
    page = o.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=runtime.url)
    page.evaluate(
        "window.__announced = []; new MutationObserver(() => window.__announced.push(document.getElementById('announcer').textContent))"
        ".observe(document.getElementById('announcer'), { childList: true, characterData: true, subtree: true })"
    )
    send(page, MARKDOWN)
    answered(page, 1)
    page.wait_for_function("window.__announced.some(t => t.startsWith('Answer: '))")
    said = next(t for t in page.evaluate("window.__announced") if t.startswith("Answer: "))
    assert (
        said
        == "Answer: You said: intro\nTitle\nleft middle right\na b c\nprint(len([1, 2]))\nDone. This answer comes from the built-in offline model, one token at a time, in turn 1."
    ), said
    # Column alignment from the delimiter row.
    cells = page.locator(".msg.assistant table tr").last.locator("td")
    assert [cells.nth(i).evaluate("c => getComputedStyle(c).textAlign") for i in range(3)] == [
        "left",
        "center",
        "right",
    ]
    head = page.locator(".msg.assistant table th").first
    assert head.evaluate("c => getComputedStyle(c).textAlign") == "left"
    page.get_by_role("button", name="Copy answer").click()
    page.wait_for_function("window.__announced.includes('Copied to the clipboard.')")
    page.context.close()
    assert o.errors == []


def contrast(page: Page, selector: str) -> float:
    value: float = page.locator(selector).first.evaluate(
        """(el) => {
          const rgb = (s) => s.match(/[\\d.]+/g).slice(0, 3).map(Number);
          const lum = ([r, g, b]) => [r, g, b].map((c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; })
            .reduce((a, c, i) => a + c * [0.2126, 0.7152, 0.0722][i], 0);
          let bg = el; while (bg && getComputedStyle(bg).backgroundColor.match(/rgba\\(.*, 0\\)|transparent/)) bg = bg.parentElement;
          const a = lum(rgb(getComputedStyle(el).color)), b = lum(rgb(getComputedStyle(bg).backgroundColor));
          return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        }"""
    )
    return value


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_nothing_in_the_new_states_and_code_colours_pass_aa(
    browser: Browser, runtime: Runtime, scheme: str
) -> None:
    o = open_page(browser, runtime, color_scheme=scheme, viewport={"width": 1100, "height": 600})
    page = o.page
    send(page, MARKDOWN)
    answered(page, 1)
    built_in = contrast(page, ".msg.assistant .hljs-built_in")
    assert built_in >= 4.5, f"{scheme}: highlighted built-ins at {built_in:.2f}:1"
    page.get_by_role("button", name="Regenerate answer").click()
    page.wait_for_function("document.querySelectorAll('.msg.assistant[data-outcome]').length === 1")
    settings(page, max_tokens="3")
    send(page, "[[pace:0]] short")
    answered(page, 2)
    expect(page.get_by_role("button", name="Continue the answer")).to_be_visible()
    assert axe_violations(page) == [], "versions, usage, Continue"
    send(page, "[[pace:20]] [[tokens:300]] streaming")
    settings(page, max_tokens="")
    page.locator("#log").evaluate("l => { l.scrollTop = 0; }")
    expect(page.get_by_role("button", name="Jump to latest")).to_be_visible()
    assert axe_violations(page) == [], "streaming, Jump to latest"
    page.keyboard.press("Escape")
    page.click("#settings-open")
    assert axe_violations(page) == [], "settings dialog"
    shot(page, f"work-{scheme}-settings")
    page.get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name=re.compile("^Rename chat")).first.click()
    assert axe_violations(page) == [], "renaming"
    page.keyboard.press("Escape")
    # Reasoning while it streams, open.
    page.click("#clear")
    page.select_option("#model", reasoning_model(page))
    send(page, "[[pace:30]] [[think:200]] why")
    expect(page.locator(".msg.assistant .thinking[open] .thinking-text")).to_contain_text("Let me")
    assert axe_violations(page) == [], "reasoning, streaming"
    page.keyboard.press("Escape")
    answered(page, 1)
    # A long table in parts, the parts off screen not laid out (content-visibility).
    page.click("#clear")
    settings(page, max_tokens="2048")
    send(page, "[[rate:4000]] [[table:250]] go")
    answered(page, 1, timeout=60000)
    expect(page.locator(".msg.assistant .table-group.chunked > .table-wrap")).to_have_count(3)
    assert axe_violations(page) == [], "a long table in parts"
    # Search with no match, and the offer to undo a delete.
    page.fill("#search", "nothing like it")
    assert axe_violations(page) == [], "search, no match"
    page.fill("#search", "")
    page.get_by_role("button", name=re.compile("^Delete chat")).first.click()
    expect(page.locator("#toast")).to_be_visible()
    assert axe_violations(page) == [], "undo offered"
    shot(page, f"work-{scheme}-undo")
    page.context.close()
    assert o.errors == []
