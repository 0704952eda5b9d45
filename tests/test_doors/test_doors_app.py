"""/v1/responses, /api/v1/ui-chat, /v1/completions and /v1/embeddings in the route table: the
same kill switch, keys, rate limit, CORS and error shapes as the chat doors, and their handlers
over a fake model (host)."""

from __future__ import annotations

import json
from typing import Any

from fakes import FakeLimiter, FakeModel, frames
from host_app import URL, call, request, streamed

from surface.web import WebResponse

RESPONSES = json.dumps({"input": "hi"}).encode()
UI_CHAT = json.dumps(
    {
        "id": "c",
        "trigger": "submit-message",
        "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
    }
).encode()
KEYED = {"API_KEYS": "sk-alpha", "AI_MODELS": "m1"}
JSON = {"content_type": "application/json"}


def body(response: WebResponse) -> Any:
    assert isinstance(response.body, bytes), response
    return json.loads(response.body)


def test_a_non_streamed_response_over_a_fake_model() -> None:
    model = FakeModel(
        frames("Hel", "lo", usage={"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4})
    )
    answer = body(
        call(request("POST", "/v1/responses", RESPONSES, **JSON), {"AI_MODELS": "m1"}, model)
    )
    assert (answer["object"], answer["status"], answer["model"]) == ("response", "completed", "m1")
    assert [(o["type"], o["content"][0]["text"]) for o in answer["output"]] == [
        ("message", "Hello")
    ]
    assert answer["usage"]["input_tokens"] == 2 and answer["usage"]["total_tokens"] == 4
    assert model.calls == [
        (
            "m1",
            {"messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": 1024},
        )
    ]


def test_streamed_doors_answer_in_their_own_protocols() -> None:
    responses = streamed(
        call(
            request(
                "POST",
                "/v1/responses",
                json.dumps({"input": "hi", "stream": True}).encode(),
                **JSON,
            ),
            {"AI_MODELS": "m1"},
        )
    )
    kinds = [line[7:] for line in responses.decode().split("\n") if line.startswith("event: ")]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ], responses
    response = call(request("POST", "/api/v1/ui-chat", UI_CHAT, **JSON), {"AI_MODELS": "m1"})
    assert ("x-vercel-ai-ui-message-stream", "v1") in response.headers and (
        "content-type",
        "text/event-stream; charset=utf-8",
    ) in response.headers
    ui = streamed(response)
    assert ui.endswith(
        b'data: {"type":"finish","finishReason":"stop","messageMetadata":{"model":"m1"}}\n\ndata: [DONE]\n\n'
    ), ui


def test_a_failed_non_streamed_response_is_a_502_in_openai_shape() -> None:
    model = FakeModel(frames("a", done=False))
    response = call(request("POST", "/v1/responses", RESPONSES, **JSON), {"AI_MODELS": "m1"}, model)
    assert response.status == 502 and body(response)["error"] == {
        "message": "The model stream ended before the answer was complete.",
        "type": "server_error",
        "param": None,
        "code": "upstream_incomplete",
    }


def test_keys_kill_switch_rate_limit_and_cors_as_on_the_other_doors() -> None:
    model = FakeModel(frames("hi"))
    v1 = call(request("POST", "/v1/responses", b"{not json", **JSON), KEYED, model)
    assert v1.status == 401 and body(v1)["error"]["code"] == "invalid_api_key"
    ui = call(request("POST", "/api/v1/ui-chat", b"{not json", **JSON), KEYED, model)
    assert ui.status == 401 and body(ui) == {
        "error": "unauthorized",
        "message": "An API key is required: send Authorization: Bearer <key>.",
    }
    page = call(
        request(
            "POST", "/api/v1/ui-chat", UI_CHAT, sec_fetch_site="same-origin", origin=URL, **JSON
        ),
        KEYED,
        model,
    )
    assert page.status == 200, "the Worker's own page reaches the ui-chat door without a key"
    keyed = call(
        request("POST", "/v1/responses", RESPONSES, authorization="Bearer sk-alpha", **JSON),
        KEYED,
        model,
    )
    assert keyed.status == 200
    for path in ("/v1/responses", "/api/v1/ui-chat", "/v1/completions", "/v1/embeddings"):
        off = call(
            request("POST", path, b"{not json", **JSON), {**KEYED, "AI_CHAT_DISABLED": "1"}, model
        )
        assert off.status == 503, off
        limiter = FakeLimiter(limit=0)
        limited = call(
            request("POST", path, b"{not json", **JSON), {"AI_MODELS": "m1"}, model, limiter
        )
        assert (
            limited.status == 429 and dict(limited.headers)["retry-after"] == "60" and limiter.keys
        ), limited
        assert call(request("GET", path), {"AI_MODELS": "m1"}).status == 405
        foreign = call(
            request("POST", path, b"{}", origin="https://evil.example", **JSON),
            {"AI_MODELS": "m1"},
            model,
        )
        assert foreign.status == 403
        preflight = request(
            "OPTIONS", path, origin="https://app.example", access_control_request_method="POST"
        )
        allowed = call(preflight, {"CORS_ALLOWED_ORIGINS": "https://app.example"})
        assert (
            allowed.status == 204
            and ("access-control-allow-origin", "https://app.example") in allowed.headers
        )
    assert (
        body(
            call(
                request("POST", "/v1/responses", RESPONSES, **JSON),
                {**KEYED, "AI_CHAT_DISABLED": "1"},
            )
        )["error"]["code"]
        == "ai_unavailable"
    )
    assert len(model.calls) == 2  # the two answered requests only


def test_paths_under_each_door_keep_its_error_shape() -> None:
    assert body(call(request("GET", "/v1/responses/resp_1")))["error"]["code"] == "not_found"
    assert body(call(request("GET", "/api/v1/ui-chat/x"))) == {
        "error": "not_found",
        "message": "no route for /api/v1/ui-chat/x",
    }
