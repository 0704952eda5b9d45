"""The request line's fields for each ending, from plain values (the shell only prints it)."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging

import pytest

from base.errors import ApiError
from common.chat_events import ChatEncoder
from common.openai_request import openai_error
from streaming.relay import OneShot, Relay, Relayed, Timing, relay_whole
from surface.request_log import (
    CURRENT,
    JsonLines,
    RequestLog,
    id_hash,
    redacted,
    request_id,
    route_of,
)
from surface.routing import app_error
from surface.web import WebResponse, json_response, without_body

NATIVE_DONE = (
    b'data: {"response":"Hi"}\n\ndata: {"response":"","usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}\n\n'
    b"data: [DONE]\n\n"
)


def record() -> RequestLog:
    return RequestLog(request_id="r1", method="POST", route="/api/v1/chat", started=100.0)


def relay() -> Relay:
    return Relay(ChatEncoder(), Timing(ping_after=15, give_up_after=1), now=0.0)


def written(log: RequestLog) -> list[dict[str, object]]:
    lines: list[str] = []
    log.write(lines.append)
    log.write(lines.append)  # written once
    return [json.loads(line) for line in lines]


def test_request_id_is_cf_ray_when_it_looks_like_one() -> None:
    assert request_id({"cf-ray": "8f1e2d3c4b5a6978-LHR"}) == "8f1e2d3c4b5a6978-LHR"
    made = {
        request_id({}),
        request_id({"cf-ray": "a b"}),
        request_id({"cf-ray": "x\ny"}),
        request_id({"cf-ray": "a" * 65}),
    }
    assert len(made) == 4 and all(len(rid) == 16 and int(rid, 16) >= 0 for rid in made)


@pytest.mark.parametrize(
    ("response", "outcome", "code"),
    [
        (json_response(200, {"models": []}), "complete", None),
        (app_error(ApiError(400, "invalid_field", "messages: ...")), "rejected", "invalid_field"),
        (openai_error(ApiError(429, "rate_limited", "m")), "rejected", "rate_limited"),
        (app_error(ApiError(502, "upstream_error", "m")), "failed", "upstream_error"),
        (openai_error(ApiError(504, "upstream_timeout", "m")), "timed_out", "upstream_timeout"),
        (WebResponse(status=500, body=b"not json"), "failed", None),
        (WebResponse(status=204), "complete", None),
    ],
    ids=lambda value: value.status if isinstance(value, WebResponse) else value,
)
def test_a_whole_response_ends_the_request(
    response: WebResponse, outcome: str, code: str | None
) -> None:
    log = record()
    log.responded(response, now=100.25)
    [line] = written(log)
    assert (
        line["status"],
        line["outcome"],
        line["code"],
        line["ttfb_ms"],
        line["duration_ms"],
    ) == (response.status, outcome, code, 250, 250)
    assert line["level"] == ("error" if outcome == "failed" else "info")


def test_the_code_survives_added_headers_and_head() -> None:
    response = app_error(ApiError(404, "not_found", "m")).with_headers((("x-a", "1"),))
    assert (response.code, without_body(response).code) == ("not_found", "not_found")


def test_a_whole_answer_carries_its_usage() -> None:
    log = record()
    usage = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12, "reasoning_tokens": 2}
    log.responded(json_response(200, {"choices": []}, usage=usage), now=101.0)
    assert (log.tokens_in, log.tokens_out, log.reasoning_tokens) == (5, 7, 2)


def test_a_body_that_says_otherwise_is_not_read() -> None:
    """The record is the response's own fields: a body's text cannot pass for a code."""
    log = record()
    log.responded(WebResponse(status=400, body=b'{"error": "made_up"}'), now=101.0)
    assert (log.outcome, log.code) == ("rejected", None)


STREAM = WebResponse(
    status=200,
    body=Relayed(
        source=OneShot(result={}),
        relay=Relay(ChatEncoder(), Timing(ping_after=1, give_up_after=1), now=0.0),
    ),
)


def test_a_streamed_answer_that_completes() -> None:
    log, r = record(), relay()
    log.responded(STREAM, now=100.01)
    assert log.outcome is None  # not yet: the stream has not ended
    relay_whole(
        r, OneShot(result={"response": "Hi", "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
    )
    assert r.first_output_at is not None
    log.relay_ended(r, client_gone=False, now=r.first_output_at + 0.5)
    [line] = written(log)
    assert (
        line["outcome"],
        line["code"],
        line["tokens_in"],
        line["tokens_out"],
        line["malformed_frames"],
    ) == ("complete", None, 3, 1, 0)
    assert line["duration_ms"] == line["ttfb_ms"] + 500  # type: ignore[operator]


def test_a_stream_that_fails_writes_its_detail_first_with_the_same_id() -> None:
    log, r = record(), relay()
    r.feed(b'data: {"response":"Hi"}\n\ndata: {oops}\n\n')
    r.fail(RuntimeError("connection reset"))
    log.relay_ended(r, client_gone=False, now=101.0)
    detail, line = written(log)
    assert detail == {
        "message": "upstream stream ended abnormally: connection reset",
        "level": "warning",
        "logger": "relay",
        "request_id": "r1",
    }
    assert (line["outcome"], line["code"], line["malformed_frames"], line["level"]) == (
        "failed",
        "upstream_error",
        1,
        "error",
    )


def test_a_stream_that_times_out() -> None:
    log, r = record(), relay()
    r.feed(b'data: {"response":"Hi"}\n\n')
    r.tick(0.5)
    r.tick(2.0)
    log.relay_ended(r, client_gone=False, now=102.0)
    assert (log.outcome, log.code) == ("timed_out", "upstream_timeout")


def test_a_client_gone_before_the_end() -> None:
    log, r = record(), relay()
    r.feed(b'data: {"response":"Hi"}\n\n')
    log.relay_ended(r, client_gone=True, now=101.0)
    assert (log.outcome, log.code, log.tokens_out) == ("client_gone", None, None)


def test_a_client_gone_after_the_answer_completed_is_still_complete() -> None:
    log, r = record(), relay()
    r.feed(NATIVE_DONE)
    log.relay_ended(r, client_gone=True, now=101.0)
    assert (log.outcome, log.tokens_out) == ("complete", 1)


def test_log_records_become_json_lines_with_the_current_request_id() -> None:
    lines: list[str] = []
    logger = logging.getLogger("test_request_log")
    handler = JsonLines(lines.append)
    logger.addHandler(handler)
    try:
        token = CURRENT.set(record())
        logger.error("env.AI.run(%r) failed: %s", "m", "5000: boom")
        CURRENT.reset(token)
        logger.warning("outside a request")
    finally:
        logger.removeHandler(handler)
    assert [json.loads(line) for line in lines] == [
        {
            "message": "env.AI.run('m') failed: 5000: boom",
            "level": "error",
            "logger": "test_request_log",
            "request_id": "r1",
        },
        {
            "message": "outside a request",
            "level": "warning",
            "logger": "test_request_log",
            "request_id": None,
        },
    ]


def test_cached_tokens_and_the_attempts_of_a_fallback() -> None:
    log, r = record(), relay()
    log.responded(STREAM, now=100.01)
    relay_whole(
        r,
        OneShot(
            result={
                "response": "Hi",
                "usage": {
                    "prompt_tokens": 30,
                    "completion_tokens": 1,
                    "prompt_tokens_details": {"cached_tokens": 24},
                },
            }
        ),
    )
    log.attempts += [("@cf/a/busy", 3040), ("@cf/b/free", None)]
    log.relay_ended(r, client_gone=False, now=101.0)
    [line] = written(log)
    assert (line["tokens_in"], line["tokens_cached"]) == (30, 24)
    assert line["attempts"] == [
        {"model": "@cf/a/busy", "error": 3040},
        {"model": "@cf/b/free", "error": None},
    ]
    assert line["model_calls"] == 2


def test_calls_that_all_answered_are_counted_not_listed() -> None:
    """/v1/embeddings calls the model once per batch of 100 texts."""
    log = record()
    log.attempts += [("@cf/a/embed", None)] * 3
    log.responded(json_response(200, {}, usage={"prompt_tokens": 5}), now=101.0)
    [line] = written(log)
    assert "attempts" not in line and line["model_calls"] == 3


def test_one_attempt_and_no_cache_add_nothing_to_the_line() -> None:
    log = record()
    log.attempts.append(("@cf/a/one", None))
    log.responded(
        json_response(200, {}, usage={"prompt_tokens": 5, "completion_tokens": 7}), now=101.0
    )
    [line] = written(log)
    assert "attempts" not in line and "model_calls" not in line and "tokens_cached" not in line
    whole = record()
    whole.responded(
        json_response(200, {}, usage={"prompt_tokens": 5, "cached_tokens": 4}), now=101.0
    )
    assert whole.tokens_cached == 4


ID = "0123456789abcdef0123456789abcdef"


def test_a_conversation_id_is_logged_only_as_its_keyed_hash() -> None:
    route, hashed = route_of(f"/api/v1/conversations/{ID}/messages", None)
    assert route == "/api/v1/conversations/{id}/messages"
    # HMAC-SHA256 as an operator computes it: printf %s "$ID" | openssl dgst -sha256 -hmac "$KEY"
    assert hashed == hmac.new(b"ai-chat log ids", ID.encode(), hashlib.sha256).hexdigest()[:16]
    keyed = route_of(f"/api/v1/conversations/{ID}", "s3cret")[1]
    assert keyed == hmac.new(b"s3cret", ID.encode(), hashlib.sha256).hexdigest()[:16]
    assert keyed != hashed and id_hash(ID, "s3cret") == keyed
    log = RequestLog(request_id="r1", method="GET", route=route, started=0.0, conversation=hashed)
    log.responded(json_response(200, {}), now=0.01)
    [line] = written(log)
    assert (line["route"], line["conversation"]) == (route, hashed)
    assert ID not in json.dumps(line)


@pytest.mark.parametrize(
    ("path", "route"),
    [
        (f"/api/v1/conversations/{ID}/nope", "/api/v1/conversations/{id}/nope"),
        (f"/x/{ID.upper()}y", "/x/{id}y"),
        ("/api/v1/conversations/%30123456789abcdef0123456789abcdef", "/api/v1/conversations/{id}"),
        (f"/x/{ID}{ID}", "/x/{id}"),
        ("/api/v1/chat", "/api/v1/chat"),
        ("/short/0123456789abcdef", "/short/0123456789abcdef"),
    ],
)
def test_any_path_that_may_hold_an_id_is_redacted(path: str, route: str) -> None:
    assert route_of(path, None)[0] == route
    assert redacted(f"GET {path} failed") == f"GET {redacted(path)} failed"


def test_log_records_and_relay_details_lose_any_id_they_carry() -> None:
    lines: list[str] = []
    logger = logging.getLogger("test_request_log_ids")
    handler = JsonLines(lines.append)
    logger.addHandler(handler)
    try:
        logger.error("GET https://%s/get failed", ID)
    finally:
        logger.removeHandler(handler)
    log = record()
    log.details.append(f"relay note about {ID}")
    log.responded(json_response(200, {}), now=100.01)
    log.write(lines.append)
    assert all(ID not in line for line in lines), lines
    assert json.loads(lines[0])["message"] == "GET https://{id}/get failed"


def test_a_long_path_is_logged_cut_after_its_ids_are_hidden() -> None:
    """Issue 47: a client's 100,000-character path is not a 100 KB log line; an id that the cut
    would split is hidden first, so no part of it is logged."""
    route, _ = route_of("/nowhere/" + "x" * 100_000, None)
    assert route == "/nowhere/" + "x" * 191 + "…"
    route, hashed = route_of("/" + "y" * 190 + ID, None)
    assert route == "/" + "y" * 190 + "{id}" and hashed is not None
    route, _ = route_of("/" + "y" * 197 + ID + "z" * 50, None)
    assert route == "/" + "y" * 197 + "{i" + "…" and ID[:2] not in route
