"""Issue 21 on the page, in headless Chromium against the local Worker: images for a model
whose capabilities say vision, and an answer's thinking sent back as `reasoning`. Which tests
run follows what the Worker under test announces: nothing here stands in for the server."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from conftest import Runtime
from playwright.sync_api import FilePayload, Page, expect

from browser.conftest import BROWSER_MARKS
from browser.test_page_browser import (  # noqa: F401 (fixtures)
    Opened,
    answered,
    axe_violations,
    opened,
    reasoning_model,
    runtime,
    send,
    shot,
)

pytestmark = BROWSER_MARKS

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


def models(runtime: Runtime) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(runtime.url + "/api/v1/models", timeout=10).json()
    return body


@pytest.fixture
def new_service(runtime: Runtime) -> dict[str, Any]:
    body = models(runtime)
    if not isinstance(body.get("capabilities"), dict):
        pytest.skip(
            "the Worker under test does not announce `capabilities` in /api/v1/models yet (issue 21's server change)"
        )
    return body


def second_turn_after_thinking(opened: Opened) -> dict[str, Any]:
    page = opened.page
    page.select_option("#model", reasoning_model(page))
    send(page, "[[pace:0]] [[think:3]] first")
    answered(page, 1)
    send(page, "[[pace:0]] second")
    answered(page, 2)
    return opened.chat_bodies[-1]["messages"][1]  # type: ignore[no-any-return]


def attach_png(page: Page, name: str = "dot.png", data: bytes = PNG) -> None:
    payload: FilePayload = {"name": name, "mimeType": "image/png", "buffer": data}
    page.set_input_files("#file", files=[payload])


def vision_model(service: dict[str, Any], vision: bool) -> str:
    found = [
        m for m in service["models"] if service["capabilities"].get(m, {}).get("vision") is vision
    ]
    if not found:
        pytest.skip(f"no model with vision={vision} in {service['models']}")
    return str(found[0])


def test_the_thinking_goes_back_as_reasoning(opened: Opened, new_service: dict[str, Any]) -> None:
    message = second_turn_after_thinking(opened)
    assert message["role"] == "assistant" and message["reasoning"] == "Let me think"


def test_an_image_is_attached_checked_sent_shown_and_kept(
    opened: Opened, new_service: dict[str, Any]
) -> None:
    page = opened.page
    page.select_option("#model", vision_model(new_service, True))
    expect(page.get_by_role("button", name="Attach image")).to_have_attribute(
        "aria-disabled", "false"
    )
    attach_png(page)
    thumb = page.locator("#attachments img")
    expect(thumb).to_have_attribute("src", PNG_URL)
    page.get_by_role("button", name="Remove image: dot.png").click()
    expect(page.locator("#attachments img")).to_have_count(0)
    # Pasted, as from a screenshot tool.
    page.locator("#prompt").evaluate(
        """(box, b64) => {
          const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
          const data = new DataTransfer();
          data.items.add(new File([bytes], 'pasted.png', { type: 'image/png' }));
          box.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
        }""",
        base64.b64encode(PNG).decode(),
    )
    expect(thumb).to_have_attribute("src", PNG_URL)
    assert axe_violations(page) == [], "an image attached"
    send(page, "[[pace:0]] what is in it")
    answered(page, 1)
    assert opened.chat_bodies[-1]["messages"][-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "[[pace:0]] what is in it"},
            {"type": "image_url", "image_url": {"url": PNG_URL}},
        ],
    }
    shown = page.locator(".msg.user img")
    expect(shown).to_have_attribute("src", PNG_URL)
    expect(shown).to_have_attribute("alt", "Attached image: pasted.png")
    shot(page, "images-sent")
    assert axe_violations(page) == [], "an image in the transcript"
    page.reload()
    expect(page.locator(".msg.user img")).to_have_attribute("src", PNG_URL)


def test_too_big_an_image_and_a_text_only_model_are_refused_in_words(
    opened: Opened, new_service: dict[str, Any]
) -> None:
    page = opened.page
    page.select_option("#model", vision_model(new_service, True))
    limit = int(new_service["limits"]["max_image_bytes"])
    attach_png(page, "big.png", PNG + b"\0" * (limit + 1 - len(PNG)))
    expect(page.locator("#composer-error")).to_contain_text("“big.png” is ")
    expect(page.locator("#composer-error")).to_contain_text("the service takes images up to")
    expect(page.locator("#attachments img")).to_have_count(0)
    text_only = vision_model(new_service, False)
    page.select_option("#model", text_only)
    attach = page.get_by_role("button", name="Attach image")
    expect(attach).to_have_attribute("aria-disabled", "true")
    name = page.evaluate(
        f"import('/chat-core.js').then((m) => m.modelLabel({json.dumps(text_only)}))"
    )
    reason = f"{name} reads text only: choose a model that reads images to attach one."
    expect(page.locator("#attach-note")).to_have_text(reason)
    attach.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#composer-error")).to_have_text(reason)
