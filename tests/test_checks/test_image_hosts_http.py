"""Issue 47 on workerd: image URLs whose host name says it points inside a network are refused
like their addresses, on the chat doors, before any model call (no DNS lookup is made)."""

from __future__ import annotations

import pytest
from conftest import Runtime

pytestmark = pytest.mark.runtime

GEMMA = "@cf/google/gemma-4-26b-a4b-it"  # a vision model of wrangler.toml's AI_MODELS
HOSTS = [
    "metadata.google.internal/computeMetadata/v1/",
    "127.0.0.1.nip.io/a.png",
    "10-0-0-1.nip.io/a.png",
    "169.254.169.254.sslip.io/latest/meta-data",
    "api.localhost/a.png",
    "lvh.me/a.png",
]


def image_message(url: str) -> list[dict[str, object]]:
    parts = [
        {"type": "text", "text": "what is it?"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    return [{"role": "user", "content": parts}]


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/v1/chat"])
def test_an_image_url_naming_an_inside_host_is_a_400(
    runtime: Runtime, path: str, host: str
) -> None:
    before = len(runtime.calls())
    body = {"model": GEMMA, "messages": image_message(f"https://{host}")}
    with runtime.client() as http:
        response = http.post(path, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    if isinstance(error, dict):  # the OpenAI shape
        assert (error["code"], error["param"]) == (
            "invalid_field",
            "messages[0].content[1].image_url.url",
        ), error
        message = error["message"]
    else:
        assert error == "invalid_field", response.text
        message = response.json()["message"]
    assert "must not point to a loopback, private or link-local address" in message, message
    assert len(runtime.calls()) == before, "the request reached the model"


def test_a_public_name_still_reaches_the_model(runtime: Runtime) -> None:
    body = {"model": GEMMA, "messages": image_message("https://8.8.8.8.nip.io/a.png")}
    with runtime.client() as http:
        response = http.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
