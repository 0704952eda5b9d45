"""The page's Think toggle (issue 43) in headless Chromium against the Worker on workerd: what
the model receives when a person turns thinking on and off (gemma-4 switched in its template,
gpt-oss by its level, as it cannot stop thinking), on /api/v1/chat and on durable turns; the
choice kept per chat; the keyboard; axe."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Runtime
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect

from browser.conftest import BROWSER_MARKS
from browser.test_page_browser import Opened, answered, axe_violations, open_page, send, shot
from browser.test_page_durable import model_calls_for, open_tab

pytestmark = BROWSER_MARKS

GEMMA = "@cf/google/gemma-4-26b-a4b-it"
OSS = "@cf/openai/gpt-oss-20b"
LLAMA = "@cf/meta/llama-3.1-8b-instruct-fast"
OFF = {"enable_thinking": False}
ON = {"enable_thinking": True}


def offered(page: Page) -> list[str]:
    ids: list[str] = page.eval_on_selector_all("#model option", "os => os.map(o => o.value)")
    missing = [m for m in (GEMMA, OSS, LLAMA) if m not in ids]
    assert not missing, f"the test needs {missing} among the models offered: {ids}"
    return ids


def inputs_for(runtime: Runtime, content: str) -> dict[str, Any]:
    """The inputs of the one model call whose last message is `content` (waits for it). The
    runtime is shared with other page tests: each text here says "think toggle" to be its own."""
    found: list[dict[str, Any]] = []
    for _ in range(200):
        found = [
            c
            for c in runtime.calls()
            if (c["inputs"].get("messages") or [{}])[-1].get("content") == content
        ]
        if found:
            break
        time.sleep(0.05)
    assert len(found) == 1, f"{len(found)} model calls end with {content!r}"
    inputs: dict[str, Any] = found[0]["inputs"]
    return inputs


def thinking_of(inputs: dict[str, Any]) -> dict[str, Any]:
    """What the model was told of thinking: the template switch and the effort, where sent."""
    return {k: inputs[k] for k in ("chat_template_kwargs", "reasoning_effort") if k in inputs}


def pressed(page: Page) -> str | None:
    return page.get_attribute("#think", "aria-pressed")


@pytest.fixture
def opened(browser: Browser, stateless_runtime: Runtime) -> Iterator[Opened]:
    """The page without durable conversations: answers on /api/v1/chat."""
    o = open_page(browser, stateless_runtime)
    yield o
    o.page.context.close()
    assert o.errors == []


def test_think_on_and_off_changes_what_gemma_and_gpt_oss_receive(
    opened: Opened, stateless_runtime: Runtime
) -> None:
    runtime = stateless_runtime
    page = opened.page
    offered(page)
    page.select_option("#model", GEMMA)
    think = page.locator("#think")
    expect(think).to_be_visible()
    assert pressed(page) == "false", "a browser that never chose starts with thinking off"
    expect(page.locator("#think-note")).to_have_text("")

    sent = 0

    def ask(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
        nonlocal sent
        sent += 1
        send(page, text)
        answered(page, sent)
        body = opened.chat_bodies[-1]
        assert body["messages"][-1]["content"] == text, body
        return body, thinking_of(inputs_for(runtime, text))

    body, got = ask("[[pace:0]] think toggle: gemma off")
    assert (body["reasoning_effort"], got) == ("none", {"chat_template_kwargs": OFF})
    # The keyboard: Tab reaches it from the message box (after Send), Space presses it.
    page.focus("#prompt")
    for _ in range(3):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "think":
            break
    assert page.evaluate("document.activeElement.id") == "think", "Tab from the message box"
    page.keyboard.press("Space")
    assert pressed(page) == "true"
    body, got = ask("[[pace:0]] think toggle: gemma on")
    assert (body["reasoning_effort"], got) == ("medium", {"chat_template_kwargs": ON})

    # gpt-oss cannot stop thinking: the toggle says so, and off sends its lowest level.
    page.select_option("#model", OSS)
    expect(think).to_be_visible()
    expect(think).to_have_class("quiet think partial")
    expect(page.locator("#think-note")).to_have_text(
        "gpt-oss 20B always thinks: off asks for its least (low)."
    )
    assert pressed(page) == "true", "the chat keeps its choice across a change of model"
    body, got = ask("[[pace:0]] think toggle: oss on")
    assert (body["reasoning_effort"], got) == ("medium", {"reasoning_effort": "medium"})
    assert axe_violations(page) == [], "gpt-oss, on"
    think.click()
    assert pressed(page) == "false"
    body, got = ask("[[pace:0]] think toggle: oss off")
    assert (body["reasoning_effort"], got) == ("none", {"reasoning_effort": "low"})
    assert axe_violations(page) == [], "gpt-oss, off"
    shot(page, "think-gpt-oss-off")

    # A model that does not reason: no toggle, no field.
    page.select_option("#model", LLAMA)
    expect(page.locator("#composer-tools")).to_be_hidden()
    body, got = ask("[[pace:0]] think toggle: llama")
    assert "reasoning_effort" not in body and got == {}, (body, got)


def test_each_chat_keeps_its_choice_and_a_new_chat_starts_from_the_last(
    opened: Opened, stateless_runtime: Runtime
) -> None:
    runtime = stateless_runtime
    page = opened.page
    offered(page)
    page.select_option("#model", GEMMA)
    page.click("#think")  # on, in the first chat
    send(page, "[[pace:0]] think toggle: first chat")
    answered(page, 1)
    page.click("#clear")
    assert pressed(page) == "true", "a new chat starts with the last choice made"
    page.click("#think")  # off, in the second chat only
    send(page, "[[pace:0]] think toggle: second chat")
    answered(page, 1)
    assert thinking_of(inputs_for(runtime, "[[pace:0]] think toggle: second chat")) == {
        "chat_template_kwargs": OFF
    }
    page.reload()
    expect(page.locator("#think")).to_be_visible()
    assert pressed(page) == "false", "the open chat's own choice, after a reload"
    page.locator("#chat-list .open", has_text="first chat").click()
    expect(page.locator("#think")).to_have_attribute("aria-pressed", "true")
    send(page, "[[pace:0]] think toggle: first chat again")
    answered(page, 2)
    assert thinking_of(inputs_for(runtime, "[[pace:0]] think toggle: first chat again")) == {
        "chat_template_kwargs": ON
    }
    saved = json.loads(page.evaluate("localStorage.getItem('ai-chat:v1')"))
    assert sorted(c.get("think") for c in saved["chats"]) == [False, True], saved["chats"]


def test_before_any_choice_think_starts_as_ai_thinking_says(
    browser: Browser, stateless_runtime: Runtime
) -> None:
    runtime = stateless_runtime
    ctx = browser.new_context(viewport={"width": 1100, "height": 800})
    said: list[str] = []

    def auto(route: Route) -> None:
        # As the service answers under AI_THINKING = "auto" (the runtime runs the default, off).
        response = route.fetch()
        body = response.json()
        said.append(body["thinking"])
        route.fulfill(response=response, json={**body, "thinking": "auto"})

    ctx.route("**/api/v1/models", auto)
    page = ctx.new_page()
    page.goto(runtime.url + "/")
    expect(page.locator("#think")).to_be_visible()  # the model list came (gemma-4, the default)
    offered(page)
    page.select_option("#model", GEMMA)
    expect(page.locator("#think")).to_have_attribute("aria-pressed", "true")
    assert said[0] == "off", "the runtime's own AI_THINKING"
    send(page, "[[pace:0]] think toggle: auto")
    answered(page, 1)
    assert thinking_of(inputs_for(runtime, "[[pace:0]] think toggle: auto")) == {
        "chat_template_kwargs": ON
    }
    page.click("#think")  # a choice made: it wins over the service's from now on
    page.reload()
    expect(page.locator("#think")).to_have_attribute("aria-pressed", "false")
    page.click("#clear")
    expect(page.locator("#think")).to_have_attribute("aria-pressed", "false")
    ctx.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport={"width": 1100, "height": 800})
    errors: list[str] = []
    ctx.on("weberror", lambda e: errors.append(str(e.error)))
    yield ctx
    ctx.close()
    assert errors == []


def test_durable_turns_carry_the_choice_to_the_model(
    context: BrowserContext, runtime: Runtime
) -> None:
    """The page with durable conversations (the session's runtime has the binding)."""
    page = open_tab(context, runtime)
    offered(page)
    page.select_option("#model", GEMMA)
    bodies: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: (
            bodies.append(json.loads(r.post_data or "{}"))
            if r.method == "POST" and r.url.endswith("/messages")
            else None
        ),
    )
    assert pressed(page) == "false"
    send(page, "[[pace:0]] think toggle: durable off")
    answered(page, 1)
    assert [c for c in model_calls_for(runtime, "[[pace:0]] think toggle: durable off")], (
        "no model call"
    )
    assert thinking_of(inputs_for(runtime, "[[pace:0]] think toggle: durable off")) == {
        "chat_template_kwargs": OFF
    }
    page.click("#think")
    send(page, "[[pace:0]] think toggle: durable on")
    answered(page, 2)
    assert thinking_of(inputs_for(runtime, "[[pace:0]] think toggle: durable on")) == {
        "chat_template_kwargs": ON
    }
    assert [b.get("reasoning_effort") for b in bodies] == ["none", "medium"], bodies
    assert axe_violations(page) == []
