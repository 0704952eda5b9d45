"""POST /api/v1/files/markdown on workerd: a document through the AI binding's own toMarkdown
(workerd's ToMarkdownService, the built-in model's stand-in conversion), and every refusal."""

from __future__ import annotations

import httpx
import pytest
from conftest import ROOT, Runtime

pytestmark = pytest.mark.runtime

URL = "/api/v1/files/markdown"
PDF = (ROOT / "tests" / "fixtures" / "report.pdf").read_bytes()


def post(rt: Runtime, body: bytes, mime: str, name: str = "report.pdf") -> httpx.Response:
    headers = {"content-type": mime, "x-file-name": name}
    return httpx.post(rt.url + URL, content=body, headers=headers, timeout=30)


def test_a_pdf_comes_back_as_markdown(runtime: Runtime) -> None:
    r = post(runtime, PDF, "application/pdf", "Q3%20report.pdf")
    assert r.status_code == 200, r.text
    assert r.json() == {
        "name": "Q3 report.pdf",
        "type": "application/pdf",
        "markdown": "Quarterly report\n\nRevenue grew by 12 percent in the (third) quarter.",
        "tokens": 11,  # the stand-in counts words
    }
    call = runtime.last_call()
    assert call["model"] == "toMarkdown", call
    assert call["inputs"]["files"] == [
        {"name": "Q3 report.pdf", "mimeType": "application/pdf", "bytes": len(PDF)}
    ]


def test_what_cannot_be_converted_is_refused_in_words(runtime: Runtime) -> None:
    cases = [
        (PDF, "image/png", 415, "unsupported_media_type"),
        (b"", "application/pdf", 400, "invalid_field"),
        (b"%PDX not a pdf", "application/pdf", 422, "conversion_failed"),
        (b"x" * (10 * 1024 * 1024 + 1), "application/pdf", 413, "body_too_large"),
    ]
    for body, mime, status, code in cases:
        r = post(runtime, body, mime)
        assert (r.status_code, r.json()["error"]) == (status, code), (mime, len(body), r.text)
    said = post(runtime, b"%PDX", "application/pdf").json()["message"]
    assert said == "report.pdf: Workers AI could not convert it: The file is not a valid PDF.", said
