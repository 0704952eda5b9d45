import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

import openai_compat  # noqa: F401  (adds the /v1 routes)
from app import UpstreamFailure, handle
from routes import TABLE
from fakes import FakeModel, frames
from web import Relayed, WebRequest, WebResponse

URL = "https://chat.example.dev"


async def body_of(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def request(method: str, path: str, body: bytes = b"", **headers: Any) -> WebRequest:
    return WebRequest(
        method=method,
        url=URL + path,
        path=path,
        headers={k.replace("_", "-"): v for k, v in headers.items()},
        body=body_of(body),
    )


def call(req: WebRequest, env: dict[str, str] | None = None, model: FakeModel | None = None) -> WebResponse:
    return asyncio.run(handle(req, (env or {}).get, model or FakeModel(frames("hi")), TABLE))


def error_of(response: WebResponse) -> tuple[int, str]:
    assert isinstance(response.body, bytes)
    return response.status, json.loads(response.body)["error"]


CHAT = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()


def test_unknown_route_is_404() -> None:
    assert error_of(call(request("GET", "/api/v2/nope"))) == (404, "not_found")


def test_wrong_method_is_405_with_allow() -> None:
    response = call(request("GET", "/api/v1/chat"))
    assert error_of(response) == (405, "method_not_allowed")
    assert ("allow", "POST, OPTIONS") in response.headers


def test_kill_switch_answers_before_the_body_is_parsed() -> None:
    model = FakeModel(frames("hi"))
    for path, method in [("/api/v1/chat", "POST"), ("/api/v1/models", "GET")]:
        response = call(request(method, path, b"{not json"), {"AI_CHAT_DISABLED": "1"}, model)
        assert error_of(response) == (503, "ai_unavailable")
    assert model.calls == []
    assert call(request("GET", "/api/v1/models"), {"AI_CHAT_DISABLED": "yes"}).status == 200


def test_upstream_failure_before_streaming_is_502_without_detail() -> None:
    model = FakeModel(UpstreamFailure("InferenceUpstreamError: secret internal detail"))
    response = call(request("POST", "/api/v1/chat", CHAT, content_type="application/json"), model=model)
    assert error_of(response) == (502, "upstream_error")
    assert isinstance(response.body, bytes) and b"secret" not in response.body


def test_misconfiguration_is_500() -> None:
    response = call(request("GET", "/api/v1/models"), {"AI_MODELS": "a", "AI_DEFAULT_MODEL": "b"})
    assert error_of(response) == (500, "server_misconfigured")


def test_models_lists_allow_list_and_default() -> None:
    response = call(request("GET", "/api/v1/models"), {"AI_MODELS": "m1,m2", "AI_DEFAULT_MODEL": "m2"})
    assert response.status == 200
    assert response.body == b'{"models": ["m1", "m2"], "default": "m2", "version": "0.2.0"}'


def test_chat_streams_with_sse_headers_and_passes_only_known_fields() -> None:
    model = FakeModel(frames("hi"))
    body = json.dumps({"messages": [{"role": "user", "content": "x"}], "temperature": 0.5}).encode()
    response = call(request("POST", "/api/v1/chat", body, content_type="application/json"), {"AI_MAX_TOKENS_DEFAULT": "77"}, model)
    assert response.status == 200
    assert dict(response.headers) == {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        "x-accel-buffering": "no",
    }
    assert model.calls == [
        ("@cf/meta/llama-3.1-8b-instruct", {"messages": [{"role": "user", "content": "x"}], "stream": True, "max_tokens": 77, "temperature": 0.5})
    ]
    assert isinstance(response.body, Relayed)


@pytest.mark.parametrize(
    ("allowed", "origin", "expected"),
    [
        ("", URL, ()),
        ("", None, ()),
        ("https://app.example", "https://app.example", (("access-control-allow-origin", "https://app.example"), ("vary", "Origin"))),
        ("*", "https://any.example", (("access-control-allow-origin", "*"),)),
    ],
)
def test_cors_allowed(allowed: str, origin: str | None, expected: tuple[tuple[str, str], ...]) -> None:
    headers: dict[str, Any] = {"origin": origin} if origin else {}
    response = call(request("GET", "/api/v1/models", **headers), {"CORS_ALLOWED_ORIGINS": allowed})
    assert response.status == 200
    assert response.headers[2:] == expected


def test_cors_refused_origin_is_403_and_model_not_called() -> None:
    model = FakeModel(frames("hi"))
    req = request("POST", "/api/v1/chat", CHAT, content_type="application/json", origin="https://evil.example")
    assert error_of(call(req, {"CORS_ALLOWED_ORIGINS": "https://app.example"}, model)) == (403, "origin_not_allowed")
    assert model.calls == []


def test_preflight() -> None:
    req = request(
        "OPTIONS",
        "/api/v1/chat",
        origin="https://app.example",
        access_control_request_method="POST",
        access_control_request_headers="content-type",
    )
    response = call(req, {"CORS_ALLOWED_ORIGINS": "https://app.example"})
    assert response.status == 204
    headers = dict(response.headers)
    assert headers["access-control-allow-origin"] == "https://app.example"
    assert headers["access-control-allow-methods"] == "POST, OPTIONS"
    assert headers["access-control-allow-headers"] == "content-type"


OPENAI_CHAT = json.dumps({"messages": [{"role": "user", "content": "hi"}], "model": "m1"}).encode()


@pytest.mark.parametrize(
    ("thrown", "status", "code", "openai_type", "retry"),
    [
        ("InferenceUpstreamError: 3040: Capacity temporarily exceeded, please try again.", 429, "upstream_busy", "rate_limit_error", True),
        ("InferenceUpstreamError: 3036: daily free allocation used up", 429, "upstream_quota_exceeded", "rate_limit_error", True),
        ("InferenceUpstreamError: 4006: daily free allocation used up", 429, "upstream_quota_exceeded", "rate_limit_error", True),
        (
            "InferenceUpstreamError: 5021: The estimated number of input and maximum output tokens (8810) exceeded this model context window limit (8192).",
            400,
            "context_length_exceeded",
            "invalid_request_error",
            False,
        ),
        ("InferenceUpstreamError: 5006: bad input", 400, "upstream_rejected_input", "invalid_request_error", False),
        ("InferenceUpstreamError: 5007: No such model", 502, "model_unavailable", "server_error", False),
        ("AiError: 5028: This model was deprecated on 2026-05-30. Please use an alternative model.", 502, "model_unavailable", "server_error", False),
        ("InferenceUpstreamError: 1234: something else", 502, "upstream_error", "server_error", False),
    ],
)
def test_upstream_failures_map_by_code_in_both_apis(thrown: str, status: int, code: str, openai_type: str, retry: bool) -> None:
    env = {"AI_MODELS": "m1"}
    app = call(request("POST", "/api/v1/chat", CHAT, content_type="application/json"), env, FakeModel(UpstreamFailure(thrown)))
    assert error_of(app) == (status, code)
    v1 = call(request("POST", "/v1/chat/completions", OPENAI_CHAT, content_type="application/json"), env, FakeModel(UpstreamFailure(thrown)))
    assert isinstance(v1.body, bytes)
    error = json.loads(v1.body)["error"]
    assert (v1.status, error["code"], error["type"]) == (status, code, openai_type)
    for response in (app, v1):
        assert ("retry-after" in dict(response.headers)) is retry
        assert isinstance(response.body, bytes) and thrown.encode() not in response.body
