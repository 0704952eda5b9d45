"""Files of text on the page (issue 45): a text, Markdown, code, CSV or JSON file is read in the
browser, shown as a chip, kept with its message (in the durable conversation, so a reload shows
it again) and sent to the model as text with the file's name; too large a file, a binary one and
a PDF are refused in words."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import ROOT, Runtime
from playwright.sync_api import Browser, BrowserContext, FilePayload, Page, expect

from browser.conftest import BROWSER_MARKS
from browser.test_page_browser import answered, axe_violations, send, shot
from browser.test_page_durable import model_calls_for

pytestmark = BROWSER_MARKS
CSV = "city,people\nLisbon,545000\nPorto,232000\n"


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
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


def attach(page: Page, name: str, data: bytes, mime: str) -> None:
    payload: FilePayload = {"name": name, "mimeType": mime, "buffer": data}
    page.set_input_files("#text-file", files=[payload])


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_text_file_reaches_the_model_as_text_with_its_name_and_stays_after_a_reload(
    context: BrowserContext, runtime: Runtime, scheme: str
) -> None:
    page = open_tab(context, runtime)
    page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
    attach(page, "cities.csv", CSV.encode(), "text/csv")
    chip = page.locator("#attachments .file-chip")
    expect(chip).to_contain_text("cities.csv")
    expect(chip.get_by_role("button", name="Remove file: cities.csv")).to_be_visible()
    assert axe_violations(page) == [], f"axe, a file in the composer, {scheme}"
    shot(page, f"file-composer-{scheme}")
    question = f"[[pace:0]] which city is larger? ({scheme})"
    send(page, question)
    answered(page, 1)
    sent = f'<file name="cities.csv">\n{CSV}\n</file>\n\n{question}'
    [call] = model_calls_for(runtime, sent)
    assert call["inputs"]["messages"][-1] == {"role": "user", "content": sent}
    user = page.locator(".msg.user").last
    expect(user.locator(".file-chip")).to_contain_text("cities.csv")
    expect(user.locator(".text")).to_have_text(question)
    shot(page, f"file-sent-{scheme}")
    page.reload()
    expect(page.locator("#layout")).to_have_attribute("data-chats", "server", timeout=20000)
    answered(page, 1)
    user = page.locator(".msg.user").last
    expect(user.locator(".file-chip")).to_contain_text("cities.csv")
    expect(user.locator(".text")).to_have_text(question)
    assert axe_violations(page) == [], f"axe, a message with a file read back, {scheme}"


def test_too_large_binary_and_pdf_files_are_refused_in_words(
    context: BrowserContext, runtime: Runtime
) -> None:
    page = open_tab(context, runtime)
    error = page.locator("#composer-error")
    attach(page, "huge.txt", b"x" * (512 * 1024 + 1), "text/plain")
    expect(error).to_have_text(
        "“huge.txt” is 0.5 MB; a file of text can be up to 512 KB. Attach a part of it."
    )
    attach(page, "blob.json", b"{\x00}", "application/json")
    expect(error).to_contain_text("“blob.json” is not text (it holds binary data)")
    attach(page, "archive.zip", b"PK\x03\x04", "application/zip")
    expect(error).to_contain_text("“archive.zip” is neither an image nor a file of text")
    attach(page, "broken.pdf", b"%PDX-1.4\n", "application/pdf")
    expect(error).to_contain_text(
        "“broken.pdf” could not be read: broken.pdf: Workers AI could not"
    )
    expect(page.locator("#attachments .file-chip")).to_have_count(0)
    assert axe_violations(page) == [], "axe, a file refused"


def test_a_pdf_is_converted_by_the_ai_binding_and_reaches_the_model_as_text(
    context: BrowserContext, runtime: Runtime
) -> None:
    page = open_tab(context, runtime)
    pdf = (ROOT / "tests" / "fixtures" / "report.pdf").read_bytes()
    attach(page, "report.pdf", pdf, "application/pdf")
    expect(page.locator("#attachments .file-chip:not(.reading)")).to_contain_text("report.pdf")
    send(page, "[[pace:0]] summarise the report")
    answered(page, 1)
    text = "Quarterly report\n\nRevenue grew by 12 percent in the (third) quarter."
    sent = f'<file name="report.pdf">\n{text}\n</file>\n\n[[pace:0]] summarise the report'
    assert model_calls_for(runtime, sent), "the model did not receive the PDF's text"
    converted = [c for c in runtime.calls() if c.get("model") == "toMarkdown"]
    assert converted[-1]["inputs"]["files"] == [
        {"name": "report.pdf", "mimeType": "application/pdf", "bytes": len(pdf)}
    ]
    expect(page.locator(".msg.user .file-chip")).to_contain_text("report.pdf")
    shot(page, "file-pdf")


def test_search_finds_a_word_said_in_an_older_chat(
    context: BrowserContext, runtime: Runtime
) -> None:
    page = open_tab(context, runtime)
    send(page, "[[pace:0]] tell me about the aubergine harvest")
    answered(page, 1)
    page.click("#clear")
    send(page, "[[pace:0]] something else entirely")
    answered(page, 1)
    page.reload()  # the chats are read back from their conversations
    expect(page.locator("#layout")).to_have_attribute("data-chats", "server", timeout=20000)
    expect(page.locator("#chat-list .open")).to_have_count(2)
    page.fill("#search", "aubergine")
    expect(page.locator("#chat-list .open")).to_have_text(["tell me about the aubergine harvest"])
    # A word of an answer only (the built-in model says which turn it wrote).
    page.fill("#search", "offline model")
    expect(page.locator("#chat-list .open")).to_have_count(2)
    page.fill("#search", "no such word anywhere")
    expect(page.locator("#chat-list .none")).to_have_text("No chat matches")
