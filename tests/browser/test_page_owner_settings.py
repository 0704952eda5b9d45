"""The owner's settings (issue 45): CHAT_TITLE in the header and the tab, CHAT_SUGGESTIONS in the
empty chat, SYSTEM_PROMPT in what the model receives for every chat that has no system message
of its own: from the page and from /v1/chat/completions; a person's own prompt replaces it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import Runtime, start_runtime
from playwright.sync_api import Browser, Page, expect

from browser.conftest import BROWSER_MARKS
from browser.test_page_browser import answered, axe_violations, send, shot

pytestmark = BROWSER_MARKS
TITLE = "Acme help desk"
PROMPT = "You are Acme's help desk. Answer in one paragraph."
SUGGESTIONS = ["[[pace:0]] How do I reset my password?", "[[pace:0]] Where is my order?"]


@pytest.fixture(scope="module")
def owned() -> Iterator[Runtime]:
    rt = start_runtime(
        vars={
            "CHAT_TITLE": TITLE,
            "SYSTEM_PROMPT": PROMPT,
            "CHAT_SUGGESTIONS": "|".join(SUGGESTIONS),
        }
    )
    yield rt
    rt.stop()


def calls_with(rt: Runtime, content: str) -> list[list[dict[str, Any]]]:
    return [
        c["inputs"]["messages"]
        for c in rt.calls()
        if any(m.get("content") == content for m in c["inputs"].get("messages", []))
    ]


def open_owned(browser: Browser, rt: Runtime, **context: Any) -> Page:
    ctx = browser.new_context(**{"viewport": {"width": 1280, "height": 800}, **context})
    page = ctx.new_page()
    page.goto(rt.url + "/")
    expect(page.locator("#layout")).to_have_attribute("data-chats", "server", timeout=20000)
    return page


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_title_the_suggestions_and_the_owners_prompt_reach_the_page_and_the_model(
    browser: Browser, owned: Runtime, scheme: str
) -> None:
    page = open_owned(browser, owned, color_scheme=scheme)
    expect(page.locator("header h1")).to_have_text(TITLE)
    assert page.title() == TITLE
    empty = page.locator("#empty")
    expect(empty.locator("h2")).to_have_text(TITLE)
    expect(empty.get_by_role("button")).to_have_text(SUGGESTIONS)
    assert axe_violations(page) == [], f"axe, the empty chat, {scheme}"
    shot(page, f"owner-empty-{scheme}")

    # A suggestion clicked is asked; the model reads the owner's prompt first.
    empty.get_by_role("button", name=SUGGESTIONS[0]).click()
    answered(page, 1)
    [sent] = calls_with(owned, SUGGESTIONS[0])[-1:]
    assert sent[0] == {"role": "system", "content": PROMPT}, sent
    assert sent[1:] == [{"role": "user", "content": SUGGESTIONS[0]}], sent

    # Settings shows the owner's prompt; a person's own prompt for this chat replaces it.
    page.click("#clear")
    page.click("#settings-open")
    expect(page.locator("#system")).to_have_attribute("placeholder", PROMPT)
    expect(page.locator("#system-owner")).to_contain_text(PROMPT)
    assert axe_violations(page) == [], f"axe, Settings with the owner's prompt, {scheme}"
    # The dialog keeps one size from tab to tab, reached by the arrow keys.
    sizes = []
    for _ in range(4):
        box = page.locator("#settings").bounding_box()
        assert box is not None
        sizes.append((round(box["width"]), round(box["height"])))
        page.locator("#settings [role=tab][aria-selected=true]").press("ArrowRight")
    assert len(set(sizes)) == 1, f"the Settings dialog changes size: {sizes}"
    expect(page.locator("#tab-chat")).to_have_attribute("aria-selected", "true")
    page.fill("#system", "Answer like a pirate.")
    page.get_by_role("button", name="Save").click()
    send(page, "[[pace:0]] mine now")
    answered(page, 1)
    [sent] = calls_with(owned, "[[pace:0]] mine now")[-1:]
    assert sent[0] == {"role": "system", "content": "Answer like a pirate."}, sent
    assert all(m.get("content") != PROMPT for m in sent), sent
    page.context.close()


def test_the_phone_shows_the_title_and_a_placeholder_on_one_line(
    browser: Browser, owned: Runtime
) -> None:
    page = open_owned(
        browser, owned, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    expect(page.locator("header h1")).to_have_text(TITLE)
    box = page.locator("#prompt")
    lines = page.evaluate(
        """() => { const t = document.querySelector('#prompt'); const s = getComputedStyle(t);
        const probe = document.createElement('span'); probe.style.font = s.font; probe.style.whiteSpace = 'nowrap'; probe.style.position = 'absolute';
        probe.textContent = t.placeholder; document.body.append(probe);
        const fits = probe.getBoundingClientRect().width <= t.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
        probe.remove(); return fits; }"""
    )
    assert lines, f"the placeholder {box.get_attribute('placeholder')!r} wraps on a phone"
    assert axe_violations(page) == [], "axe, the phone's empty chat"
    shot(page, "owner-phone-empty")
    page.context.close()


def test_the_openai_door_gives_the_owners_prompt_to_a_chat_without_one(owned: Runtime) -> None:
    for messages, first in [
        ([{"role": "user", "content": "[[pace:0]] plain"}], {"role": "system", "content": PROMPT}),
        (
            [
                {"role": "system", "content": "Own prompt."},
                {"role": "user", "content": "[[pace:0]] with own"},
            ],
            {"role": "system", "content": "Own prompt."},
        ),
    ]:
        r = httpx.post(
            owned.url + "/v1/chat/completions",
            json={"model": "@cf/google/gemma-4-26b-a4b-it", "messages": messages},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        sent = owned.last_call()["inputs"]["messages"]
        assert sent[0] == first and sent[-1] == messages[-1], sent
        assert [m for m in sent if m["role"] == "system"] == [first], sent
