"""A reload is invisible (issue 45): a finished answer (its thinking and how long it took, its
usage and speed, its model, how it ended) is drawn from what was kept exactly as it was drawn
while it streamed: after a reload, in a second tab, with durable conversations and without."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from conftest import Runtime
from playwright.sync_api import Browser, BrowserContext, Page, expect

from browser.conftest import BROWSER_MARKS
from browser.test_page_browser import answered, axe_violations, reasoning_model, send, shot

pytestmark = BROWSER_MARKS

# The finished answers and questions of the conversation as drawn, without the ids the page
# makes up for its own bookkeeping (new on every load).
DRAWN = """() => {
    const log = document.querySelector('#log').cloneNode(true);
    for (const n of log.querySelectorAll('[data-id]')) n.removeAttribute('data-id');
    return [...log.querySelectorAll('.msg')].map((m) => m.outerHTML);
}"""


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    ctx.on("weberror", lambda e: errors.append(str(e.error)))
    yield ctx
    ctx.close()
    assert errors == []


def loaded(page: Page, answers: int, durable: bool) -> None:
    """The page has read its chats back and the model list: every answer drawn as it ends."""
    if durable:
        expect(page.locator("#layout")).to_have_attribute("data-chats", "server", timeout=20000)
    page.wait_for_function("document.querySelectorAll('#model option').length > 1")
    answered(page, answers, timeout=20000)


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "in-the-browser"])
def test_finished_answers_are_drawn_the_same_after_a_reload_and_in_a_second_tab(
    context: BrowserContext, request: pytest.FixtureRequest, durable: bool
) -> None:
    rt: Runtime = request.getfixturevalue("runtime" if durable else "stateless_runtime")
    page = context.new_page()
    page.goto(rt.url + "/")
    loaded(page, 0, durable)
    page.select_option("#model", reasoning_model(page))
    send(page, "[[pace:30]] [[think:6]] why is the sky blue")
    answered(page, 1)
    page.select_option("#model", index=0)
    send(page, "[[pace:5]] and the sea?")
    answered(page, 2)
    page.wait_for_timeout(300)  # the last answer's details are read back as it ends
    before = page.evaluate(DRAWN)
    first = page.locator(".msg.assistant").first
    expect(first.locator(".thinking summary")).to_have_text(
        re.compile(r"^Thought for (less than a second|[\d.]+ seconds)$")
    )
    expect(first.locator(".usage")).to_contain_text("tokens/s")
    expect(first.locator(".by")).to_contain_text("gpt-oss")
    expect(first.locator(".by time")).to_have_text(re.compile(r"\d"))  # when it was written
    expect(page.locator(".msg.assistant").last.locator(".by")).not_to_have_text("")
    expect(page.locator(".msg.assistant").last.locator(".usage")).to_contain_text("tokens")
    shot(page, f"reload-before-{'durable' if durable else 'local'}")

    page.reload()
    loaded(page, 2, durable)
    after = page.evaluate(DRAWN)
    assert after == before, "a reload changed the finished answers:\n" + "\n".join(
        f"before: {b}\nafter:  {a}" for b, a in zip(before, after, strict=False) if a != b
    )
    assert axe_violations(page) == [], "axe, the conversation read back"

    second = context.new_page()
    second.goto(rt.url + "/")
    loaded(second, 2, durable)
    assert second.evaluate(DRAWN) == before, "a second tab draws the answers differently"
    shot(second, f"reload-second-tab-{'durable' if durable else 'local'}")


def test_an_edit_keeps_both_branches_each_answers_from_its_own_history_and_both_survive(
    context: BrowserContext, runtime: Runtime
) -> None:
    page = context.new_page()
    page.goto(runtime.url + "/")
    loaded(page, 0, True)
    send(page, "[[pace:0]] first question")
    answered(page, 1)
    page.locator(".msg.user").first.get_by_role("button", name="Edit and resend").click()
    page.fill("#prompt", "[[pace:0]] edited question")
    page.press("#prompt", "Enter")
    answered(page, 1)
    versions = page.locator(".msg.user .versions")
    expect(versions).to_have_text("‹2 / 2›")
    # Back to the first branch: a follow-up there is answered from that branch's history.
    versions.get_by_role("button", name="Previous version").click()
    expect(page.locator(".msg.user .text").first).to_have_text("[[pace:0]] first question")
    send(page, "[[pace:0]] and then?")
    answered(page, 2)
    page.wait_for_timeout(300)  # the versions are kept as the answer ends
    sent = runtime.last_call()["inputs"]["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == [
        "[[pace:0]] first question",
        "[[pace:0]] and then?",
    ], sent
    before = page.evaluate(DRAWN)
    page.reload()
    loaded(page, 2, True)
    expect(page.locator(".msg.user .versions").first).to_have_text("‹1 / 2›")
    assert page.evaluate(DRAWN) == before, "a reload changed the branch on screen"
    # The other branch is still there, with its own answer.
    page.locator(".msg.user .versions").first.get_by_role("button", name="Next version").click()
    expect(page.locator(".msg.user .text")).to_have_text(["[[pace:0]] edited question"])
    expect(page.locator(".msg.assistant .text")).to_contain_text(["edited question"])
    assert axe_violations(page) == [], "axe, a chat with branches read back"
    shot(page, "branches-after-reload")
