"""Keys, the rate limiter, AI Gateway and the context budget on workerd, over real HTTP.

One Worker with API_KEYS set, an AI_GATEWAY_ID, the page's RATE_LIMITER at 3 requests per
10 s, the keyed clients' KEY_RATE_LIMITER at 5 and the conversations' READ_RATE_LIMITER at 4
(miniflare's simulated limiter: fixed
windows of the period, aligned to the epoch, counted per key; 10 and 60 are the only periods
it and wrangler accept).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import secrets
import time
from collections.abc import Iterator

import httpx
import openai
import pytest
from conftest import Runtime, start_runtime

from surface.owners import owner_of
from surface.request_log import id_hash

pytestmark = pytest.mark.runtime

KEYS = [f"sk-test-{secrets.token_hex(12)}" for _ in range(5)]
WRONG = f"sk-test-{secrets.token_hex(12)}"
GATEWAY = "abuse-test-gateway"
LIMIT, KEY_LIMIT, READ_LIMIT, PERIOD = 3, 5, 4, 10
CHAT = {"messages": [{"role": "user", "content": "[[pace:0]] hi"}], "max_tokens": 3}


@pytest.fixture(scope="module")
def guarded() -> Iterator[Runtime]:
    rt = start_runtime(
        # A model with a small context window (7,968 tokens) as the default, for the budget test:
        # the built-in model still answers for it, retired or not.
        vars={
            "API_KEYS": ",".join(KEYS),
            "AI_GATEWAY_ID": GATEWAY,
            "AI_MODELS": "@cf/meta/llama-3.1-8b-instruct,@cf/openai/gpt-oss-20b",
            "AI_DEFAULT_MODEL": "@cf/meta/llama-3.1-8b-instruct",
        },
        ratelimit=(
            f"{LIMIT}/{PERIOD}",
            f"KEY_RATE_LIMITER={KEY_LIMIT}/{PERIOD}",
            f"READ_RATE_LIMITER={READ_LIMIT}/{PERIOD}",
        ),
        capture_stderr=True,
    )
    yield rt
    rt.stop()


def send(
    rt: Runtime,
    method: str,
    path: str,
    *,
    key: str | None = None,
    ip: str = "192.0.2.1",
    **headers: str,
) -> httpx.Response:
    sent = {"cf-connecting-ip": ip, **{k.replace("_", "-"): v for k, v in headers.items()}}
    if key is not None:
        sent["authorization"] = f"Bearer {key}"
    body = CHAT if method == "POST" else None
    return httpx.request(method, rt.url + path, json=body, headers=sent, timeout=10)


def error(response: httpx.Response) -> tuple[int, str]:
    """(status, code) in either API's shape."""
    body = response.json()["error"]
    return response.status_code, body if isinstance(body, str) else body["code"]


def test_every_route_with_and_without_keys(guarded: Runtime) -> None:
    rt, key = guarded, KEYS[0]
    for path in ("/v1/models", "/api/v1/models"):
        assert send(rt, "GET", path, key=key).status_code == 200
    for method, path in (("POST", "/v1/chat/completions"), ("POST", "/api/v1/chat")):
        ok = send(rt, method, path, key=key, ip="192.0.2.10")
        assert ok.status_code == 200, ok.text
    calls = len(rt.calls())
    for method, path, code in (
        ("GET", "/v1/models", "invalid_api_key"),
        ("POST", "/v1/chat/completions", "invalid_api_key"),
        ("GET", "/api/v1/models", "unauthorized"),
        ("POST", "/api/v1/chat", "unauthorized"),
    ):
        for refused in (
            send(rt, method, path),
            send(rt, method, path, key=WRONG),
            send(rt, method, path, sec_fetch_site="cross-site"),
        ):
            assert error(refused) == (401, code), refused.text
            assert refused.headers["www-authenticate"] == "Bearer"
    assert (
        send(rt, "POST", "/v1/chat/completions").json()["error"]["type"] == "invalid_request_error"
    )
    assert len(rt.calls()) == calls, "a refused request reached the model"
    # The Worker's own page: same origin, no key.
    assert send(rt, "GET", "/api/v1/models", sec_fetch_site="same-origin").status_code == 200
    page = send(
        rt, "POST", "/api/v1/chat", ip="192.0.2.11", origin=rt.url, sec_fetch_site="same-origin"
    )
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/event-stream")
    assert error(
        send(rt, "POST", "/v1/chat/completions", origin=rt.url, sec_fetch_site="same-origin")
    ) == (401, "invalid_api_key")


def test_the_openai_sdk_with_and_without_a_key(guarded: Runtime) -> None:
    with openai.OpenAI(
        base_url=guarded.url + "/v1", api_key=KEYS[0], max_retries=0, timeout=10
    ) as client:
        assert [m.id for m in client.models.list()]
    with (
        openai.OpenAI(
            base_url=guarded.url + "/v1", api_key=WRONG, max_retries=0, timeout=10
        ) as client,
        pytest.raises(openai.AuthenticationError) as caught,
    ):
        client.models.list()
    assert caught.value.code == "invalid_api_key" and WRONG not in str(caught.value)


def start_of_a_window(room: float = 4.0) -> None:
    """Sleep into a limiter window with at least `room` seconds left, so a burst fits in one."""
    left = PERIOD - time.time() % PERIOD
    if left < room:
        time.sleep(left + 0.2)


def next_window() -> None:
    time.sleep(PERIOD - time.time() % PERIOD + 0.2)


# A burst must fall in one limiter window (miniflare's are PERIOD seconds from the epoch) for
# its 429s to be counted. When a busy machine makes one cross into the next window, the burst
# runs again, whole, from the start of the following one, with the model calls counted again:
# the clock checks the test's precondition here, it bounds nothing.
CROSSED = "three bursts in a row crossed a limiter window: the machine is too busy to tell"


def test_the_limiter_trips_at_its_limit_and_recovers_per_key_and_per_address(
    guarded: Runtime,
) -> None:
    rt, key, other = guarded, KEYS[1], KEYS[2]
    start_of_a_window()
    for _ in range(3):
        window = time.time() // PERIOD
        calls = len(rt.calls())
        by_key = [
            send(rt, "POST", "/v1/chat/completions", key=key, ip="198.51.100.1")
            for _ in range(KEY_LIMIT + 1)
        ]
        by_page = [
            send(rt, "POST", "/api/v1/chat", ip="198.51.100.1", sec_fetch_site="same-origin")
            for _ in range(LIMIT + 1)
        ]
        from_elsewhere_same_key = send(
            rt, "POST", "/v1/chat/completions", key=key, ip="198.51.100.2"
        )
        other_key_same_address = send(
            rt, "POST", "/v1/chat/completions", key=other, ip="198.51.100.1"
        )
        page_elsewhere = send(
            rt, "POST", "/api/v1/chat", ip="198.51.100.2", sec_fetch_site="same-origin"
        )
        models = send(rt, "GET", "/v1/models", key=key)
        if time.time() // PERIOD == window:
            break
        next_window()  # it crossed into the next window: again, whole (CROSSED)
    else:
        pytest.fail(CROSSED)

    # A keyed client has its own, higher limit; using it took nothing from its address's.
    assert [r.status_code for r in by_key] == [200] * KEY_LIMIT + [429]
    assert [r.status_code for r in by_page] == [200] * LIMIT + [429]
    limited = by_key[-1]
    assert limited.json() == {
        "error": {
            "message": "Too many requests; wait 60 seconds and try again.",
            "type": "rate_limit_error",
            "param": None,
            "code": "rate_limited",
        }
    }
    assert limited.headers["retry-after"] == "60"
    assert by_page[-1].json() == {
        "error": "rate_limited",
        "message": "Too many requests; wait 60 seconds and try again.",
    }
    assert error(from_elsewhere_same_key) == (429, "rate_limited"), (
        "a key is one bucket wherever it comes from"
    )
    assert other_key_same_address.status_code == 200, "another key is another bucket"
    assert page_elsewhere.status_code == 200, "another address is another bucket"
    assert models.status_code == 200, "listing models costs nothing and is not limited"
    assert len(rt.calls()) == calls + KEY_LIMIT + LIMIT + 2, "a refused request reached the model"

    next_window()
    assert send(rt, "POST", "/v1/chat/completions", key=key, ip="198.51.100.1").status_code == 200
    assert (
        send(
            rt, "POST", "/api/v1/chat", ip="198.51.100.1", sec_fetch_site="same-origin"
        ).status_code
        == 200
    )


def test_every_call_goes_through_the_ai_gateway(guarded: Runtime, runtime: Runtime) -> None:
    assert send(guarded, "POST", "/v1/chat/completions", key=KEYS[3]).status_code == 200
    call = guarded.last_call()
    # Tagged with the key's id (never the key); wrangler.toml's fallback model: rejectIfBusy.
    key_id = hashlib.sha256(KEYS[3].encode()).hexdigest()[:16]
    assert (call["path"], call["options"]) == (
        "/ai-gateway/run",
        {
            "gateway": {
                "id": GATEWAY,
                # The owner as a keyed hash (LOG_HASH_KEY unset: its public default), never a key.
                "metadata": {"api_key_id": key_id, "owner": id_hash("key:" + key_id, None)},
            },
            "rejectIfBusy": True,
        },
    )
    # A durable turn of the page: its owner token's hash, hashed again, as metadata.owner.
    token = secrets.token_hex(16)
    page = {"sec-fetch-site": "same-origin", "x-owner-token": token}
    made = httpx.post(guarded.url + "/api/v1/conversations", headers=page, timeout=10)
    assert made.status_code == 201, made.text
    turn = httpx.post(
        f"{guarded.url}/api/v1/conversations/{made.json()['id']}/messages",
        headers=page,
        json={"content": "[[pace:0]] hi"},
        timeout=30,
    )
    assert turn.status_code == 200, turn.text
    owner = owner_of({"x-owner-token": token}, None, None)
    assert owner is not None
    metadata = guarded.last_call()["options"]["gateway"]["metadata"]
    assert metadata == {"owner": id_hash(owner, None)}, metadata
    assert token not in json.dumps(guarded.last_call()["options"])
    open_chat = httpx.post(runtime.url + "/api/v1/chat", json=CHAT, timeout=10)
    assert open_chat.status_code == 200
    call = runtime.last_call()
    assert (call["path"], call["options"]) == ("/run", {"rejectIfBusy": True}), call


def test_a_conversation_over_the_context_window_never_reaches_the_model(guarded: Runtime) -> None:
    calls = len(guarded.calls())
    body = {"messages": [{"role": "user", "content": "x" * 7000}] * 5, "max_tokens": 100}
    response = httpx.post(
        guarded.url + "/v1/chat/completions",
        json=body,
        headers={"authorization": f"Bearer {KEYS[4]}"},
        timeout=10,
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "The conversation plus max_tokens need about 8870 tokens, more than @cf/meta/llama-3.1-8b-instruct's "
        "context window of 7968 tokens; shorten the conversation or lower max_tokens.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
    assert len(guarded.calls()) == calls


def test_the_kill_switch_answers_before_keys_and_limits(guarded: Runtime) -> None:
    guarded.set_vars(AI_CHAT_DISABLED="1")
    try:
        for method, path in (
            ("GET", "/v1/models"),
            ("POST", "/v1/chat/completions"),
            ("GET", "/api/v1/models"),
            ("POST", "/api/v1/chat"),
        ):
            for key in (None, WRONG, KEYS[0]):
                assert error(send(guarded, method, path, key=key)) == (503, "ai_unavailable")
    finally:
        guarded.set_vars(AI_CHAT_DISABLED=None)


def test_no_key_appears_in_any_log_line(guarded: Runtime) -> None:
    time.sleep(0.5)  # the reader thread drains the pipe
    log = "".join(guarded.log)
    # The Worker's own JSON line per request (miniflare's request lines are off).
    assert '"route":"/v1/chat/completions","status":401' in log and '"status":429' in log, (
        "the log was not captured"
    )
    leaked = [k for k in (*KEYS, WRONG) if k in log]
    assert leaked == [], f"keys in the Worker's log: {len(leaked)}"


def test_conversation_reads_are_rate_limited_on_their_own_limit(guarded: Runtime) -> None:
    """Each read reaches a Durable Object: counted per key or address on READ_RATE_LIMITER,
    never on the model's limits (issue 33)."""
    rt, key, other = guarded, KEYS[4], KEYS[0]
    for _ in range(3):
        next_window()
        window = time.time() // PERIOD
        made = httpx.post(
            rt.url + "/api/v1/conversations",
            headers={"authorization": f"Bearer {key}", "cf-connecting-ip": "198.51.100.7"},
            timeout=10,
        )
        assert made.status_code == 201, made.text
        path = f"/api/v1/conversations/{made.json()['id']}"
        reads = [
            send(rt, method, path + tail, key=key, ip="198.51.100.7")
            for method, tail in (("GET", ""), ("GET", "/stream"), ("POST", "/stop"), ("GET", ""))
        ]
        over = send(rt, "GET", path, key=key, ip="198.51.100.8")
        other_key = send(rt, "GET", path, key=other, ip="198.51.100.7")
        page = [
            send(rt, "GET", path, ip="198.51.100.9", sec_fetch_site="same-origin")
            for _ in range(READ_LIMIT + 1)
        ]
        still_chatting = send(rt, "POST", "/v1/chat/completions", key=key, ip="198.51.100.7")
        if time.time() // PERIOD == window:
            break
    else:
        pytest.fail(CROSSED)
    assert [r.status_code for r in reads] == [200, 404, 200, 200], [r.text for r in reads]
    assert (error(over), over.headers["retry-after"]) == ((429, "rate_limited"), "60")
    # Another key, and the page, are buckets of their own: not 429. The conversation is the
    # first key's (issue 34's owners), so they read the 404 of an id they do not own.
    assert other_key.status_code == 404, ("another key is another bucket", other_key.text)
    assert [r.status_code for r in page] == [404] * READ_LIMIT + [429], [r.text for r in page]
    assert still_chatting.status_code == 200, "reads took nothing from the model's limit"


def long_get(rt: Runtime, path: str, ip: str) -> tuple[int, str | None]:
    """GET a path too long for httpx (64 KiB at most): (status, Retry-After)."""
    host, port = rt.url.split("//")[1].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", path, headers={"cf-connecting-ip": ip})
        response = connection.getresponse()
        response.read()
        return response.status, response.getheader("retry-after")
    finally:
        connection.close()


def test_unknown_paths_are_rate_limited_as_reads_and_logged_clipped(guarded: Runtime) -> None:
    """Issue 47: a path no route takes counts on READ_RATE_LIMITER per address (a key counts for
    nothing), and its log line keeps 200 characters of a 100,000-character path."""
    rt = guarded
    next_window()
    seen = len(rt.log)
    long = "/nowhere/" + "x" * 100_000
    probes = [long_get(rt, long, "198.51.100.20") for _ in range(READ_LIMIT + 1)]
    keyed = send(rt, "GET", "/v1/nope", key=KEYS[3], ip="198.51.100.20")
    elsewhere = send(rt, "GET", "/v1/nope", ip="198.51.100.21")
    assert time.time() % PERIOD < PERIOD - 0.1, "the burst crossed a window; the test cannot tell"
    assert [status for status, _ in probes] == [404] * READ_LIMIT + [429], probes
    assert probes[-1][1] == "60"
    assert error(keyed) == (429, "rate_limited"), keyed.text  # same address, key or not
    assert error(elsewhere) == (404, "not_found"), elsewhere.text  # an OpenAI-shaped 404
    deadline = time.monotonic() + 30
    while True:
        lines = [json.loads(x) for x in rt.log[seen:] if '"route":"/nowhere/' in x]
        if len(lines) == READ_LIMIT + 1 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert [line["status"] for line in lines] == [404] * READ_LIMIT + [429], lines
    assert all(line["route"] == long[:200] + "…" for line in lines), lines[0]["route"][:300]
    assert max(len(x) for x in rt.log[seen:]) < 2000
