"""The chat page with durable conversations (the CONVERSATIONS binding), in headless Chromium
against the Worker on workerd: a reload mid-answer resumes it in place, a second tab shows the
same stream, the chat list comes from the server, stop ends the model call."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import Runtime, assert_stopped, expected_tokens
from playwright.sync_api import Browser, BrowserContext, Page, expect

from browser.conftest import BROWSER_MARKS
from browser.test_page_browser import MARKDOWN, axe_violations, send, shot
from browser.test_page_images import PNG_URL, attach_png, models, vision_model
from browser.test_page_work import CONTINUE_PROMPT, settings

pytestmark = BROWSER_MARKS
KEY = "ai-chat:conversations:v1"


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport={"width": 1100, "height": 800})
    errors: list[str] = []
    ctx.on("weberror", lambda e: errors.append(str(e.error)))
    yield ctx
    ctx.close()
    assert errors == []


def open_tab(context: BrowserContext, runtime: Runtime) -> Page:
    page = context.new_page()
    page.goto(runtime.url + "/")
    expect(page.locator("#layout")).to_have_attribute("data-chats", "server", timeout=20000)
    return page


def answer_of(content: str, turn: int = 1) -> str:
    said = [{"role": "user", "content": "x"}] * (turn * 2 - 2) + [
        {"role": "user", "content": content}
    ]
    return "".join(expected_tokens(said))


def text_when(page: Page, predicate: str, timeout: float = 20.0) -> str:
    """Polls the last answer's text until the JS predicate on (text, outcome) holds."""
    found = page.wait_for_function(
        f"""() => {{
            const a = [...document.querySelectorAll('.msg.assistant')].pop();
            if (!a) return null;
            const text = a.querySelector('.text').innerText, outcome = a.dataset.outcome ?? null;
            return ({predicate}) ? JSON.stringify({{text, outcome}}) : null;
        }}""",
        timeout=timeout * 1000,
    )
    return str(json.loads(found.json_value())["text"])


def model_calls_for(runtime: Runtime, content: str) -> list[dict[str, Any]]:
    return [
        c
        for c in runtime.calls()
        if any(m.get("content") == content for m in c["inputs"].get("messages", []))
    ]


def test_a_reload_mid_answer_resumes_it_in_place_once_and_exactly(
    context: BrowserContext, runtime: Runtime
) -> None:
    page = open_tab(context, runtime)
    content = "[[pace:400]] reload me in the middle"
    whole = answer_of(content)
    send(page, content)
    before = text_when(page, "text.length >= 12 && outcome === null")
    assert whole.startswith(before), (before, whole)
    page.reload()
    expect(page.locator("#layout")).to_have_attribute("data-chats", "server", timeout=20000)
    # Back in place, still being written: the user's message, then the answer growing.
    partial = text_when(page, "text.length > 0 && outcome === null")
    assert whole.startswith(partial) and partial != whole, (partial, whole)
    expect(page.locator(".msg.user .text")).to_have_text([content])
    assert axe_violations(page) == [], "axe, an answer resumed after a reload"
    shot(page, "durable-resumed")
    final = text_when(page, "outcome !== null", timeout=60)
    expect(page.locator(".msg.assistant")).to_have_count(1)
    assert final == whole, f"resumed answer differs:\n got {final!r}\nwant {whole!r}"
    expect(page.locator(".msg.assistant")).to_have_attribute("data-outcome", "complete")
    assert len(model_calls_for(runtime, content)) == 1, "the model was asked again"


# The page's first answer stream breaks after about 400 bytes, as a dropped network would: its
# body errors and the request is cancelled (the Worker sees the reader leave).
CUT_FIRST_ANSWER = """
(() => {
  const real = window.fetch;
  let cut = false;
  window.fetch = async (url, init) => {
    const response = await real(url, init);
    if (cut || !String(url).endsWith("/messages")) return response;
    cut = true;
    const reader = response.body.getReader();
    let seen = 0;
    const body = new ReadableStream({ async pull(controller) {
      const { done, value } = await reader.read();
      if (done) { controller.close(); return; }
      seen += value.byteLength;
      if (seen > 400) { reader.cancel(); controller.error(new TypeError("network error")); return; }
      controller.enqueue(value);
    } });
    return new Response(body, { status: response.status, headers: response.headers });
  };
})();
"""


def test_a_dropped_connection_resumes_the_answer_in_place(
    context: BrowserContext, runtime: Runtime
) -> None:
    context.add_init_script(CUT_FIRST_ANSWER)
    page = open_tab(context, runtime)
    content = "[[pace:200]] drop my connection"
    whole = answer_of(content)
    streams: list[str | None] = []
    page.on(
        "request",
        lambda r: (
            streams.append(r.headers.get("last-event-id")) if r.url.endswith("/stream") else None
        ),
    )
    send(page, content)
    final = text_when(page, "outcome !== null", timeout=60)
    assert final == whole, f"resumed answer differs:\n got {final!r}\nwant {whole!r}"
    expect(page.locator(".msg.assistant")).to_have_attribute("data-outcome", "complete")
    assert len(streams) == 1 and (streams[0] or "").startswith("1:"), (
        f"not resumed once after an event id: {streams}"
    )
    assert len(model_calls_for(runtime, content)) == 1


def test_a_second_tab_shows_the_same_stream(context: BrowserContext, runtime: Runtime) -> None:
    first = open_tab(context, runtime)
    content = "[[pace:400]] watch me in two tabs"
    whole = answer_of(content)
    send(first, content)
    text_when(first, "text.length >= 8 && outcome === null")
    second = open_tab(context, runtime)
    joined = text_when(second, "text.length > 0 && outcome === null")
    assert whole.startswith(joined) and joined != whole, (joined, whole)
    ends = [text_when(tab, "outcome !== null", timeout=60) for tab in (first, second)]
    assert ends == [whole, whole], ends
    for tab in (first, second):
        expect(tab.locator(".msg.assistant")).to_have_count(1)
        expect(tab.locator(".msg.assistant")).to_have_attribute("data-outcome", "complete")
    assert len(model_calls_for(runtime, content)) == 1


def test_a_tab_already_open_on_the_chat_follows_an_answer_begun_in_another(
    context: BrowserContext, runtime: Runtime
) -> None:
    first = open_tab(context, runtime)
    send(first, "[[pace:0]] a first turn")
    text_when(first, "outcome === 'complete'")
    second = open_tab(context, runtime)
    expect(second.locator(".msg.assistant")).to_have_count(1)
    content = "[[pace:250]] a second turn, seen in both tabs"
    whole = answer_of(content, turn=2)
    send(first, content)
    text_when(first, "text.length >= 8 && outcome === null")
    expect(second.locator(".msg.assistant")).to_have_count(2, timeout=20000)
    joined = text_when(second, "outcome === null && text.length > 0")
    assert whole.startswith(joined) and joined != whole, (joined, whole)
    ends = [text_when(tab, "outcome !== null", timeout=60) for tab in (first, second)]
    assert ends == [whole, whole], ends
    expect(second.locator(".msg.user .text")).to_have_text(["[[pace:0]] a first turn", content])


def test_tabs_keep_one_list_through_a_fork_and_a_conversation_deleted_elsewhere(
    context: BrowserContext, runtime: Runtime
) -> None:
    first = open_tab(context, runtime)
    send(first, "[[pace:0]] question one")
    text_when(first, "outcome === 'complete'")
    second = open_tab(context, runtime)
    expect(second.locator(".msg.user .text")).to_have_text(["[[pace:0]] question one"])
    first.locator(".msg.user").get_by_role("button", name="Edit and resend").click()
    first.fill("#prompt", "[[pace:0]] question two")
    first.press("#prompt", "Enter")
    text_when(first, "outcome === 'complete' && text.includes('question two')")
    forked = current_conversation(first)
    # The other tab follows the fork: the same chat, its new branch, one entry in the list.
    expect(second.locator("#chat-list .open")).to_have_text(["question two"])
    expect(second.locator(".msg.user .text")).to_have_text(["[[pace:0]] question two"])
    send(second, "[[pace:0]] from the second tab")
    text_when(second, "outcome === 'complete' && text.includes('second tab')")
    assert [m["content"] for m in server_history(runtime, forked, first)] == [
        "[[pace:0]] question two",
        answer_of("[[pace:0]] question two"),
        "[[pace:0]] from the second tab",
        answer_of("[[pace:0]] from the second tab", turn=2),
    ]
    # Deleted behind the page's back: the next message starts it again from the page's history.
    assert (
        httpx.delete(
            f"{runtime.url}/api/v1/conversations/{forked}", headers=owner(first), timeout=10
        ).status_code
        == 204
    )
    send(second, "[[pace:0]] after a delete")
    text_when(second, "outcome === 'complete' && text.includes('after a delete')")
    expect(second.locator(".msg.assistant.error")).to_have_count(0)
    again = current_conversation(second)
    assert again != forked and len(server_history(runtime, again, second)) == 6, server_history(
        runtime, again, second
    )


def test_the_chat_list_comes_from_the_server_and_survives_a_reload(
    context: BrowserContext, runtime: Runtime
) -> None:
    page = open_tab(context, runtime)
    send(page, "[[pace:0]] the first server chat")
    text_when(page, "outcome === 'complete'")
    page.click("#clear")
    send(page, "[[pace:0]] the second server chat")
    text_when(page, "outcome === 'complete'")
    expect(page.locator("#chat-list .open")).to_have_text(
        ["the second server chat", "the first server chat"]
    )
    saved = json.loads(page.evaluate(f"localStorage.getItem('{KEY}')"))
    assert "server chat" not in json.dumps(saved), f"the browser keeps more than ids: {saved}"
    ids = [c["conversation"] for c in saved["chats"]]
    assert len(ids) == 2 and saved["currentId"] == ids[0], saved
    page.reload()
    expect(page.locator("#chat-list .open")).to_have_text(
        ["the second server chat", "the first server chat"]
    )
    expect(page.locator(".msg.user .text")).to_have_text(["[[pace:0]] the second server chat"])
    expect(page.locator(".msg.assistant .text")).to_have_text(
        [answer_of("[[pace:0]] the second server chat")]
    )
    # Gone from the server (another device deleted it): it leaves the list at the next load.
    assert (
        httpx.delete(
            f"{runtime.url}/api/v1/conversations/{ids[1]}", headers=owner(page), timeout=10
        ).status_code
        == 204
    )
    page.reload()
    expect(page.locator("#chat-list .open")).to_have_text(["the second server chat"])
    page.wait_for_function(
        f"JSON.parse(localStorage.getItem('{KEY}')).chats.length === 1", timeout=10000
    )
    assert axe_violations(page) == [], "axe, the list read from the server"


def test_stop_ends_the_answer_on_the_server_and_the_model_call(
    context: BrowserContext, runtime: Runtime
) -> None:
    page = open_tab(context, runtime)
    send(page, "[[pace:150]] [[tokens:200]] stop me on the server")
    text_when(page, "text.length > 10 && outcome === null")
    page.click("#stop")
    text_when(page, "outcome === 'aborted'")
    assert_stopped(runtime.wait_for(lambda c: c["clientClosedAt"] is not None))
    expect(page.locator(".msg.assistant .note")).to_have_text(["Stopped."])
    stopped = page.locator(".msg.assistant .text").inner_text()
    page.reload()
    expect(page.locator(".msg.assistant .text")).to_have_text([stopped])
    expect(page.locator(".msg.assistant .note")).to_have_text(["Stopped."])  # its stored ending


def owner(page: Page) -> dict[str, str]:
    """The page's owner token, as another device with the same token sends it."""
    return {"x-owner-token": str(page.evaluate("localStorage.getItem('ai-chat:owner-token')"))}


def server_history(runtime: Runtime, id: str, page: Page) -> Any:
    response = httpx.get(
        f"{runtime.url}/api/v1/conversations/{id}", headers=owner(page), timeout=10
    )
    return response.json()["messages"] if response.status_code == 200 else response.status_code


def current_conversation(page: Page) -> str:
    return str(json.loads(page.evaluate(f"localStorage.getItem('{KEY}')"))["currentId"])


def test_settings_continue_after_a_reload_and_an_edit_fork_the_conversation(
    context: BrowserContext, runtime: Runtime
) -> None:
    page = open_tab(context, runtime)
    settings(page, system="Answer in one line.", max_tokens="5")
    send(page, "[[pace:0]] tell me more")
    assert text_when(page, "outcome === 'complete'") == "You said: tell me more."
    first = current_conversation(page)
    # The system prompt is the chat's setting: the conversation starts from it.
    assert runtime.last_call()["inputs"]["messages"] == [
        {"role": "system", "content": "Answer in one line."},
        {"role": "user", "content": "[[pace:0]] tell me more"},
    ]
    assert runtime.last_call()["inputs"]["max_tokens"] == 5
    page.reload()
    answer = page.locator(".msg.assistant").last
    expect(answer.locator(".note")).to_have_text(
        "The answer reached its length limit. Continue asks the model for the rest."
    )
    answer.get_by_role("button", name="Continue the answer").click()
    text_when(page, "outcome === 'complete' && text.length > 30")
    expect(page.locator(".msg.assistant .text")).to_have_text(
        ["You said: tell me more.You said: Continue exactly where"]
    )
    assert current_conversation(page) == first, "Continue goes on in the same conversation"
    assert [m["content"] for m in server_history(runtime, first, page)][-2:] == [
        CONTINUE_PROMPT,
        "You said: Continue exactly where",
    ]
    # An edit: what the page would send is no longer the server's history, so it forks.
    page.locator(".msg.user").get_by_role("button", name="Edit and resend").click()
    page.fill("#prompt", "[[pace:0]] an edited question")
    page.press("#prompt", "Enter")
    assert text_when(page, "outcome === 'complete'") == "You said: an edited question."
    expect(page.locator(".msg.user .versions")).to_have_text("‹2 / 2›")
    forked = current_conversation(page)
    assert forked != first
    history = server_history(runtime, forked, page)
    # Each answer is kept with what the page shows under it (its model, ending, usage, times).
    assert history[-1]["details"]["model"] == "@cf/google/gemma-4-26b-a4b-it", history
    assert [{k: v for k, v in m.items() if k != "details"} for m in history] == [
        {"role": "system", "content": "Answer in one line."},
        {"role": "user", "content": "[[pace:0]] an edited question"},
        {"role": "assistant", "content": "You said: an edited question."},
    ]
    deadline = time.monotonic() + 10
    while server_history(runtime, first, page) != 404:  # the old one is deleted, not left behind
        assert time.monotonic() < deadline, "the conversation it forked from is still there"
        time.sleep(0.05)
    assert axe_violations(page) == [], "axe, a forked chat with versions"


def test_hostile_text_and_an_image_read_back_from_the_server_stay_inert(
    context: BrowserContext, runtime: Runtime
) -> None:
    page = open_tab(context, runtime)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.select_option("#model", vision_model(models(runtime), True))
    attach_png(page)
    send(page, MARKDOWN)
    text_when(page, "outcome === 'complete'")
    page.reload()
    expect(page.locator(".msg.assistant")).to_have_attribute("data-outcome", "complete")
    user, answer = page.locator(".msg.user"), page.locator(".msg.assistant .text")
    expect(user.locator(".text")).to_have_text(MARKDOWN)  # the user's words: text, never markup
    expect(user.locator("img")).to_have_attribute("src", PNG_URL)  # from the server's copy
    expect(answer.locator("h2")).to_have_text("Heading two")
    expect(answer).to_contain_text('<img src=x onerror="window.pwned=1">')
    assert page.locator("#log img").count() == 1, "only the user's own image is drawn"
    assert page.locator("#log script, #log iframe, #log a[href^='javascript' i]").count() == 0
    assert page.evaluate("window.pwned") is None
    assert [u for u in requests if "evil.invalid" in u] == []
