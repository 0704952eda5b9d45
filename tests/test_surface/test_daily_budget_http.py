"""A budget per person on workerd (OWNER_DAILY_TOKENS, one OwnerBudget Durable Object per owner):
each way an answer ends (streamed, whole, a fan-out of completions, Responses, a durable turn)
adds the usage the model reported; /api/v1/usage agrees; past the budget a request is 429
budget_exceeded before any model call, with Retry-After to the next UTC midnight. A durable
turn's request line names its model, tokens and outcome."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import Runtime, parse_sse, start_runtime

pytestmark = pytest.mark.runtime

BUDGET = 2000
PAGE = {"sec-fetch-site": "same-origin"}
GEMMA = "@cf/google/gemma-4-26b-a4b-it"


@pytest.fixture(scope="module")
def rt() -> Iterator[Runtime]:
    runtime = start_runtime(vars={"OWNER_DAILY_TOKENS": str(BUDGET)}, capture_stderr=True)
    yield runtime
    runtime.stop()


def owner() -> dict[str, str]:
    return {**PAGE, "x-owner-token": secrets.token_hex(16)}


def usage(rt: Runtime, who: dict[str, str]) -> dict[str, Any]:
    response = httpx.get(rt.url + "/api/v1/usage", headers=who, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def settles(rt: Runtime, who: dict[str, str], expected: int) -> dict[str, Any]:
    """The count is added after the answer has gone (waitUntil): polled, with a generous bound."""
    deadline = time.monotonic() + 30
    while True:
        seen = usage(rt, who)
        if seen["used"] == expected or time.monotonic() > deadline:
            assert seen["used"] == expected, (seen, expected)
            return seen
        time.sleep(0.05)


def stop_usage(raw: bytes) -> dict[str, int]:
    """The usage of a durable turn's message_stop (its events carry ids: not parse_sse's)."""
    for block in raw.decode().split("\n\n"):
        if "event: message_stop" in block:
            data = block.split("data: ", 1)[1]
            return json.loads(data)["usage"]  # type: ignore[no-any-return]
    raise AssertionError(f"no message_stop in {raw[-200:]!r}")


def total(reported: dict[str, Any]) -> int:
    return int(reported["prompt_tokens"]) + int(reported["completion_tokens"])


def test_each_way_an_answer_ends_is_counted_as_the_model_reported(rt: Runtime) -> None:
    who = owner()
    first = usage(rt, who)
    assert (first["owner"], first["used"], first["limit"], first["signed_in"]) == (
        "token",
        0,
        BUDGET,
        None,
    )
    assert first["resets_at"] % 86400 == 0 and first["resets_at"] > time.time()
    listed = httpx.get(rt.url + "/api/v1/models", headers=who, timeout=10).json()
    assert listed["daily_tokens"] == BUDGET and "signed_in" not in listed
    spent = 0
    said = [{"role": "user", "content": "[[pace:0]] count me"}]
    with rt.client(headers=who, timeout=30) as client:
        # Streamed, our door: message_stop carries the model's usage.
        events = parse_sse(client.post("/api/v1/chat", json={"messages": said}).content)
        spent += total(next(d for n, d in events if n == "message_stop")["usage"])  # type: ignore[index]
        settles(rt, who, spent)
        # Whole, OpenAI's door.
        body = {"model": GEMMA, "messages": said}
        spent += total(client.post("/v1/chat/completions", json=body).json()["usage"])
        settles(rt, who, spent)
        # A fan-out: several prompts, each its own call, summed.
        fan = {"model": GEMMA, "prompt": ["[[pace:0]] a", "[[pace:0]] b c"], "max_tokens": 8}
        spent += total(client.post("/v1/completions", json=fan).json()["usage"])
        settles(rt, who, spent)
        # Responses, whole.
        answer = client.post("/v1/responses", json={"model": GEMMA, "input": "[[pace:0]] r"})
        reported = answer.json()["usage"]
        spent += int(reported["input_tokens"]) + int(reported["output_tokens"])
        settles(rt, who, spent)
        # A durable turn: counted by its conversation's object when the turn ends.
        made = client.post("/api/v1/conversations")
        assert made.status_code == 201, made.text
        id = made.json()["id"]
        turn = client.post(
            f"/api/v1/conversations/{id}/messages", json={"content": "[[pace:0]] turn"}
        )
        spent += total(stop_usage(turn.content))
        settles(rt, who, spent)
    assert usage(rt, owner())["used"] == 0, "another owner's count moved"


def test_a_spent_budget_is_429_before_any_model_call(rt: Runtime) -> None:
    who = owner()
    long = "[[pace:0]] " + "word " * 400
    with rt.client(headers=who, timeout=30) as client:
        while usage(rt, who)["used"] < BUDGET:
            before = usage(rt, who)["used"]
            response = client.post(
                "/api/v1/chat", json={"messages": [{"role": "user", "content": long}]}
            )
            assert response.status_code == 200, response.text
            deadline = time.monotonic() + 30
            while usage(rt, who)["used"] == before and time.monotonic() < deadline:
                time.sleep(0.05)
        calls = len(rt.calls())
        for method, path, body in (
            ("POST", "/api/v1/chat", {"messages": [{"role": "user", "content": "hi"}]}),
            (
                "POST",
                "/v1/chat/completions",
                {"model": GEMMA, "messages": [{"role": "user", "content": "hi"}]},
            ),
            ("POST", "/v1/responses", {"model": GEMMA, "input": "hi"}),
        ):
            refused = client.request(method, path, json=body)
            assert refused.status_code == 429, (path, refused.text)
            assert "budget_exceeded" in refused.text and "resets at midnight UTC" in refused.text
            retry = int(refused.headers["retry-after"])
            assert 0 < retry <= 86400 and abs(time.time() + retry - usage(rt, who)["resets_at"]) < 5
        assert len(rt.calls()) == calls, "a request over budget reached the model"
    # Someone else still has their whole budget.
    with rt.client(headers=owner(), timeout=30) as client:
        assert (
            client.post(
                "/api/v1/chat", json={"messages": [{"role": "user", "content": "[[pace:0]] hi"}]}
            ).status_code
            == 200
        )


def test_a_durable_turn_logs_its_model_tokens_and_outcome(rt: Runtime) -> None:
    who = owner()
    with rt.client(headers=who, timeout=30) as client:
        id = client.post("/api/v1/conversations").json()["id"]
        turn = client.post(
            f"/api/v1/conversations/{id}/messages",
            json={"content": "[[pace:0]] log me", "model": GEMMA},
        )
        request_id = turn.headers["x-request-id"]
        stop = stop_usage(turn.content)
        failed = client.post(
            f"/api/v1/conversations/{id}/messages",
            json={"content": "[[pace:0]] [[error:5007]] gone", "model": GEMMA},
        )
        assert failed.status_code >= 400, failed.text
        failed_id = failed.headers["x-request-id"]

    def line(rid: str) -> dict[str, Any] | None:
        for text in rt.log:
            start = text.find('{"message":"request"')
            if start >= 0:
                parsed = json.loads(text[start:])
                if parsed.get("request_id") == rid:
                    return parsed  # type: ignore[no-any-return]
        return None

    deadline = time.monotonic() + 30
    while (line(request_id) is None or line(failed_id) is None) and time.monotonic() < deadline:
        time.sleep(0.05)
    ok, busy = line(request_id), line(failed_id)
    assert ok is not None and busy is not None, rt.log[-20:]
    lines = [
        t for t in rt.log if f'"request_id":"{request_id}"' in t and '"message":"request"' in t
    ]
    assert len(lines) == 1, lines
    assert (ok["model"], ok["outcome"], ok["code"]) == (GEMMA, "complete", None), ok
    assert (ok["tokens_in"], ok["tokens_out"]) == (
        stop["prompt_tokens"],
        stop["completion_tokens"],
    ), ok
    assert ok["route"] == "/api/v1/conversations/{id}/messages" and id not in json.dumps(ok)
    assert (busy["model"], busy["code"]) == (GEMMA, "model_unavailable"), busy
