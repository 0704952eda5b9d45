"""The Worker's one JSON line per request, read from the launcher's output over real HTTP on workerd."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
import pytest
from conftest import IDLE_LIMIT, Runtime, expected_tokens, expected_usage, start_runtime

pytestmark = pytest.mark.runtime

NATIVE = "@cf/google/gemma-4-26b-a4b-it"


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def ray() -> str:
    return "test-" + uuid.uuid4().hex[:16]


def lines_of(
    rt: Runtime, request_id: str, *, until: str = "request", timeout: float = 5.0
) -> list[dict[str, Any]]:
    """The Worker's JSON lines carrying this request id, once its request line is there."""
    deadline = time.monotonic() + timeout
    while True:
        found = []
        for line in list(rt.log):
            if line.startswith("{") and f'"request_id":"{request_id}"' in line:
                found.append(json.loads(line))
        if any(item["message"] == until for item in found):
            return found
        if time.monotonic() > deadline:
            raise AssertionError(
                f"no {until!r} line for {request_id} in {len(rt.log)} lines; found {found}"
            )
        time.sleep(0.02)


def request_line(rt: Runtime, request_id: str) -> dict[str, Any]:
    lines = [line for line in lines_of(rt, request_id) if line["message"] == "request"]
    assert len(lines) == 1, f"expected one request line, got {lines}"
    return lines[0]


def chat(rt: Runtime, body: dict[str, Any], request_id: str) -> httpx.Response:
    with rt.client() as client:
        response = client.post("/api/v1/chat", json=body, headers={"cf-ray": request_id})
    assert response.headers["x-request-id"] == request_id
    return response


def test_a_complete_answer(runtime: Runtime) -> None:
    rid, messages = ray(), user("[[pace:5]] log me")
    assert chat(runtime, {"messages": messages, "model": NATIVE}, rid).status_code == 200
    line = request_line(runtime, rid)
    call = runtime.last_call()
    usage = expected_usage(messages)
    timings = {key: line.pop(key) for key in ("ttfb_ms", "duration_ms")}
    assert line == {
        "message": "request",
        "level": "info",
        "request_id": rid,
        "method": "POST",
        "route": "/api/v1/chat",
        "status": 200,
        "outcome": "complete",
        "code": None,
        "model": NATIVE,
        "tokens_in": usage["prompt_tokens"],
        "tokens_out": usage["completion_tokens"],
        "reasoning_tokens": None,
        "upstream_request_id": f"local-{call['id']}",
        "malformed_frames": 0,
    }
    # The answer is paced at 5 ms a token: the first byte comes well before the end (an order
    # and a lower bound on the model's own pace: a busy machine only makes the answer longer).
    answer_ms = 5 * (len(expected_tokens(messages)) - 1)
    assert (
        0 < timings["ttfb_ms"] < timings["duration_ms"]
        and timings["duration_ms"] - timings["ttfb_ms"] >= answer_ms * 0.8
    ), timings


def test_a_failure_before_streaming_logs_its_detail_on_its_own_line(runtime: Runtime) -> None:
    rid = ray()
    response = chat(runtime, {"messages": user("[[fault:throw]] x")}, rid)
    assert response.status_code == 502 and response.json()["error"] == "upstream_error"
    lines = lines_of(runtime, rid)
    assert [(line["message"] == "request", line.get("level")) for line in lines] == [
        (False, "error"),
        (True, "error"),
    ], lines
    assert "5000: The built-in model refused (fault:throw)" in lines[0]["message"]
    line = lines[1]
    assert (line["status"], line["outcome"], line["code"], line["model"]) == (
        502,
        "failed",
        "upstream_error",
        NATIVE,
    )
    assert line["upstream_request_id"] == f"local-{runtime.last_call()['id']}"
    assert line["ttfb_ms"] == line["duration_ms"]


def test_a_failure_mid_stream(runtime: Runtime) -> None:
    rid = ray()
    response = chat(runtime, {"messages": user("[[fault:midstream]] x")}, rid)
    assert response.status_code == 200 and b"event: error" in response.content
    line = request_line(runtime, rid)
    assert (line["status"], line["outcome"], line["code"]) == (200, "failed", "upstream_error")


def test_malformed_frames_are_counted(runtime: Runtime) -> None:
    rid, messages = ray(), user("[[fault:malformed]] x")
    chat(runtime, {"messages": messages}, rid)
    line = request_line(runtime, rid)
    # local/model.mjs sends one malformed frame first, then one after every second token.
    assert (line["outcome"], line["malformed_frames"]) == (
        "complete",
        1 + len(expected_tokens(messages)) // 2,
    )


def test_a_timeout(runtime: Runtime) -> None:
    rid = ray()
    response = chat(runtime, {"messages": user("[[fault:stall]] x")}, rid)
    assert b"upstream_timeout" in response.content
    line = request_line(runtime, rid)
    assert (line["status"], line["outcome"], line["code"]) == (200, "timed_out", "upstream_timeout")
    assert line["duration_ms"] >= IDLE_LIMIT * 1000  # UPSTREAM_TIMEOUT_SECONDS in the test vars


def test_the_client_going_away(runtime: Runtime) -> None:
    rid = ray()
    with runtime.client() as client:
        body = {"messages": user("[[pace:100]] leave early")}
        with client.stream("POST", "/api/v1/chat", json=body, headers={"cf-ray": rid}) as response:
            next(response.iter_raw())
    line = request_line(runtime, rid)
    assert (line["status"], line["outcome"], line["code"], line["tokens_out"]) == (
        200,
        "client_gone",
        None,
        None,
    )


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("/api/v1/chat", {"messages": []}, 400, "invalid_field"),
        (
            "/v1/chat/completions",
            {"model": NATIVE, "messages": user("x"), "functions": []},
            400,
            "unsupported_parameter",
        ),
        ("/api/v1/nope", {}, 404, "not_found"),
    ],
)
def test_a_rejected_request(
    runtime: Runtime, path: str, body: dict[str, Any], status: int, code: str
) -> None:
    rid = ray()
    with runtime.client() as client:
        response = client.post(path, json=body, headers={"cf-ray": rid})
    assert (response.status_code, response.headers["x-request-id"]) == (status, rid)
    line = request_line(runtime, rid)
    assert (line["status"], line["outcome"], line["code"], line["model"]) == (
        status,
        "rejected",
        code,
        None,
    )


def test_without_cf_ray_an_id_is_made_and_returned(runtime: Runtime) -> None:
    with runtime.client() as client:
        first = client.get("/api/v1/models").headers["x-request-id"]
        second = client.get("/api/v1/models", headers={"cf-ray": "bad id\twith tab"}).headers[
            "x-request-id"
        ]
    assert (
        len(first) == len(second) == 16
        and first != second
        and int(first, 16) >= 0
        and int(second, 16) >= 0
    )
    assert request_line(runtime, first)["route"] == "/api/v1/models"


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
def test_the_non_streamed_openai_answer_carries_its_usage(runtime: Runtime, path: str) -> None:
    """Read off the response's own usage, not its body: the Responses body says input_tokens."""
    rid, messages = ray(), user("whole")
    body = (
        {"model": NATIVE, "messages": messages}
        if path == "/v1/chat/completions"
        else {"model": NATIVE, "input": messages}
    )
    with runtime.client() as client:
        response = client.post(path, json=body, headers={"cf-ray": rid})
    assert response.status_code == 200, response.text
    line = request_line(runtime, rid)
    usage = expected_usage(messages)
    assert (line["outcome"], line["tokens_in"], line["tokens_out"]) == (
        "complete",
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )


def test_no_message_text_or_key_reaches_any_log_line(capfd: pytest.CaptureFixture[str]) -> None:
    """A private runtime, so that its stderr is captured too: every byte it and its model print."""
    marker, key = "zebra-" + uuid.uuid4().hex, "sk-secret-" + uuid.uuid4().hex
    rt = start_runtime(vars={"UPSTREAM_TIMEOUT_SECONDS": "0.5"})
    try:
        auth = {"authorization": f"Bearer {key}", "x-api-key": key}
        with rt.client(headers=auth) as client:
            for text in (
                "",
                "[[fault:throw]] ",
                "[[fault:midstream]] ",
                "[[fault:malformed]] ",
                "[[fault:stall]] ",
                "[[error:5021]] ",
            ):
                client.post("/api/v1/chat", json={"messages": user(text + marker)})
                client.post(
                    "/v1/chat/completions", json={"model": NATIVE, "messages": user(text + marker)}
                )
            client.post(
                "/v1/chat/completions", json={"model": NATIVE, "messages": user(marker), marker: 1}
            )
            client.post("/api/v1/chat", json={"messages": [{"role": marker, "content": marker}]})
            client.post(
                "/api/v1/chat",
                content=marker.encode(),
                headers={"content-type": "application/json"},
            )
            with client.stream(
                "POST", "/api/v1/chat", json={"messages": user("[[pace:100]] " + marker)}
            ) as response:
                next(response.iter_raw())
        assert len(rt.calls()) == 12 + 1  # every model call reached the model, with the marker
        time.sleep(1.0)  # the last lines (client gone) are written when the relay ends
    finally:
        rt.stop()
    out, err = capfd.readouterr()
    everything = "".join(rt.log) + out + err
    request_lines = [line for line in rt.log if line.startswith('{"message":"request"')]
    assert len(request_lines) == 12 + 4, request_lines
    assert marker not in everything and key not in everything


def test_health_on_workerd_makes_no_model_call(runtime: Runtime) -> None:
    with runtime.client() as client:  # an API route first: the isolate has asked the catalog
        assert client.get("/api/v1/models").status_code == 200
    calls = len(runtime.calls())
    with runtime.client() as client:
        response = client.get("/api/v1/health", headers={"cf-ray": (rid := ray())})
    assert response.status_code == 200 and response.headers["x-request-id"] == rid
    assert request_line(runtime, rid)["route"] == "/api/v1/health", "health has a log line too"
    assert response.json() == {
        "status": "ok",
        "version": "0.2.0",
        "environment": "development",
        "kill_switch": "off",
        "settings": "ok",
        "bindings": [
            "AI",
            "BUDGETS",
            "CONVERSATIONS",
            "KEY_RATE_LIMITER",
            "OWNERS",
            "RATE_LIMITER",
            "READ_RATE_LIMITER",
            "RESPONSES",
        ],
        "catalog": "live",
        "runtime": {"python": response.json()["runtime"]["python"], "pyodide": "314.0.4"},
    }
    assert len(runtime.calls()) == calls
