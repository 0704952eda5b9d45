"""Issue 36 on the page, in headless Chromium against the local Worker: a message sent before
GET /api/v1/models answers, the kill switch shown on load and gone by itself, the theme, the
settings new chats start with, short model names, image thumbnails, the phone drawer, the
shortcuts; axe-core in each new state, light and dark. Screenshots go to
test-artifacts/first-*.png; UPDATE_SCREENSHOT=1 also writes docs/screenshot.png (the README's)."""

from __future__ import annotations

import base64
import json
import os
import struct
import time
import zlib
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from conftest import ROOT, Runtime, expected_tokens, start_runtime
from playwright.sync_api import Browser, BrowserContext, FilePayload, Page, Route, expect

from browser.conftest import ARTIFACTS, BROWSER_MARKS
from browser.test_page_browser import answered, axe_violations, send

pytestmark = BROWSER_MARKS
Scheme = Literal["light", "dark"]
SCHEMES: list[Scheme] = ["light", "dark"]
DESKTOP = {"width": 1280, "height": 800}
PHONE: dict[str, Any] = {
    "viewport": {"width": 390, "height": 844},
    "is_mobile": True,
    "has_touch": True,
}
MODELS_LATE_S = 2.5  # a phone on a slow network


def png(width: int, height: int) -> bytes:
    """A PNG of coloured bands, so a thumbnail shows something."""
    rows = b""
    for y in range(height):
        band = (y * 4) // height
        colour = [(0xA8, 0x43, 0x0A), (0x0B, 0x57, 0xD0), (0x1A, 0x7F, 0x37), (0xF0, 0x8A, 0x3C)][
            band
        ]
        rows += b"\0" + bytes(colour) * width

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"first-{name}.png"))


class Tab:
    """A page of its own context, with the API requests it made and the script errors it hit."""

    def __init__(self, context: BrowserContext) -> None:
        self.context = context
        self.page = context.new_page()
        self.api: list[str] = []
        self.chat_bodies: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def record(request: Any) -> None:
            if "/api/" not in request.url:
                return
            self.api.append(f"{request.method} {request.url.split('/api/', 1)[1]}")
            if request.url.endswith("/api/v1/chat") and request.method == "POST":
                self.chat_bodies.append(json.loads(request.post_data or "{}"))

        self.page.on("request", record)

    def close(self) -> None:
        self.context.close()
        assert self.errors == [], self.errors


@pytest.fixture
def tabs(browser: Browser) -> Iterator[list[Tab]]:
    opened: list[Tab] = []
    yield opened
    for tab in opened:
        tab.close()


def new_tab(browser: Browser, tabs: list[Tab], **context: Any) -> Tab:
    tab = Tab(browser.new_context(**{"viewport": DESKTOP, **context}))
    tabs.append(tab)
    return tab


def go(tab: Tab, runtime: Runtime) -> Page:
    """Opens the page and waits until the model list has come."""
    tab.page.goto(runtime.url + "/")
    tab.page.wait_for_function("document.querySelectorAll('#model option').length > 1")
    return tab.page


# ---- a message sent before the model list answers ------------------------------------------


def hold_models(page: Page) -> list[Route]:
    """GET /api/v1/models waits in the returned list until the test lets it go."""
    held: list[Route] = []

    def hold(route: Route) -> None:
        held.append(route)

    page.route("**/api/v1/models", hold)
    return held


def release_models_after(page: Page, held: list[Route], seconds: float) -> None:
    """Lets the held model list go `seconds` after the page asked for it."""
    deadline = time.monotonic() + 10
    while not held:
        assert time.monotonic() < deadline, "the page never asked for /api/v1/models"
        page.wait_for_timeout(20)
    asked = time.monotonic()
    early = held[0]
    page.wait_for_timeout(max(0.0, seconds - (time.monotonic() - asked)) * 1000)
    early.fulfill(response=early.fetch())
    page.unroute("**/api/v1/models")


def send_before_the_model_list(tab: Tab, runtime: Runtime, content: str) -> None:
    page = tab.page
    held = hold_models(page)
    page.goto(runtime.url + "/")
    send(page, content)
    started = time.monotonic()
    expect(page.locator(".msg.user .text")).to_have_text([content])
    # Shown as an answer about to be written, Stop offered, nothing sent yet.
    expect(page.locator(".msg.assistant.streaming")).to_have_count(1)
    expect(page.locator("#stop")).to_be_visible()
    assert [a for a in tab.api if "models" not in a] == [], tab.api
    assert axe_violations(page) == [], "axe, an answer waiting for the model list"
    release_models_after(page, held, MODELS_LATE_S)
    # A lower bound (the page waited for the held list), not a bound on its speed.
    assert time.monotonic() - started >= MODELS_LATE_S - 0.5


def test_a_message_sent_before_the_model_list_goes_into_a_durable_conversation(
    browser: Browser, tabs: list[Tab], runtime: Runtime
) -> None:
    tab = new_tab(browser, tabs)
    page = tab.page
    content = "[[pace:0]] the **first** message, sent at once"
    send_before_the_model_list(tab, runtime, content)
    answered(page, 1)
    expect(page.locator("#layout")).to_have_attribute("data-chats", "server")
    answer = page.locator(".msg.assistant .text")
    said = "".join(expected_tokens([{"role": "user", "content": content}]))
    expect(answer).to_have_text(said.replace("**", ""))  # the model's markdown, rendered
    expect(answer.locator("strong")).to_have_text("first")  # rendered as markdown
    # The owner's list is read as the conversations come on (issue 34); the message's calls:
    assert "GET v1/conversations?limit=100" in tab.api, tab.api
    asked = [a for a in tab.api if "models" not in a and not a.startswith("GET v1/conversations?")]
    assert asked[0] == "POST v1/conversations" and asked[1].endswith("/messages"), tab.api
    assert "POST v1/chat" not in tab.api, f"the message went the stateless way: {tab.api}"
    page.reload()
    expect(page.locator("#layout")).to_have_attribute("data-chats", "server", timeout=20000)
    expect(page.locator(".msg.user .text")).to_have_text([content])
    expect(page.locator(".msg.assistant")).to_have_attribute("data-outcome", "complete")
    expect(page.locator(".msg.assistant .text strong")).to_have_text("first")
    expect(page.locator("#chat-list .open").first).to_have_text(
        "the **first** message, sent at once"
    )
    local = page.evaluate("localStorage.getItem('ai-chat:v1')") or "{}"
    assert "sent at once" not in local, "the chat stayed in the browser-only list too"


def test_a_message_sent_before_the_model_list_without_durable_conversations(
    browser: Browser, tabs: list[Tab], stateless_runtime: Runtime
) -> None:
    tab = new_tab(browser, tabs, color_scheme="dark")  # the durable one above is light: axe in both
    page = tab.page
    content = "[[pace:0]] early, without the binding"
    send_before_the_model_list(tab, stateless_runtime, content)
    answered(page, 1)
    default = page.evaluate("fetch('/api/v1/models').then((r) => r.json()).then((j) => j.default)")
    assert [b.get("model") for b in tab.chat_bodies] == [default], tab.chat_bodies
    assert [b["messages"] for b in tab.chat_bodies] == [[{"role": "user", "content": content}]]
    page.reload()
    expect(page.locator(".msg.user .text")).to_have_text([content])
    expect(page.locator(".msg.assistant")).to_have_attribute("data-outcome", "complete")


def test_stop_cancels_a_message_waiting_for_the_model_list(
    browser: Browser, tabs: list[Tab], stateless_runtime: Runtime
) -> None:
    tab = new_tab(browser, tabs)
    page = tab.page
    held = hold_models(page)
    page.goto(stateless_runtime.url + "/")
    send(page, "[[pace:0]] never mind")
    page.click("#stop")
    expect(page.locator(".msg.assistant")).to_have_count(0)
    expect(page.locator("#send")).to_be_visible()
    release_models_after(page, held, 0)
    page.wait_for_function("document.querySelectorAll('#model option').length > 1")
    page.wait_for_timeout(300)
    assert tab.chat_bodies == [], "a cancelled message was sent anyway"
    expect(page.locator(".msg.user .text")).to_have_text(["[[pace:0]] never mind"])


# ---- the kill switch --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def off_runtime() -> Iterator[Runtime]:
    """The Worker with the kill switch on (as the dashboard sets it), durable conversations on."""
    rt = start_runtime(vars={"AI_CHAT_DISABLED": "1"})
    yield rt
    rt.stop()


def expect_off(page: Page) -> None:
    banner = page.locator("#off-banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("The chat is turned off for now.")
    expect(banner).to_contain_text("no need to reload")
    expect(page.locator("#prompt")).to_be_disabled()
    expect(page.locator("#send")).to_be_disabled()
    expect(page.locator("#attach")).to_have_attribute("aria-disabled", "true")


def expect_on(page: Page) -> None:
    expect(page.locator("#off-banner")).to_be_hidden(timeout=20000)
    expect(page.locator("#prompt")).to_be_enabled()
    expect(page.locator("#send")).to_be_enabled()


def test_the_kill_switch_shows_on_load_and_goes_when_it_is_turned_off(
    browser: Browser, tabs: list[Tab], off_runtime: Runtime
) -> None:
    tab = new_tab(browser, tabs)
    page = tab.page
    page.clock.install()
    page.goto(off_runtime.url + "/")
    expect_off(page)  # before anything is typed
    assert [a for a in tab.api if "models" not in a] == [], tab.api
    for scheme in SCHEMES:
        page.emulate_media(color_scheme=scheme)
        assert axe_violations(page) == [], f"axe, the chat turned off, {scheme}"
        shot(page, f"off-{scheme}")
    page.emulate_media(color_scheme="light")
    off_runtime.set_vars(AI_CHAT_DISABLED=None)
    page.wait_for_timeout(500)
    expect(page.locator("#off-banner")).to_be_visible()  # nothing asked again yet
    asked = len(tab.api)
    page.clock.fast_forward(21_000)  # the page's next look, 20 s later
    expect_on(page)
    assert len(tab.api) > asked
    expect(page.locator("#layout")).to_have_attribute("data-chats", "server")
    send(page, "[[pace:0]] back on")
    answered(page, 1)
    expect(page.locator(".msg.assistant")).to_have_attribute("data-outcome", "complete")
    off_runtime.set_vars(AI_CHAT_DISABLED="1")


def test_a_kill_switch_turned_on_while_the_page_is_open_shows_and_goes(
    browser: Browser, tabs: list[Tab], runtime: Runtime
) -> None:
    tab = new_tab(browser, tabs)
    page = tab.page
    page.clock.install()
    go(tab, runtime)
    expect(page.locator("#layout")).to_have_attribute("data-chats", "server")

    def refuse(route: Route) -> None:
        route.fulfill(
            status=503,
            json={"error": "ai_unavailable", "message": "The AI chat service is turned off"},
        )

    page.route("**/api/v1/conversations", refuse)
    page.route("**/api/v1/models", refuse)
    send(page, "[[pace:0]] is it on?")
    answered(page, 1)
    expect(page.locator(".msg.assistant .note").first).to_contain_text("turned off for now")
    expect_off(page)
    page.unroute("**/api/v1/conversations")
    page.clock.fast_forward(21_000)
    expect(page.locator("#off-banner")).to_be_visible()  # still off: the list said so again
    page.unroute("**/api/v1/models")
    page.clock.fast_forward(21_000)
    expect_on(page)
    page.locator(".msg.assistant .retry").click()
    answered(page, 1)
    expect(page.locator(".msg.assistant")).to_have_attribute("data-outcome", "complete")


# ---- the theme ----------------------------------------------------------------------------------

BACKGROUND = {"light": "rgb(255, 255, 255)", "dark": "rgb(23, 24, 26)"}


def scheme_of(page: Page) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(
        """() => ({
            theme: document.documentElement.dataset.theme,
            background: getComputedStyle(document.body).backgroundColor,
            checked: document.querySelector('input[name=theme]:checked')?.value,
            hljs: [...document.querySelectorAll('link[data-scheme]')].map((l) => `${l.dataset.scheme}:${l.media}`),
        })"""
    )
    return found


def choose_theme(page: Page, name: str) -> None:
    """Settings → Appearance, the theme chosen (applied at once), then closed by keyboard."""
    page.click("#settings-open")
    page.get_by_role("tab", name="Appearance").click()
    page.get_by_role("radio", name=name).check()
    page.keyboard.press("Escape")
    expect(page.locator("#settings")).not_to_be_visible()


@pytest.mark.parametrize("system", SCHEMES)
def test_the_theme_is_chosen_and_remembered(
    browser: Browser, tabs: list[Tab], stateless_runtime: Runtime, system: Scheme
) -> None:
    other: Scheme = "dark" if system == "light" else "light"
    tab = new_tab(browser, tabs, color_scheme=system)
    page = go(tab, stateless_runtime)
    assert scheme_of(page) == {
        "theme": system,
        "background": BACKGROUND[system],
        "checked": "system",
        "hljs": [
            f"light:{'all' if system == 'light' else 'not all'}",
            f"dark:{'all' if system == 'dark' else 'not all'}",
        ],
    }
    send(page, "[[pace:0]] colours\n\n```python\nprint(len([1, 2]))\n```")
    answered(page, 1)
    choose_theme(page, other.capitalize())
    assert scheme_of(page)["theme"] == other
    assert scheme_of(page)["background"] == BACKGROUND[other]
    assert axe_violations(page) == [], f"axe, {other} chosen on a {system} device"
    shot(page, f"theme-{other}-on-{system}")
    page.reload()
    page.wait_for_function("document.querySelectorAll('#model option').length > 1")
    assert scheme_of(page) == {
        "theme": other,
        "background": BACKGROUND[other],
        "checked": other,
        "hljs": [
            f"light:{'all' if other == 'light' else 'not all'}",
            f"dark:{'all' if other == 'dark' else 'not all'}",
        ],
    }
    choose_theme(page, "System")
    assert scheme_of(page)["theme"] == system
    page.emulate_media(color_scheme=other)  # the device changes: "system" follows
    page.wait_for_function(f"document.documentElement.dataset.theme === '{other}'")


# ---- settings new chats start with --------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
def test_settings_new_chats_start_with(
    browser: Browser, tabs: list[Tab], stateless_runtime: Runtime, scheme: str
) -> None:
    tab = new_tab(browser, tabs, color_scheme=scheme)
    page = go(tab, stateless_runtime)
    page.click("#settings-open")
    expect(page.get_by_role("tab", name="This chat")).to_have_attribute("aria-selected", "true")
    assert axe_violations(page) == [], f"axe, settings of this chat, {scheme}"
    page.get_by_role("tab", name="This chat").press("ArrowRight")
    new_chats = page.get_by_role("tab", name="New chats")
    expect(new_chats).to_be_focused()
    expect(new_chats).to_have_attribute("aria-selected", "true")
    expect(page.locator("#panel-chat")).to_be_hidden()
    page.fill("#default-system", "Answer in one line.")
    page.fill("#default-temperature", "9")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#settings-error")).to_have_text("New chats: Temperature goes from 0 to 5.")
    assert axe_violations(page) == [], f"axe, settings for new chats, an error, {scheme}"
    shot(page, f"settings-new-{scheme}")
    page.fill("#default-temperature", "0.2")
    page.fill("#default-max-tokens", "40")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#settings")).not_to_be_visible()
    # The empty chat on screen is a new chat: it starts with them.
    send(page, "[[pace:0]] first chat")
    answered(page, 1)
    system = {"role": "system", "content": "Answer in one line."}
    body = tab.chat_bodies[-1]
    assert (body["messages"][0], body["temperature"], body["max_tokens"]) == (system, 0.2, 40)
    # This chat's own settings change this chat only.
    page.click("#settings-open")
    expect(page.locator("#system")).to_have_value("Answer in one line.")
    page.fill("#system", "Only this chat.")
    page.get_by_role("button", name="Save").click()
    page.locator("#prompt").press("Control+Shift+O")  # a new chat
    expect(page.locator("#empty")).to_be_visible()
    send(page, "[[pace:0]] second chat")
    answered(page, 1)
    body = tab.chat_bodies[-1]
    assert (body["messages"][0], body["temperature"], body["max_tokens"]) == (system, 0.2, 40)
    page.reload()
    page.wait_for_function("document.querySelectorAll('#model option').length > 1")
    page.click("#settings-open")
    page.get_by_role("tab", name="New chats").click()
    expect(page.locator("#default-system")).to_have_value("Answer in one line.")
    expect(page.locator("#default-max-tokens")).to_have_value("40")


# ---- model names, the title, the header ----------------------------------------------------------

FITS = """() => {
  const select = document.querySelector('#model'), h1 = document.querySelector('h1');
  const probe = document.createElement('span');
  probe.style.cssText = 'position:absolute;visibility:hidden;white-space:nowrap;font:' + getComputedStyle(select).font;
  document.body.append(probe);
  const out = [...select.options].map((o) => {
    probe.textContent = o.textContent;
    return { id: o.value, text: o.textContent, title: o.title, need: probe.offsetWidth };
  });
  probe.remove();
  return { options: out, width: select.clientWidth, title: select.title, h1: [h1.scrollWidth, h1.clientWidth, h1.textContent] };
}"""
ARROW_PX = 28  # the picker's own padding and arrow


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_model_names_fit_and_the_full_id_is_in_the_tooltip(
    browser: Browser, tabs: list[Tab], stateless_runtime: Runtime, size: str
) -> None:
    tab = new_tab(browser, tabs, **(PHONE if size == "phone" else {}))
    page = go(tab, stateless_runtime)
    ids: list[str] = page.eval_on_selector_all("#model option", "os => os.map(o => o.value)")
    for model in ids:
        page.select_option("#model", model)
        found: dict[str, Any] = page.evaluate(FITS)
        option = next(o for o in found["options"] if o["id"] == model)
        assert found["title"] == model
        assert option["title"].startswith(model)
        assert "/" not in option["text"] and "@cf" not in option["text"], option
        assert option["need"] + ARROW_PX <= found["width"], f"{option['text']!r} is cut: {found}"
        scroll, client, title = found["h1"]
        assert (title, scroll <= client) == ("AI chat", True), f"the title is cut: {found['h1']}"
    assert axe_violations(page) == [], f"axe, the model picker, {size}"
    texts = [o["text"] for o in page.evaluate(FITS)["options"]]
    assert texts[0].startswith("Gemma 4 26B"), texts
    if size == "desktop":
        # What each model can do: images, thinking, its context window.
        assert "Gemma 4 26B (images, 256k context)" in texts, texts
        assert "gpt-oss 20B (thinks, 128k context)" in texts, texts
    else:
        assert all("(" not in t for t in texts), texts
    shot(page, f"models-{size}")


# ---- image thumbnails ---------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
def test_an_attached_image_shows_as_a_thumbnail_with_a_remove_button(
    browser: Browser, tabs: list[Tab], stateless_runtime: Runtime, scheme: str
) -> None:
    tab = new_tab(browser, tabs, color_scheme=scheme)
    page = go(tab, stateless_runtime)
    service = page.evaluate("fetch('/api/v1/models').then((r) => r.json())")
    vision = [m for m in service["models"] if service["capabilities"][m]["vision"]]
    page.select_option("#model", vision[0])
    files: list[FilePayload] = [
        {"name": "bands.png", "mimeType": "image/png", "buffer": png(120, 80)},
        {"name": "tall.png", "mimeType": "image/png", "buffer": png(30, 90)},
    ]
    page.set_input_files("#file", files=files)
    thumbs = page.locator("#attachments img")
    expect(thumbs).to_have_count(2)
    for i in range(2):
        box = thumbs.nth(i).bounding_box()
        remove = page.locator("#attachments .remove").nth(i).bounding_box()
        assert box and remove
        assert box["width"] >= 64 and box["height"] >= 64, f"not a thumbnail: {box}"
        assert remove["width"] >= 24 and remove["height"] >= 24, f"a small target: {remove}"
        inside = (
            box["x"] <= remove["x"]
            and remove["x"] + remove["width"] <= box["x"] + box["width"]
            and box["y"] <= remove["y"]
            and remove["y"] + remove["height"] <= box["y"] + box["height"]
        )
        assert inside, f"the remove button is not on its thumbnail: {box} {remove}"
    assert thumbs.first.evaluate("(i) => i.naturalWidth") == 120
    assert axe_violations(page) == [], f"axe, two images attached, {scheme}"
    shot(page, f"thumbnails-{scheme}")
    page.get_by_role("button", name="Remove image: bands.png").click()
    expect(thumbs).to_have_count(1)
    expect(page.locator("#attachments img")).to_have_attribute("alt", "tall.png")
    expect(page.get_by_role("button", name="Remove image: tall.png")).to_be_focused()


# ---- the phone drawer ---------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_phone_drawer_dims_the_page_and_closes_on_a_tap_outside(
    browser: Browser, tabs: list[Tab], stateless_runtime: Runtime, scheme: str
) -> None:
    tab = new_tab(browser, tabs, color_scheme=scheme, **PHONE)
    page = go(tab, stateless_runtime)
    send(page, "[[pace:0]] something to dim")
    answered(page, 1)
    scrim = page.locator("#scrim")
    expect(scrim).to_be_hidden()
    page.click("#menu")
    expect(page.locator("#chats")).to_be_visible()
    expect(page.locator("#search")).to_be_focused()
    expect(scrim).to_be_visible()
    box = scrim.bounding_box()
    assert box and box["width"] >= 380 and box["height"] >= 700, f"the dim covers little: {box}"
    dim = scrim.evaluate("(s) => getComputedStyle(s).backgroundColor")
    assert dim.startswith("rgba(0, 0, 0, 0.") and dim != "rgba(0, 0, 0, 0)", dim
    assert axe_violations(page) == [], f"axe, the drawer open, {scheme}"
    shot(page, f"drawer-{scheme}")
    page.touchscreen.tap(360, 500)  # beside the drawer, over the conversation
    expect(page.locator("#chats")).to_be_hidden()
    expect(scrim).to_be_hidden()
    expect(page.locator("#menu")).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#menu")).to_be_focused()
    page.click("#menu")
    page.keyboard.press("Escape")
    expect(page.locator("#chats")).to_be_hidden()


# ---- shortcuts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_new_chat_shortcut_listed_in_the_shortcuts_help(
    browser: Browser, tabs: list[Tab], stateless_runtime: Runtime, scheme: str
) -> None:
    tab = new_tab(browser, tabs, color_scheme=scheme)
    page = go(tab, stateless_runtime)
    send(page, "[[pace:0]] the old chat")
    answered(page, 1)
    page.locator("#prompt").press("Control+Shift+O")
    expect(page.locator("#empty")).to_be_visible()
    expect(page.locator("#prompt")).to_be_focused()
    expect(page.locator("#chat-list li[aria-current=true] .open")).to_have_text("New chat")
    expect(page.locator("#clear")).to_have_attribute("aria-keyshortcuts", "Control+Shift+O")
    page.locator("#prompt").press("Control+/")
    help = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(help).to_be_visible()
    expect(help.get_by_role("row", name="Ctrl + Shift + O New chat")).to_be_visible()
    assert axe_violations(page) == [], f"axe, the shortcuts, {scheme}"
    shot(page, f"shortcuts-{scheme}")
    page.keyboard.press("Escape")
    expect(help).to_be_hidden()
    expect(page.locator("#prompt")).to_be_focused()
    page.get_by_role("button", name="Keyboard shortcuts").click()
    expect(help).to_be_visible()
    help.get_by_role("button", name="Close").click()
    expect(help).to_be_hidden()


# ---- the README's screenshot --------------------------------------------------------------------


def test_the_readme_screenshot(browser: Browser, tabs: list[Tab], runtime: Runtime) -> None:
    """The page as a newcomer meets it: a conversation with a reasoning model's table. Written to
    docs/screenshot.png with UPDATE_SCREENSHOT=1; the PNG in the repository must exist."""
    tab = new_tab(browser, tabs, viewport={"width": 1100, "height": 860}, color_scheme="light")
    page = go(tab, runtime)
    expect(page.locator("#layout")).to_have_attribute("data-chats", "server", timeout=20000)
    send(page, "Plan a weekend in Lisbon")
    answered(page, 1)
    page.locator("#prompt").press("Control+Shift+O")
    ids = page.eval_on_selector_all("#model option", "os => os.map(o => o.value)")
    page.select_option("#model", next(v for v in ids if "gpt-oss" in v))
    send(page, "What can this chat do?")
    answered(page, 1)
    send(page, "Show it as a table [[think:12]] [[table:4]]")
    answered(page, 2)
    page.locator("#prompt").blur()
    page.evaluate("document.querySelector('#log').scrollTop = 1e9")
    expect(page.locator("#jump")).not_to_have_class("jump shown")
    shot(page, "readme")
    target = ROOT / "docs" / "screenshot.png"
    if os.environ.get("UPDATE_SCREENSHOT") == "1":
        page.screenshot(path=str(target))
    # The same conversation in the dark scheme, and on a phone (docs/screenshot-*.png).
    page.emulate_media(color_scheme="dark")
    page.evaluate("document.querySelector('#log').scrollTop = 1e9")
    shot(page, "readme-dark")
    if os.environ.get("UPDATE_SCREENSHOT") == "1":
        page.screenshot(path=str(ROOT / "docs" / "screenshot-dark.png"))
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 390, "height": 844})
    if page.locator("#menu").get_attribute("aria-expanded") == "true":
        page.click("#scrim", position={"x": 370, "y": 400})  # the drawer a phone opens over it
    page.evaluate("document.activeElement.blur()")
    page.evaluate("document.querySelector('#log').scrollTop = 1e9")
    shot(page, "readme-phone")
    if os.environ.get("UPDATE_SCREENSHOT") == "1":
        page.screenshot(path=str(ROOT / "docs" / "screenshot-phone.png"))
    for name in ("screenshot.png", "screenshot-dark.png", "screenshot-phone.png"):
        target = ROOT / "docs" / name
        assert target.exists(), f"docs/{name} is missing: UPDATE_SCREENSHOT=1 writes it"
        assert base64.b64encode(target.read_bytes()[:8]) == base64.b64encode(b"\x89PNG\r\n\x1a\n")
