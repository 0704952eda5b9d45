"""Owned conversations on the page (issue 34): the chat list comes from the server under the
browser's owner token, and a second browser given the same token (pasted in Settings, as a user
does it on another device) sees the same chats."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from conftest import Runtime
from playwright.sync_api import Browser, BrowserContext, expect

from browser.conftest import BROWSER_MARKS
from browser.test_page_browser import axe_violations, send, shot
from browser.test_page_durable import open_tab, text_when

pytestmark = BROWSER_MARKS
TOKEN_KEY = "ai-chat:owner-token"


@pytest.fixture
def two(browser: Browser) -> Iterator[tuple[BrowserContext, BrowserContext]]:
    """Two browsers that share nothing (two contexts: storage, cookies, tabs)."""
    contexts = [browser.new_context(viewport={"width": 1100, "height": 800}) for _ in range(2)]
    errors: list[str] = []
    for ctx in contexts:
        ctx.on("weberror", lambda e: errors.append(str(e.error)))
    yield contexts[0], contexts[1]
    for ctx in contexts:
        ctx.close()
    assert errors == []


def test_a_second_browser_with_the_same_token_sees_the_same_chats(
    two: tuple[BrowserContext, BrowserContext], runtime: Runtime
) -> None:
    home, away = (open_tab(ctx, runtime) for ctx in two)
    send(home, "[[pace:0]] made at home")
    text_when(home, "outcome === 'complete'")
    home.click("#clear")
    send(home, "[[pace:0]] also made at home")
    text_when(home, "outcome === 'complete'")
    token = str(home.evaluate(f"localStorage.getItem('{TOKEN_KEY}')"))
    assert re.fullmatch("[0-9a-f]{32}", token), token
    listed = httpx.get(
        runtime.url + "/api/v1/conversations", headers={"x-owner-token": token}, timeout=10
    ).json()
    assert [c["title"] for c in listed["data"]] == [
        "[[pace:0]] also made at home",
        "[[pace:0]] made at home",
    ]

    # The token is shown in Settings, "Your chats", to copy.
    home.click("#settings-open")
    home.get_by_role("tab", name="Your chats").click()
    expect(home.locator("#owner-token")).to_have_value(token)
    shot(home, "settings-owner-token")
    assert axe_violations(home) == [], "axe, the owner token in Settings"
    home.keyboard.press("Escape")

    # The other browser has its own token and none of these chats, until it is given the token.
    expect(away.locator("#chat-list .open", has_text="home")).to_have_count(0)
    assert away.evaluate(f"localStorage.getItem('{TOKEN_KEY}')") != token
    away.click("#settings-open")
    away.get_by_role("tab", name="Your chats").click()
    away.fill("#owner-token-paste", "not a token")
    away.click("#owner-token-use")
    expect(away.locator("#owner-token-error")).to_be_visible()
    assert axe_violations(away) == [], "axe, a pasted token refused"
    away.fill("#owner-token-paste", f"  {token.upper()}  ")
    with away.expect_navigation():
        away.click("#owner-token-use")
    expect(away.locator("#layout")).to_have_attribute("data-chats", "server", timeout=20000)
    expect(away.locator("#chat-list .open", has_text="home")).to_have_text(
        ["also made at home", "made at home"], timeout=10000
    )
    away.locator("#chat-list .open", has_text="also made at home").click()
    expect(away.locator(".msg.user .text")).to_have_text(["[[pace:0]] also made at home"])

    # A chat made in the second browser is listed in the first at its next load.
    away.click("#clear")
    send(away, "[[pace:0]] made away")
    text_when(away, "outcome === 'complete'")
    home.reload()
    expect(home.locator("#chat-list .open", has_text="made")).to_have_text(
        ["also made at home", "made at home", "made away"], timeout=10000
    )
