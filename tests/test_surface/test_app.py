import asyncio
import json
from typing import Any

import pytest
from fakes import FakeLimiter, FakeModel, frames
from host_app import URL, call, request

from routes import TABLE
from streaming.relay import Relayed
from surface.policy import handle
from surface.web import API_HEADERS, WebResponse
from workers_ai.service import UpstreamFailure


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
    response = call(
        request("POST", "/api/v1/chat", CHAT, content_type="application/json"), model=model
    )
    assert error_of(response) == (502, "upstream_error")
    assert isinstance(response.body, bytes) and b"secret" not in response.body


def test_misconfiguration_is_500_naming_the_var_to_fix_not_its_value() -> None:
    response = call(
        request("GET", "/api/v1/models"), {"AI_MODELS": "a", "AI_DEFAULT_MODEL": "secret-b"}
    )
    assert error_of(response) == (500, "server_misconfigured")
    assert isinstance(response.body, bytes)
    assert json.loads(response.body)["message"] == (
        "The service is misconfigured: its owner has to fix the setting AI_DEFAULT_MODEL."
    )
    assert b"secret-b" not in response.body


def test_models_lists_allow_list_and_default() -> None:
    env = {"AI_MODELS": "m1,@cf/openai/gpt-oss-20b", "AI_DEFAULT_MODEL": "m1", "MAX_MESSAGES": "7"}
    response = call(request("GET", "/api/v1/models"), env)
    assert response.status == 200
    assert response.body == (
        b'{"models": ["m1", "@cf/openai/gpt-oss-20b"], "default": "m1", "reasoning": ["@cf/openai/gpt-oss-20b"], '
        b'"capabilities": {"m1": {"context_window": null, "vision": false, "tools": false, "reasoning": false, "paid_plan": false, '
        b'"reasoning_control": {"kind": "none", "can_turn_off": false}}, '
        b'"@cf/openai/gpt-oss-20b": {"context_window": 128000, "vision": false, "tools": true, "reasoning": true, "paid_plan": false, '
        b'"reasoning_control": {"kind": "effort", "can_turn_off": false, "field": "reasoning_effort", "levels": ["low", "medium", "high"], '
        b'"default": "medium", "note": "cannot be turned off: reasoning_effort none sends its lowest level"}}}, '
        b'"thinking": "off", '
        b'"limits": {"max_messages": 7, "max_message_chars": 1000000, "max_body_bytes": 4962304, "max_images": 8, '
        b'"max_image_bytes": 3145728, "max_tokens_limit": 4096, "default_max_tokens": 1024}, "conversations": false, '
        b'"page": {"title": "AI chat", "system_prompt": "", "suggestions": []}, '
        b'"version": "0.2.0"}'
    )
    owned = {**env, "CHAT_TITLE": "Desk", "SYSTEM_PROMPT": "Be kind.", "CHAT_SUGGESTIONS": "a|b"}
    body = call(request("GET", "/api/v1/models"), owned).body
    assert isinstance(body, bytes)
    page = json.loads(body)["page"]
    assert page == {"title": "Desk", "system_prompt": "Be kind.", "suggestions": ["a", "b"]}


class NoConversations:
    """A CONVERSATIONS binding that is there, for what only asks whether it is."""

    async def call(
        self,
        id: str,
        op: str,
        payload: dict[str, Any] | None = None,
        *,
        after: str | None = None,
        owner: str | None = None,
    ) -> WebResponse:
        raise AssertionError(f"no conversation call expected, got {op} {id}")


class RecordingConversations:
    """A CONVERSATIONS binding that records each call and answers 201 with the id."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any] | None]] = []

    async def call(
        self,
        id: str,
        op: str,
        payload: dict[str, Any] | None = None,
        *,
        after: str | None = None,
        owner: str | None = None,
    ) -> WebResponse:
        self.calls.append((op, payload))
        return WebResponse(status=201, headers=API_HEADERS, body=json.dumps({"id": id}).encode())


def create_conversation(body: bytes, **headers: Any) -> tuple[WebResponse, RecordingConversations]:
    conversations = RecordingConversations()
    response = asyncio.run(
        handle(
            request("POST", "/api/v1/conversations", body, **headers),
            lambda _: None,
            FakeModel(frames("hi")),
            TABLE,
            limiter=FakeLimiter(),
            conversations=conversations,
        )
    )
    return response, conversations


@pytest.mark.parametrize(
    "body",
    [b"", b"{}", b'{"model": "@cf/google/gemma-4-26b-a4b-it"}', b'{"messages": []}'],
)
def test_a_conversation_is_created_empty_from_no_body_or_no_messages(body: bytes) -> None:
    """Clients that create a conversation first send {} or {"model"} (issue 34): 201."""
    response, conversations = create_conversation(body, content_type="application/json")
    assert response.status == 201, response.body
    assert conversations.calls == [("create", None)]


@pytest.mark.parametrize(
    ("body", "error", "message"),
    [
        (b'{"model": "nope"}', "unknown_model", "model: 'nope' is not available"),
        (b'{"model": 1}', "invalid_field", "model: must be a string"),
        (b'{"x": 1}', "unknown_field", "x: unknown field; allowed fields are messages, model"),
        (b'{"messages": "hi"}', "invalid_field", "messages"),
    ],
)
def test_a_conversation_create_still_checks_what_it_is_sent(
    body: bytes, error: str, message: str
) -> None:
    response, conversations = create_conversation(body, content_type="application/json")
    assert isinstance(response.body, bytes)
    got = json.loads(response.body)
    assert (response.status, got["error"]) == (400, error), got
    assert got["message"].startswith(message), got
    assert conversations.calls == []


def test_models_says_whether_durable_conversations_are_there() -> None:
    response = asyncio.run(
        handle(
            request("GET", "/api/v1/models"),
            lambda _: None,
            FakeModel(frames("hi")),
            TABLE,
            limiter=FakeLimiter(),
            conversations=NoConversations(),
        )
    )
    assert isinstance(response.body, bytes)
    assert json.loads(response.body)["conversations"] is True


def test_chat_streams_with_sse_headers_and_passes_only_known_fields() -> None:
    model = FakeModel(frames("hi"))
    body = json.dumps({"messages": [{"role": "user", "content": "x"}], "temperature": 0.5}).encode()
    response = call(
        request("POST", "/api/v1/chat", body, content_type="application/json"),
        {"AI_MAX_TOKENS_DEFAULT": "77"},
        model,
    )
    assert response.status == 200
    assert dict(response.headers) == {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        "x-accel-buffering": "no",
        "x-content-type-options": "nosniff",
        "vary": "Origin",
    }
    assert model.calls == [
        (
            "@cf/google/gemma-4-26b-a4b-it",
            {
                "messages": [{"role": "user", "content": "x"}],
                "stream": True,
                "max_tokens": 77,
                "temperature": 0.5,
                # AI_THINKING unset is off: gemma-4 thinks unless its template is told not to.
                "chat_template_kwargs": {"enable_thinking": False},
            },
        )
    ]
    assert isinstance(response.body, Relayed)


@pytest.mark.parametrize(
    ("allowed", "origin", "expected"),
    [
        ("", URL, ()),
        ("", None, ()),
        (
            "https://app.example",
            "https://app.example",
            (("access-control-allow-origin", "https://app.example"),),
        ),
        ("*", "https://any.example", (("access-control-allow-origin", "*"),)),
    ],
)
def test_cors_allowed(
    allowed: str, origin: str | None, expected: tuple[tuple[str, str], ...]
) -> None:
    headers: dict[str, Any] = {"origin": origin} if origin else {}
    response = call(request("GET", "/api/v1/models", **headers), {"CORS_ALLOWED_ORIGINS": allowed})
    assert response.status == 200
    assert response.headers[2:] == expected + API_HEADERS


def test_cors_refused_origin_is_403_and_model_not_called() -> None:
    model = FakeModel(frames("hi"))
    req = request(
        "POST", "/api/v1/chat", CHAT, content_type="application/json", origin="https://evil.example"
    )
    assert error_of(call(req, {"CORS_ALLOWED_ORIGINS": "https://app.example"}, model)) == (
        403,
        "origin_not_allowed",
    )
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


def test_options_without_cors_is_204_with_allow_only() -> None:
    for path, allow in [
        ("/api/v1/chat", "POST, OPTIONS"),
        ("/api/v1/models", "GET, HEAD, OPTIONS"),
        ("/v1/models/m1", "GET, HEAD, OPTIONS"),
    ]:
        for headers in (
            {},
            {"origin": URL, "access_control_request_method": "GET"},
            {"origin": "https://app.example"},
        ):
            response = call(
                request("OPTIONS", path, b"", **headers),
                {"CORS_ALLOWED_ORIGINS": "https://app.example"},
            )
            assert (response.status, response.body) == (204, b""), (path, headers)
            assert [
                name for name, _ in response.headers if name.startswith("access-control-")
            ] == [], (path, headers)
            assert ("allow", allow) in response.headers


GET_ROUTES = ["/api/v1/models", "/v1/models", "/v1/models/m1", "/v1/models/nope"]


@pytest.mark.parametrize("path", GET_ROUTES)
def test_head_is_get_without_the_body(path: str) -> None:
    env = {"AI_MODELS": "m1", "CORS_ALLOWED_ORIGINS": "https://app.example"}
    get = call(request("GET", path, origin="https://app.example"), env)
    head = call(request("HEAD", path, origin="https://app.example"), env)
    assert isinstance(get.body, bytes) and get.body
    assert (head.status, head.body) == (get.status, b"")
    assert head.headers == get.headers


def test_head_where_there_is_no_get_is_405_and_allow_names_head_where_there_is() -> None:
    response = call(request("HEAD", "/api/v1/chat"))
    assert (response.status, response.body) == (405, b"")
    assert ("allow", "POST, OPTIONS") in response.headers
    response = call(request("PUT", "/api/v1/models"))
    assert error_of(response) == (405, "method_not_allowed")
    assert ("allow", "GET, HEAD, OPTIONS") in response.headers


def test_head_is_guarded_like_get() -> None:
    response = call(request("HEAD", "/v1/models"), KEYED)
    assert (response.status, response.body) == (401, b"")


OPENAI_CHAT = json.dumps({"messages": [{"role": "user", "content": "hi"}], "model": "m1"}).encode()


@pytest.mark.parametrize(
    ("thrown", "status", "code", "openai_type", "retry"),
    [
        (
            "InferenceUpstreamError: 3040: Capacity temporarily exceeded, please try again.",
            429,
            "upstream_busy",
            "rate_limit_error",
            True,
        ),
        (
            "InferenceUpstreamError: 3036: daily free allocation used up",
            429,
            "upstream_quota_exceeded",
            "rate_limit_error",
            True,
        ),
        (
            "InferenceUpstreamError: 4006: daily free allocation used up",
            429,
            "upstream_quota_exceeded",
            "rate_limit_error",
            True,
        ),
        (
            "InferenceUpstreamError: 5021: The estimated number of input and maximum output tokens (8810) exceeded this model context window limit (8192).",
            400,
            "context_length_exceeded",
            "invalid_request_error",
            False,
        ),
        (
            "InferenceUpstreamError: 5006: bad input",
            400,
            "upstream_rejected_input",
            "invalid_request_error",
            False,
        ),
        (
            "InferenceUpstreamError: 5007: No such model",
            502,
            "model_unavailable",
            "server_error",
            False,
        ),
        (
            "AiError: 5028: This model was deprecated on 2026-05-30. Please use an alternative model.",
            502,
            "model_unavailable",
            "server_error",
            False,
        ),
        (
            "InferenceUpstreamError: 1234: something else",
            502,
            "upstream_error",
            "server_error",
            False,
        ),
    ],
)
def test_upstream_failures_map_by_code_in_both_apis(
    thrown: str, status: int, code: str, openai_type: str, retry: bool
) -> None:
    env = {"AI_MODELS": "m1"}
    app = call(
        request("POST", "/api/v1/chat", CHAT, content_type="application/json"),
        env,
        FakeModel(UpstreamFailure(thrown)),
    )
    assert error_of(app) == (status, code)
    v1 = call(
        request("POST", "/v1/chat/completions", OPENAI_CHAT, content_type="application/json"),
        env,
        FakeModel(UpstreamFailure(thrown)),
    )
    assert isinstance(v1.body, bytes)
    error = json.loads(v1.body)["error"]
    assert (v1.status, error["code"], error["type"]) == (status, code, openai_type)
    for response in (app, v1):
        assert ("retry-after" in dict(response.headers)) is retry
        assert isinstance(response.body, bytes) and thrown.encode() not in response.body


PATHS = [
    "/api/v1/chat",
    "/api/v1/models",
    "/v1/chat/completions",
    "/v1/models",
    "/api/v1/nope",
    "/v1/nope",
    "/",
]
METHODS = ["GET", "HEAD", "POST", "OPTIONS", "PUT", "DELETE", "PATCH"]
ORIGINS: list[dict[str, str]] = [
    {},
    {"origin": URL},
    {"origin": "https://app.example"},
    {"origin": "https://evil.example"},
    {"origin": "null"},
]
ENVS: list[dict[str, str]] = [
    {"CORS_ALLOWED_ORIGINS": "https://app.example"},
    {"CORS_ALLOWED_ORIGINS": "*"},
    {"AI_CHAT_DISABLED": "1"},
    {"AI_MODELS": "a", "AI_DEFAULT_MODEL": "b"},
]


def test_every_answer_has_nosniff_and_vary_origin() -> None:
    seen: set[int] = set()
    for path in PATHS:
        for method in METHODS:
            for origin in ORIGINS:
                for env in ENVS:
                    req = request(
                        method,
                        path,
                        CHAT,
                        content_type="application/json",
                        access_control_request_headers="content-type",
                        **origin,
                    )
                    response = call(req, env)
                    seen.add(response.status)
                    names = [name for name, _ in response.headers]
                    where = (
                        f"{method} {path} {origin} {env} -> {response.status} {response.headers}"
                    )
                    assert (
                        names.count("x-content-type-options") == 1
                        and ("x-content-type-options", "nosniff") in response.headers
                    ), where
                    assert ("vary", "Origin") in response.headers and names.count("vary") <= 2, (
                        where
                    )
    assert seen == {200, 204, 403, 404, 405, 500, 503}


def test_a_bug_in_a_handler_is_a_500_in_the_route_shape_not_an_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object) -> None:
        raise KeyError("bug")

    monkeypatch.setattr("doors.openai_chat.openai_compat.parse_completion", broken)
    monkeypatch.setattr("doors.chat.door.parse_chat", broken)
    response = call(request("POST", "/v1/chat/completions", CHAT, content_type="application/json"))
    assert response.status == 500 and isinstance(response.body, bytes)
    assert json.loads(response.body)["error"]["code"] == "internal_error"
    assert error_of(
        call(request("POST", "/api/v1/chat", CHAT, content_type="application/json"))
    ) == (500, "internal_error")


@pytest.mark.parametrize("declared", ["²", "١٢", "9" * 5000, "-1", "1e3", ""])
def test_odd_content_length_is_only_a_hint(declared: str) -> None:
    req = request(
        "POST", "/api/v1/chat", CHAT, content_type="application/json", content_length=declared
    )
    assert call(req).status == 200


def test_lone_surrogates_echoed_in_errors_are_escaped_and_clipped() -> None:
    for path, _key in [
        ("/api/v1/chat", "unknown_field"),
        ("/v1/chat/completions", "unsupported_parameter"),
    ]:
        body = b'{"messages": [{"role": "user", "content": "x"}], "\\ud800' + b"k" * 5000 + b'": 1}'
        response = call(request("POST", path, body, content_type="application/json"))
        assert response.status == 400 and isinstance(response.body, bytes)
        error = json.loads(response.body)
        message = error["message"] if "message" in error else error["error"]["message"]
        assert message.startswith("\\ud800" + "k" * 63 + "…: ")
        assert len(response.body) < 600


def test_a_non_streamed_answer_holding_a_lone_surrogate_is_still_200() -> None:
    model = FakeModel(frames("a\ud800", "é"))
    response = call(
        request("POST", "/v1/chat/completions", CHAT, content_type="application/json"), model=model
    )
    assert response.status == 200 and isinstance(response.body, bytes)
    assert b'"content": "a\\ud800\\u00e9"' in response.body
    assert json.loads(response.body)["choices"][0]["message"]["content"] == "a\ud800é"


# Keys, rate limit and context budget: guard() runs once, after the kill switch, CORS and
# the method check, and before any body is read.

KEYED = {"API_KEYS": "sk-alpha,sk-beta", "AI_MODELS": "m1"}
ROUTES = [
    ("POST", "/api/v1/chat", CHAT),
    ("GET", "/api/v1/models", b""),
    ("POST", "/v1/chat/completions", OPENAI_CHAT),
    ("GET", "/v1/models", b""),
]


def error_body(response: WebResponse) -> Any:
    assert isinstance(response.body, bytes)
    return json.loads(response.body)


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_every_route_without_keys_configured_is_open(method: str, path: str, body: bytes) -> None:
    response = call(
        request(method, path, body, content_type="application/json"), {"AI_MODELS": "m1"}
    )
    assert response.status == 200, error_body(response)


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_every_route_with_a_valid_key(method: str, path: str, body: bytes) -> None:
    response = call(
        request(
            method, path, body, content_type="application/json", authorization="Bearer sk-beta"
        ),
        KEYED,
    )
    assert response.status == 200, error_body(response)


def test_every_route_without_a_key_when_keys_are_set() -> None:
    model = FakeModel(frames("hi"))
    for method, path, _body in ROUTES:
        response = call(
            request(method, path, b"{not json", content_type="application/json"), KEYED, model
        )
        assert response.status == 401 and dict(response.headers)["www-authenticate"] == "Bearer"
        if path.startswith("/v1/"):
            assert error_body(response) == {
                "error": {
                    "message": "An API key is required: send Authorization: Bearer <key>.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            }
        else:
            assert error_body(response) == {
                "error": "unauthorized",
                "message": "An API key is required: send Authorization: Bearer <key>.",
            }
    assert model.calls == []


def test_the_page_reaches_api_without_a_key_but_not_v1() -> None:
    page = {"content_type": "application/json", "sec_fetch_site": "same-origin", "origin": URL}
    assert call(request("POST", "/api/v1/chat", CHAT, **page), KEYED).status == 200
    assert call(request("GET", "/api/v1/models", sec_fetch_site="same-origin"), KEYED).status == 200
    assert call(request("POST", "/v1/chat/completions", OPENAI_CHAT, **page), KEYED).status == 401


def test_kill_switch_answers_before_keys_and_limits() -> None:
    env = {**KEYED, "AI_CHAT_DISABLED": "1"}
    for method, path, _ in ROUTES:
        response = call(request(method, path, b"{not json"), env, limiter=FakeLimiter(limit=0))
        assert response.status == 503


def test_rate_limited_before_the_body_is_read_in_both_shapes() -> None:
    model, limiter = FakeModel(frames("hi")), FakeLimiter(limit=1)
    app = [
        call(
            request("POST", "/api/v1/chat", CHAT, content_type="application/json"),
            model=model,
            limiter=limiter,
        )
        for _ in range(2)
    ]
    assert app[0].status == 200 and app[1].status == 429
    assert error_body(app[1]) == {
        "error": "rate_limited",
        "message": "Too many requests; wait 60 seconds and try again.",
    }
    assert dict(app[1].headers)["retry-after"] == "60"
    v1 = call(
        request("POST", "/v1/chat/completions", b"{not json", content_type="application/json"),
        {"AI_MODELS": "m1"},
        model,
        limiter,
    )
    assert v1.status == 429 and dict(v1.headers)["retry-after"] == "60"
    assert error_body(v1) == {
        "error": {
            "message": "Too many requests; wait 60 seconds and try again.",
            "type": "rate_limit_error",
            "param": None,
            "code": "rate_limited",
        }
    }
    assert len(model.calls) == 1


def test_models_routes_are_not_rate_limited() -> None:
    limiter = FakeLimiter(limit=0)
    for path in ("/api/v1/models", "/v1/models"):
        assert call(request("GET", path), limiter=limiter).status == 200
    assert limiter.keys == []


def test_no_rate_limit_binding_is_500_on_metered_routes_only() -> None:
    for method, path, body in ROUTES:
        response = asyncio.run(
            handle(
                request(method, path, body, content_type="application/json"),
                {"AI_MODELS": "m1"}.get,
                FakeModel(frames("hi")),
                TABLE,
                limiter=None,
            )
        )
        if method == "GET":
            assert response.status == 200, path
            continue
        error = error_body(response)["error"]
        assert (response.status, error if isinstance(error, str) else error["code"]) == (
            500,
            "server_misconfigured",
        )


def test_a_conversation_over_the_context_window_fails_before_the_model_is_called() -> None:
    model = FakeModel(frames("hi"))
    long = json.dumps(
        {"messages": [{"role": "user", "content": "x" * 7000}] * 5, "max_tokens": 100}
    ).encode()
    env = {"MAX_MESSAGE_CHARS": "10000", "AI_MODELS": "@cf/meta/llama-3.1-8b-instruct"}
    response = call(
        request("POST", "/api/v1/chat", long, content_type="application/json"), env, model
    )
    assert error_of(response) == (400, "context_length_exceeded")
    assert "context window of 7968 tokens" in error_body(response)["message"]
    v1 = call(
        request("POST", "/v1/chat/completions", long, content_type="application/json"), env, model
    )
    assert (v1.status, error_body(v1)["error"]["param"]) == (400, "messages")
    assert model.calls == []
