"""The chat page in headless Debian Chromium against the local runtime."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from conftest import Runtime, assert_stopped
from playwright.sync_api import Browser, Page, expect

from browser.conftest import ARTIFACTS, BROWSER_MARKS

pytestmark = BROWSER_MARKS


@pytest.fixture
def runtime(stateless_runtime: Runtime) -> Runtime:
    """The page without durable conversations (tests/browser/test_page_durable.py: with them)."""
    return stateless_runtime


@pytest.fixture
def page(browser: Browser, runtime: Runtime) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(runtime.url + "/")
    expect(pg.locator("#model option")).to_have_count(4)  # wrangler.toml's AI_MODELS
    yield pg
    context.close()
    assert errors == []


def send(page: Page, text: str) -> None:
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def test_answer_appears_progressively(page: Page) -> None:
    send(page, "[[pace:60]] hello browser")
    answer = page.locator(".msg.assistant .text").last
    lengths: list[int] = []
    deadline = time.monotonic() + 10
    while page.locator(".msg.assistant[data-outcome]").count() == 0 and time.monotonic() < deadline:
        lengths.append(len(answer.inner_text()))
        time.sleep(0.05)
    expect(page.locator(".msg.assistant").last).to_have_attribute("data-outcome", "complete")
    growth = sorted(set(n for n in lengths if n > 0))
    assert len(growth) >= 3, lengths
    assert lengths == sorted(lengths)
    assert answer.inner_text().startswith("You said: hello browser.")
    expect(page.locator("#send")).to_be_enabled()


def test_stop_mid_answer_cancels_the_model(page: Page, runtime: Runtime) -> None:
    send(page, "[[pace:150]] a long one")
    expect(page.locator("#send")).to_be_disabled()
    expect(page.locator(".msg.assistant .text").last).not_to_have_text("")
    page.click("#stop")
    expect(page.locator(".msg.assistant").last).to_have_attribute("data-outcome", "aborted")
    call = runtime.wait_for(lambda c: c["clientClosedAt"] is not None)
    assert_stopped(call)
    expect(page.locator("#stop")).to_be_hidden()


def test_html_in_messages_is_shown_as_text(page: Page) -> None:
    payload = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
    send(page, f"[[pace:0]] {payload}")
    expect(page.locator(".msg.assistant").last).to_have_attribute("data-outcome", "complete")
    assert page.locator(".msg.user .text").last.inner_text() == f"[[pace:0]] {payload}"
    assert payload in page.locator(".msg.assistant .text").last.inner_text()
    assert page.locator("#log img, #log script").count() == 0
    assert page.evaluate("window.pwned") is None


def test_upstream_error_shows_error_state_and_retry_works(page: Page, runtime: Runtime) -> None:
    send(page, "[[fault:midstream]] [[pace:5]] boom")
    failed = page.locator(".msg.assistant.error").last
    expect(failed).to_have_attribute("data-outcome", "failed")
    expect(failed.locator(".note")).to_contain_text("The model stream failed.")
    runtime.set_vars(AI_CHAT_DISABLED="1")
    try:
        failed.locator(".retry").click()
        expect(page.locator(".msg.assistant.error .note").last).to_contain_text("turned off")
    finally:
        runtime.set_vars(AI_CHAT_DISABLED=None)


def test_multi_turn_enter_and_shift_enter_and_screenshot(page: Page) -> None:
    page.fill("#prompt", "first line")
    page.press("#prompt", "Shift+Enter")
    page.keyboard.type("[[pace:0]] second line")
    assert page.locator(".msg").count() == 0
    page.press("#prompt", "Enter")
    expect(page.locator(".msg.assistant").last).to_have_attribute("data-outcome", "complete")
    assert (
        page.locator(".msg.user .text").first.inner_text() == "first line\n[[pace:0]] second line"
    )
    send(page, "[[pace:0]] and again")
    expect(page.locator(".msg.assistant").nth(1)).to_have_attribute("data-outcome", "complete")
    assert "in turn 3." in page.locator(".msg.assistant .text").nth(1).inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "chat.png"), full_page=True)


def test_auto_scroll_follows_the_answer_but_not_a_reader_who_scrolled_up(page: Page) -> None:
    page.set_viewport_size({"width": 800, "height": 400})
    send(page, "[[pace:8]] [[tokens:600]] long")
    log = page.locator("#log")
    page.wait_for_function(
        "document.getElementById('log').scrollHeight > 3 * document.getElementById('log').clientHeight"
    )
    gap = "(() => { const l = document.getElementById('log'); return l.scrollHeight - l.scrollTop - l.clientHeight; })()"
    assert page.evaluate(gap) < 48  # following the answer
    log.evaluate("l => { l.scrollTop = 0; }")
    before = page.evaluate("document.getElementById('log').scrollHeight")
    page.wait_for_function(f"document.getElementById('log').scrollHeight > {before} + 200")
    assert log.evaluate("l => l.scrollTop") == 0  # the reader stays where they scrolled
    log.evaluate("l => { l.scrollTop = l.scrollHeight; }")
    expect(page.locator(".msg.assistant").last).to_have_attribute(
        "data-outcome", "complete", timeout=15000
    )
    assert page.evaluate(gap) < 48  # back at the bottom, following again


def test_phone_width_has_no_horizontal_scroll(browser: Browser, runtime: Runtime) -> None:
    context = browser.new_context(
        viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True
    )
    page = context.new_page()
    page.goto(runtime.url + "/")
    send(page, "[[pace:0]] " + "averyveryverylongwordwithoutanyspaces" * 4)
    expect(page.locator(".msg.assistant").last).to_have_attribute("data-outcome", "complete")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    assert page.locator("#send").is_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "chat-phone.png"))
    context.close()
