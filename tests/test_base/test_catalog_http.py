"""Workers AI as it is in late 2026, on workerd through the real Ai class and the built-in
model: the live catalog (and the static table when it fails), fallback on 3040 and 5035 (never
after the first byte), the 403 for a paid-plan model, session affinity and cached tokens in
both APIs, tool_choice "any", the AI Gateway's options."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import Runtime, expected_tokens, parse_sse, start_runtime

from surface.request_log import id_hash
from workers_ai.affinity import conversation_key

pytestmark = pytest.mark.runtime

GEMMA = "@cf/google/gemma-4-26b-a4b-it"
FAST = "@cf/meta/llama-3.1-8b-instruct-fast"
OSS = "@cf/openai/gpt-oss-20b"
KIMI = "@cf/moonshotai/kimi-k2.6"
KEY = "sk-catalog-test-7f3a"
KEY_ID = hashlib.sha256(KEY.encode()).hexdigest()[:16]
GATEWAY = "gw-catalog"
AUTH = {"authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def rt() -> Iterator[Runtime]:
    runtime = start_runtime(
        vars={
            "AI_MODELS": f"{GEMMA},{FAST},{OSS},{KIMI}",
            "AI_FALLBACK_MODELS": f"{FAST},{OSS}",
            "AI_CATALOG_REFRESH_SECONDS": "0",  # every API request asks the catalog: the tests change it
            "API_KEYS": KEY,
            "AI_GATEWAY_ID": GATEWAY,
            "AI_GATEWAY_CACHE_TTL": "120",
        },
        pace_ms=0,
    )
    yield runtime
    runtime.stop()


def set_catalog(rt: Runtime, change: dict[str, Any] | None) -> None:
    if change is None:
        httpx.delete(rt.model_url + "/__local/catalog").raise_for_status()
    else:
        httpx.put(rt.model_url + "/__local/catalog", json=change).raise_for_status()


def ray() -> str:
    return "cat-" + uuid.uuid4().hex[:16]


def post(rt: Runtime, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    with rt.client() as client:
        return client.post(
            path,
            json=body,
            headers={**AUTH, **{k.replace("_", "-"): v for k, v in headers.items()}},
        )


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def request_line(rt: Runtime, rid: str) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    while True:
        for line in list(rt.log):
            if (
                line.startswith("{")
                and f'"request_id":"{rid}"' in line
                and '"message":"request"' in line
            ):
                return json.loads(line)  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"no request line for {rid}"
        time.sleep(0.02)


def calls_since(rt: Runtime, before: int) -> list[dict[str, Any]]:
    return [c for c in rt.calls() if c["id"] > before]


def last_id(rt: Runtime) -> int:
    calls = rt.calls()
    return int(calls[-1]["id"]) if calls else 0


def capabilities(rt: Runtime) -> dict[str, Any]:
    with rt.client() as client:
        data = client.get("/v1/models", headers=AUTH).json()["data"]
    # The chat models' facts; the embedding models listed after them are tests/test_embeddings_http's.
    # Their reasoning_control is tests/test_workers_ai/test_thinking_http.py's.
    return {
        m["id"]: {k: v for k, v in m["capabilities"].items() if k != "reasoning_control"}
        for m in data
        if m["capabilities"].get("task") is None
    }


STATIC = {
    GEMMA: {
        "context_window": 256_000,
        "vision": True,
        "tools": True,
        "reasoning": False,
        "paid_plan": False,
    },
    FAST: {
        "context_window": 128_000,
        "vision": False,
        "tools": False,
        "reasoning": False,
        "paid_plan": False,
    },
    OSS: {
        "context_window": 128_000,
        "vision": False,
        "tools": True,
        "reasoning": True,
        "paid_plan": False,
    },
    KIMI: {
        "context_window": 262_144,
        "vision": True,
        "tools": True,
        "reasoning": True,
        "paid_plan": True,
    },
}


def test_the_static_table_when_the_catalog_fails_then_the_live_catalog(rt: Runtime) -> None:
    with rt.client() as client:
        assert client.get("/api/v1/health").json()["catalog"] == "static", (
            "this isolate asked the catalog already"
        )
    set_catalog(rt, {"fail": 500})
    try:
        asked = httpx.get(rt.model_url + "/__local/catalog").json()["calls"]
        assert capabilities(rt) == STATIC
        assert httpx.get(rt.model_url + "/__local/catalog").json()["calls"] == asked + 1, (
            "the Worker did not ask the catalog"
        )
        with rt.client() as client:
            assert client.get("/api/v1/health").json()["catalog"] == "static"
        # The budget is the static window's: 256,000 tokens for gemma-4.
        assert (
            post(
                rt,
                "/api/v1/chat",
                {"messages": user("[[tokens:2]] " + "word " * 300), "max_tokens": 10},
            ).status_code
            == 200
        )
        # A catalog that says gemma-4's window is 1,000 tokens and that it reads no images.
        gemma = {
            "name": GEMMA,
            "task": {"name": "Text Generation"},
            "properties": [
                {"property_id": "context_window", "value": "1000"},
                {"property_id": "vision", "value": "false"},
            ],
        }
        set_catalog(
            rt,
            {
                "models": [
                    gemma,
                    {"name": FAST, "task": {"name": "Text Generation"}, "properties": []},
                ]
            },
        )
        caps = capabilities(rt)
        assert caps[GEMMA] == {
            "context_window": 1000,
            "vision": False,
            "tools": True,
            "reasoning": False,
            "paid_plan": False,
        }, caps
        with rt.client() as client:
            assert client.get("/api/v1/health").json()["catalog"] == "live"
            models = client.get("/api/v1/models", headers=AUTH).json()
        assert models["capabilities"][GEMMA]["context_window"] == 1000
        before = last_id(rt)
        response = post(rt, "/api/v1/chat", {"messages": user("word " * 300), "max_tokens": 900})
        assert (response.status_code, response.json()["error"]) == (
            400,
            "context_length_exceeded",
        ), response.text
        assert "context window of 1000 tokens" in response.json()["message"], response.text
        image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
        refused = post(
            rt,
            "/api/v1/chat",
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}, image]}]},
        )
        assert (refused.status_code, refused.json()["error"]) == (400, "images_not_supported"), (
            refused.text
        )
        assert calls_since(rt, before) == [], "a refused conversation reached the model"
    finally:
        set_catalog(rt, None)
    assert capabilities(rt) == STATIC  # the built-in catalog says what the static table says


def test_a_busy_model_falls_back_in_both_apis_and_the_log_says_so(rt: Runtime) -> None:
    messages = user(f"[[busy:gemma]] hello {uuid.uuid4().hex[:6]}")
    before, rid = last_id(rt), ray()
    response = post(rt, "/api/v1/chat", {"messages": messages, "model": GEMMA}, cf_ray=rid)
    assert response.status_code == 200, response.text
    events = parse_sse(response.content)
    assert [d["text"] for n, d in events if n == "content_block_delta"] == expected_tokens(messages)  # type: ignore[index]
    assert events[-2][0] == "message_stop" and events[-2][1]["model"] == FAST, events[-2]  # type: ignore[index]
    calls = calls_since(rt, before)
    assert [(c["model"], c["status"], c["options"].get("rejectIfBusy")) for c in calls] == [
        (GEMMA, 429, True),
        (FAST, 200, True),
    ], calls
    line = request_line(rt, rid)
    assert (line["model"], line["attempts"]) == (
        FAST,
        [{"model": GEMMA, "error": 3040}, {"model": FAST, "error": None}],
    ), line

    before = last_id(rt)
    response = post(
        rt, "/v1/chat/completions", {"model": GEMMA, "messages": messages, "stream": True}
    )
    chunks = [
        json.loads(line[6:]) for line in response.text.split("\n\n") if line.startswith("data: {")
    ]
    assert chunks and {c["model"] for c in chunks} == {FAST}, chunks[:2]
    assert [c["model"] for c in calls_since(rt, before)] == [GEMMA, FAST]


def test_without_reject_if_busy_the_last_model_queues(rt: Runtime) -> None:
    # Every model busy: the first two fail at once, the last one queues and answers.
    messages = user("[[busy:gemma]] [[busy:llama]] [[busy:gpt-oss]] queue me")
    before = last_id(rt)
    response = post(rt, "/v1/chat/completions", {"model": GEMMA, "messages": messages})
    assert (response.status_code, response.json()["model"]) == (200, OSS), response.text
    calls = calls_since(rt, before)
    assert [
        (c["model"], c["status"], c["options"].get("rejectIfBusy"), c["queuedMs"]) for c in calls
    ] == [(GEMMA, 429, True, 0), (FAST, 429, True, 0), (OSS, 200, None, 300)], calls


def test_a_paid_plan_model_falls_back(rt: Runtime) -> None:
    before = last_id(rt)
    response = post(rt, "/v1/chat/completions", {"model": KIMI, "messages": user("paid?")})
    assert (response.status_code, response.json()["model"]) == (200, FAST), response.text
    assert [(c["model"], c["status"]) for c in calls_since(rt, before)] == [
        (KIMI, 403),
        (FAST, 200),
    ]


def test_no_fallback_after_the_first_byte(rt: Runtime) -> None:
    before = last_id(rt)
    response = post(
        rt,
        "/api/v1/chat",
        {"messages": user("[[fault:midstream]] [[pace:5]] break"), "model": GEMMA},
    )
    assert response.status_code == 200
    events = parse_sse(response.content)
    assert [n for n, _ in events][-2:] == ["error", "done"], events
    assert [c["model"] for c in calls_since(rt, before)] == [GEMMA], (
        "a fallback was called after the answer began"
    )


def test_two_turns_share_one_affinity_key_and_the_second_reports_cached_tokens(rt: Runtime) -> None:
    first = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": f"Tell me {uuid.uuid4().hex[:8]}"},
    ]
    one = post(rt, "/api/v1/chat", {"messages": first, "model": GEMMA})
    call_one = rt.last_call()
    second = [
        *first,
        {"role": "assistant", "content": "Sure thing."},
        {"role": "user", "content": "And more?"},
    ]
    two = post(rt, "/api/v1/chat", {"messages": second, "model": GEMMA})
    call_two = rt.last_call()
    assert call_one["affinity"] == call_two["affinity"] == conversation_key(first), (
        call_one["affinity"],
        call_two["affinity"],
    )
    assert "cached_tokens" not in parse_sse(one.content)[-2][1]["usage"]  # type: ignore[index]
    # The second turn continues the first: its prompt (system and first user message) was cached.
    cached = (len(["Be", "brief."]) + 3) + (len(first[1]["content"].split()) + 3)
    usage = parse_sse(two.content)[-2][1]["usage"]  # type: ignore[index]
    prompt = sum(len(m["content"].split()) + 3 for m in second)
    assert usage == {
        "prompt_tokens": prompt,
        "completion_tokens": len(expected_tokens(second)),
        "total_tokens": prompt + len(expected_tokens(second)),
        "cached_tokens": cached,
    }, usage

    # /v1, the same conversation continued: OpenAI's prompt_tokens_details, streamed and not.
    third = [
        *second,
        {"role": "assistant", "content": "Yes."},
        {"role": "user", "content": "Last one."},
    ]
    whole = post(rt, "/v1/chat/completions", {"model": GEMMA, "messages": third}).json()
    history = sum(len(m["content"].split()) + 3 for m in second)  # what the previous call sent
    assert whole["usage"]["prompt_tokens_details"] == {"cached_tokens": history}, whole["usage"]
    fourth = [
        *third,
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "Bye."},
    ]
    streamed = post(
        rt,
        "/v1/chat/completions",
        {
            "model": GEMMA,
            "messages": fourth,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    frames = [json.loads(x[6:]) for x in streamed.text.split("\n\n") if x.startswith("data: {")]
    assert frames[-1]["usage"]["prompt_tokens_details"] == {
        "cached_tokens": sum(len(m["content"].split()) + 3 for m in third)
    }, frames[-1]
    # The same turn again continues nothing: no cached tokens reported (the built-in model's rule).
    again = post(rt, "/v1/chat/completions", {"model": GEMMA, "messages": fourth}).json()
    assert "prompt_tokens_details" not in again["usage"], again["usage"]
    assert rt.last_call()["affinity"] == conversation_key(first)


def test_a_clients_own_key_is_passed_as_is(rt: Runtime) -> None:
    post(rt, "/api/v1/chat", {"messages": user("mine")}, x_session_affinity="client-session 42")
    assert rt.last_call()["affinity"] == "client-session 42"
    post(
        rt,
        "/v1/chat/completions",
        {"model": GEMMA, "messages": user("mine"), "prompt_cache_key": "pck-1", "user": "u-9"},
    )
    assert rt.last_call()["affinity"] == "pck-1"
    post(rt, "/v1/chat/completions", {"model": GEMMA, "messages": user("mine"), "user": "u-9"})
    assert rt.last_call()["affinity"] == "u-9"


def test_tool_choice_any_reaches_the_model_as_required(rt: Runtime) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    response = post(
        rt,
        "/v1/chat/completions",
        {
            "model": OSS,
            "messages": user("[[tool:get_weather]] Paris"),
            "tools": tools,
            "tool_choice": "any",
        },
    )
    assert response.status_code == 200, response.text
    assert rt.last_call()["inputs"]["tool_choice"] == "required"
    assert response.json()["choices"][0]["finish_reason"] == "tool_calls"


def test_the_gateway_gets_its_cache_options_and_the_key_id_never_the_key(rt: Runtime) -> None:
    post(rt, "/v1/chat/completions", {"model": GEMMA, "messages": user("gateway")})
    call = rt.last_call()
    assert call["path"] == "/ai-gateway/run"
    assert call["options"]["gateway"] == {
        "id": GATEWAY,
        "cacheTtl": 120,
        "metadata": {"api_key_id": KEY_ID, "owner": id_hash("key:" + KEY_ID, None)},
    }, call["options"]
    assert KEY not in json.dumps(call)


def test_a_catalog_that_never_answers_delays_a_request_by_its_bound_only(rt: Runtime) -> None:
    set_catalog(rt, {"fail": "hang"})
    try:
        asked = httpx.get(rt.model_url + "/__local/catalog").json()["calls"]
        started = time.monotonic()
        caps = capabilities(rt)
        waited = time.monotonic() - started
        assert httpx.get(rt.model_url + "/__local/catalog").json()["calls"] == asked + 1
        # entry.CATALOG_WAIT_MS is 2,000 ms: the request waited for it (a lower bound); that it
        # did not wait for ever is the client's own timeout (rt.client(): 10 s), not a bound.
        assert waited >= 1.9, f"the request waited {waited:.2f} s for the catalog"
        assert caps == STATIC, "the facts the isolate had were lost"
    finally:
        set_catalog(rt, None)


def test_every_door_opens_the_model_one_way(rt: Runtime) -> None:
    """/v1/responses (streamed and whole), /api/v1/ui-chat and a durable conversation's turn
    open the model through service.open_answer, as /api/v1/chat and /v1/chat/completions do:
    with the asked model busy, the fallback answers, the answer names it, the first call had
    rejectIfBusy, and a session-affinity key reached the model (a durable turn's: its id)."""
    said = f"[[busy:gemma]] one way {uuid.uuid4().hex[:6]}"
    key = "door-session-1"

    def fallback_calls(before: int) -> list[dict[str, Any]]:
        calls = calls_since(rt, before)
        assert [(c["model"], c["status"], c["options"].get("rejectIfBusy")) for c in calls] == [
            (GEMMA, 429, True),
            (FAST, 200, True),
        ], calls
        return calls

    before = last_id(rt)
    whole = post(
        rt, "/v1/responses", {"model": GEMMA, "input": said, "prompt_cache_key": key}
    ).json()
    assert {c["affinity"] for c in fallback_calls(before)} == {key}
    assert whole["model"] == FAST, whole

    before = last_id(rt)
    streamed = post(rt, "/v1/responses", {"model": GEMMA, "input": said, "stream": True})
    created = [
        json.loads(line[6:])
        for line in streamed.text.splitlines()
        if line.startswith("data: ") and '"type":"response.created"' in line
    ]
    assert [c["response"]["model"] for c in created] == [FAST], streamed.text[:500]
    affinity = {c["affinity"] for c in fallback_calls(before)}
    assert len(affinity) == 1 and None not in affinity, affinity  # the conversation's own key

    before = last_id(rt)
    ui = post(
        rt,
        "/api/v1/ui-chat",
        {
            "id": "chat-7",
            "trigger": "submit-message",
            "model": GEMMA,
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": said}]}],
        },
    )
    finishes = [
        json.loads(line[6:])
        for line in ui.text.splitlines()
        if line.startswith("data: {") and '"type":"finish"' in line
    ]
    assert [f["messageMetadata"]["model"] for f in finishes] == [FAST], ui.text[-500:]
    assert {c["affinity"] for c in fallback_calls(before)} == {"chat-7"}

    with rt.client(timeout=30) as client:
        conversation = client.post("/api/v1/conversations", headers=AUTH).json()["id"]
        before = last_id(rt)
        turn = client.post(
            f"/api/v1/conversations/{conversation}/messages",
            json={"content": said, "model": GEMMA},
            headers=AUTH,
        )
        assert turn.status_code == 200 and turn.content.endswith(b"event: done\ndata: {}\n\n")
        stop = [d for n, d in parse_sse_ids(turn.content) if n == "message_stop"]
        assert [s.get("model") for s in stop] == [FAST], turn.content[-400:]
    assert {c["affinity"] for c in fallback_calls(before)} == {conversation}


def parse_sse_ids(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event, data) of a conversation's stream, whose events carry ids."""
    out = []
    for block in raw.decode().split("\n\n")[:-1]:
        fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
        if "event" in fields:
            out.append((fields["event"], json.loads(fields["data"])))
    return out


def test_a_paid_plan_model_without_a_fallback_is_403(rt: Runtime) -> None:
    """Last: it restarts workerd without AI_FALLBACK_MODELS."""
    rt.set_vars(AI_FALLBACK_MODELS="")
    for path in ("/api/v1/chat", "/v1/chat/completions"):
        before = last_id(rt)
        response = post(rt, path, {"model": KIMI, "messages": user("paid?")})
        body = response.json()
        error = body["error"]
        code, message = (
            (error, body["message"])
            if isinstance(error, str)
            else (error["code"], error["message"])
        )
        assert (response.status_code, code) == (403, "model_requires_paid_plan"), body
        assert "needs the Workers Paid plan" in message and "choose another model" in message, (
            message
        )
        assert [
            (c["model"], c["status"], c["options"].get("rejectIfBusy"))
            for c in calls_since(rt, before)
        ] == [(KIMI, 403, None)]
