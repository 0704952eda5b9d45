"""HEAD and OPTIONS on every route of the route table (health and local stats included), on workerd."""

from __future__ import annotations

import httpx
import pytest
from conftest import Runtime

from routes import TABLE

pytestmark = pytest.mark.runtime

MODEL = "@cf/openai/gpt-oss-20b"
# Every path the table serves (a prefix route with a model id after it).
# A pattern route with a conversation's or a stored response's id in it (one that does not exist:
# 404 on GET and HEAD alike).
CONVERSATION = "0" * 32
PATHS = {
    **{path: route.allow for path, route in TABLE.routes.items()},
    **{prefix + MODEL: route.allow for prefix, route in TABLE.prefix_routes},
    **{
        pattern.pattern.replace("[0-9a-f]{32}", CONVERSATION): route.allow
        for pattern, route in TABLE.pattern_routes
    },
}


def test_the_table_is_what_these_tests_cover() -> None:
    conversation = "/api/v1/conversations/" + CONVERSATION
    assert sorted(PATHS) == sorted(
        [
            "/api/v1/chat",
            "/api/v1/models",
            "/v1/chat/completions",
            "/v1/models",
            "/v1/models/" + MODEL,
            "/api/v1/health",
            "/__local/stats",
            "/api/v1/ui-chat",
            "/api/v1/usage",
            "/v1/responses",
            "/v1/completions",
            "/v1/embeddings",
            "/api/v1/conversations",
            conversation,
            conversation + "/messages",
            conversation + "/stream",
            conversation + "/stop",
            conversation + "/branches",
            "/api/v1/files/markdown",
            "/v1/responses/resp_" + CONVERSATION,
            "/v1/responses/resp_" + CONVERSATION + "/input_items",
        ]
    )


@pytest.mark.parametrize(
    "path",
    [p for p, allow in PATHS.items() if "GET" in allow] + ["/v1/models/nope", "/api/v1/nope"],
)
def test_head_has_the_get_answers_headers_and_no_body(runtime: Runtime, path: str) -> None:
    # Both compressed by the runtime (what httpx asks for) and not: the same headers, but for
    # the body's length and framing, which a HEAD answer may leave out.
    for encoding in ("identity", "gzip, deflate"):
        with runtime.client(headers={"accept-encoding": encoding}) as client:
            get = client.get(path)
            head = client.head(path)
        assert head.status_code == get.status_code
        assert head.content == b"" and get.content
        assert headers_of(head) == headers_of(get), encoding


def headers_of(response: httpx.Response) -> dict[str, str]:
    return {
        k: v
        for k, v in response.headers.items()
        if k not in ("x-request-id", "content-length", "transfer-encoding")
    }


@pytest.mark.parametrize("path", [p for p, allow in PATHS.items() if "GET" not in allow])
def test_head_without_a_get_is_405_with_allow(runtime: Runtime, path: str) -> None:
    with runtime.client() as client:
        head = client.head(path)
    assert (head.status_code, head.content, head.headers["allow"]) == (405, b"", PATHS[path])


@pytest.mark.parametrize("path", list(PATHS))
def test_options_is_204_with_allow(runtime: Runtime, path: str) -> None:
    with runtime.client() as client:
        plain = client.options(path)
        same_origin = client.options(
            path, headers={"origin": runtime.url, "access-control-request-method": "POST"}
        )
    for response in (plain, same_origin):
        assert (response.status_code, response.content) == (204, b"")
        assert response.headers["allow"] == PATHS[path]
        assert response.headers["x-content-type-options"] == "nosniff"
        assert not [name for name in response.headers if name.startswith("access-control-")]


def test_a_cross_origin_preflight_from_an_origin_not_allowed_is_403(runtime: Runtime) -> None:
    with runtime.client() as client:
        response = client.options(
            "/api/v1/chat",
            headers={
                "origin": "https://elsewhere.example",
                "access-control-request-method": "POST",
            },
        )
    assert response.status_code == 403 and response.json()["error"] == "origin_not_allowed"


def test_head_on_the_page_is_still_the_asset_routers(runtime: Runtime) -> None:
    response = httpx.head(runtime.url + "/", timeout=10)
    assert response.status_code == 200 and response.content == b""
