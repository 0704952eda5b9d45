"""The real Worker (src/ on workerd, env.AI = workerd's own Ai class) over real HTTP."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cases import CASES
from conftest import (
    IDLE_LIMIT,
    THINKING_OFF,
    Runtime,
    assert_stopped,
    expected_tokens,
    expected_usage,
    expected_wire,
    parse_sse,
)

pytestmark = pytest.mark.runtime

NATIVE = "@cf/google/gemma-4-26b-a4b-it"
OPENAI_SHAPED = "@cf/openai/gpt-oss-20b"
FAST = "@cf/meta/llama-3.1-8b-instruct-fast"
GLM = "@cf/zai-org/glm-4.7-flash"


def convo(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "be kind"}, {"role": "user", "content": text}]


def post(rt: Runtime, body: dict[str, object]) -> httpx.Response:
    with rt.client() as client:
        return client.post("/api/v1/chat", json=body)


@pytest.mark.parametrize("model", [NATIVE, OPENAI_SHAPED])
def test_complete_answer_exact_bytes(runtime: Runtime, model: str) -> None:
    messages = convo('[[pace:1]] Tell me about édge & "quotes" 🌍')
    response = post(runtime, {"messages": messages, "model": model})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.headers["cache-control"] == "no-cache, no-transform"
    assert response.headers["x-accel-buffering"] == "no"
    assert response.content == expected_wire(messages)
    call = runtime.last_call()
    assert call["model"] == model
    assert call["inputs"] == {
        "messages": messages,
        "stream": True,
        "max_tokens": 1024,
        **THINKING_OFF[model],
    }
    # wrangler.toml names a fallback model: the asked one may fail at once when busy (3040).
    assert call["options"] == {"rejectIfBusy": True}
    assert call["clientClosedAt"] is None and call["finishedAt"] is not None


@pytest.mark.parametrize("model", [NATIVE, OPENAI_SHAPED])
def test_max_tokens_is_passed_and_a_cut_answer_says_length(runtime: Runtime, model: str) -> None:
    messages = convo("[[pace:0]] count")
    events = parse_sse(
        post(runtime, {"messages": messages, "model": model, "max_tokens": 3}).content
    )
    texts = [data["text"] for name, data in events if name == "content_block_delta"]  # type: ignore[index]
    assert texts == expected_tokens(messages)[:3]
    prompt = expected_usage(messages)["prompt_tokens"]
    assert events[-2] == (
        "message_stop",
        {
            "stop_reason": "length",
            "usage": {"prompt_tokens": prompt, "completion_tokens": 3, "total_tokens": prompt + 3},
        },
    )
    assert runtime.last_call()["inputs"]["max_tokens"] == 3


def test_events_arrive_spread_out_at_the_model_pace(runtime: Runtime) -> None:
    arrivals: list[float] = []
    reads = 0  # reads of the body that brought at least one delta
    with (
        runtime.client() as client,
        client.stream("POST", "/api/v1/chat", json={"messages": convo("[[pace:30]] pace me")}) as r,
    ):
        buffer = b""
        for chunk in r.iter_raw():
            buffer += chunk
            reads += b"event: content_block_delta" in chunk
            while b"\n\n" in buffer:
                block, buffer = buffer.split(b"\n\n", 1)
                if block.startswith(b"event: content_block_delta"):
                    arrivals.append(time.monotonic())
    n = len(arrivals)
    assert n == len(expected_tokens(convo("[[pace:30]] pace me")))
    span = arrivals[-1] - arrivals[0]
    # 30 ms per token: at least half of the ideal spread, so nothing was buffered to the end (a
    # lower bound: a busy machine makes the answer longer, not shorter).
    assert span >= 0.5 * 0.030 * (n - 1), span
    # Read by windows (streaming/window.py), tokens at 33 a second come out in twos and threes
    # at most: still spread over the answer, in several reads (counted: how long each waited
    # is the window policy's, on a synthetic clock, and the bench's).
    assert reads >= 3, (reads, n)


def disconnect_after(runtime: Runtime, text: str, events: int) -> dict[str, Any]:
    """Read `events` deltas, then leave; returns the model's record."""
    with (
        runtime.client() as client,
        client.stream("POST", "/api/v1/chat", json={"messages": convo(text)}) as r,
    ):
        assert r.status_code == 200
        seen = 0
        for chunk in r.iter_raw():
            seen += chunk.count(b"event: content_block_delta")
            if seen >= events:
                break
    return runtime.wait_for(
        lambda c: c["clientClosedAt"] is not None or c["finishedAt"] is not None
    )


def test_disconnect_closes_the_model_connection_and_nothing_follows(runtime: Runtime) -> None:
    for _ in range(5):
        call = disconnect_after(runtime, "[[pace:40]] [[tokens:200]] long answer please", 3)
        assert_stopped(call)
        time.sleep(0.15)  # longer than a token: a frame written after the close would show now
        assert runtime.calls()[-1]["chunksSent"] == call["chunksAtClose"]


FAULTS = {
    "midstream": ("error", "upstream_error"),
    "stall": ("error", "upstream_timeout"),
    "nodone": ("error", "upstream_incomplete"),
    "malformed": ("message_stop", None),
}


@pytest.mark.parametrize("model", [NATIVE, OPENAI_SHAPED])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault_modes_end_in_their_terminal_events(runtime: Runtime, model: str, fault: str) -> None:
    messages = convo(f"[[fault:{fault}]] [[pace:2]] go")
    response = post(runtime, {"messages": messages, "model": model})
    assert response.status_code == 200
    events = parse_sse(response.content)
    texts = [data["text"] for name, data in events if name == "content_block_delta"]  # type: ignore[index]
    tokens = expected_tokens(messages)
    assert events[-1] == ("done", {})
    name, code = FAULTS[fault]
    assert events[-2][0] == name
    if code:
        assert events[-2][1]["error"] == code  # type: ignore[index]
    expected_count = {"midstream": 3, "stall": 2}.get(fault, len(tokens))
    assert texts == tokens[:expected_count]
    if fault == "stall":
        assert (":", "ping") in events
        call = runtime.wait_for(lambda c: c["clientClosedAt"] is not None)
        assert_stopped(call)


@pytest.mark.parametrize("model", [NATIVE, OPENAI_SHAPED])
@pytest.mark.parametrize(
    "wire",
    [
        "[[fault:split]] [[pace:1]]",  # frames re-cut at random bytes
        "[[wire:eof]] [[pace:0]]",  # no chunked framing: many frames in one read
    ],
)
def test_frames_split_or_joined_anywhere_give_the_same_answer(
    runtime: Runtime, model: str, wire: str
) -> None:
    messages = convo(f"{wire} ünïcode ✓ split")
    response = post(runtime, {"messages": messages, "model": model})
    assert response.content == expected_wire(messages), (wire, model, response.content[:300])


def test_a_whole_answer_instead_of_a_stream_is_relayed_as_one_delta(runtime: Runtime) -> None:
    messages = convo("[[fault:nostream]] all at once")
    events = parse_sse(post(runtime, {"messages": messages}).content)
    usage = expected_usage(messages)
    assert events == [
        ("content_block_delta", {"index": 0, "text": "".join(expected_tokens(messages))}),
        ("message_stop", {"stop_reason": "stop", "usage": usage}),
        ("done", {}),
    ]


def test_a_model_that_never_answers_is_a_504_at_the_idle_limit_and_its_call_is_closed(
    runtime: Runtime,
) -> None:
    """run() raced against a JS timer (UPSTREAM_TIMEOUT_SECONDS, 3 s here), cleared once run()
    answers; on the timer, the handler returns and workerd closes the model's connection."""
    started = time.monotonic()
    response = post(runtime, {"messages": convo("[[fault:hang]] hello?")})
    took = time.monotonic() - started
    assert response.status_code == 504, response.text
    assert response.json()["error"] == "upstream_timeout", response.text
    # Not before the limit (a lower bound: a busy machine only makes it later); the message
    # above names the limit that ended it.
    assert took > IDLE_LIMIT * 0.8, f"answered after {took:.2f} s; the limit is {IDLE_LIMIT} s"
    call = runtime.wait_for(lambda c: c["clientClosedAt"] is not None)
    assert call["finishedAt"] is None, call


def test_throw_before_streaming_is_502_without_detail(runtime: Runtime) -> None:
    response = post(runtime, {"messages": convo("[[fault:throw]]")})
    assert response.status_code == 502
    assert response.json() == {
        "error": "upstream_error",
        "message": "The model could not be reached.",
    }


@pytest.mark.parametrize(
    ("name", "ctype", "raw", "status", "code", "needle"), CASES, ids=[c[0] for c in CASES]
)
def test_bad_input_over_http(
    runtime: Runtime, name: str, ctype: str | None, raw: bytes, status: int, code: str, needle: str
) -> None:
    headers = {"content-type": ctype} if ctype else {}
    with runtime.client() as client:
        response = client.post("/api/v1/chat", content=raw, headers=headers)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    body = response.json()
    assert body["error"] == code and needle in body["message"]


def test_oversized_chunked_body_is_refused_without_content_length(runtime: Runtime) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"messages":[{"role":"user","content":"'
        for _ in range(1500):  # 6.1 MB > the 5.7 MB default (AI_MODELS' largest window and images)
            yield b"x" * 4096
        yield b'"}]}'

    with runtime.client() as client:
        response = client.post(
            "/api/v1/chat", content=chunks(), headers={"content-type": "application/json"}
        )
    assert response.status_code == 413
    assert response.json()["error"] == "body_too_large"


def test_chunked_body_is_refused_while_it_is_still_arriving(runtime: Runtime) -> None:
    """Past the limit the Worker refuses the body (413) and keeps none of the rest: it reads and
    drops it before answering, so that a client that sends all first still reads the 413 (a
    body that never ends is answered at its deadline: tests/test_checks/test_upload_http.py)."""
    host, port = runtime.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(
            b"POST /api/v1/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        piece = b"x" * 8192
        for _ in range(800):  # 6.5 MB > the 5.7 MB default
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        sock.sendall(b"0\r\n\r\n")
        sock.settimeout(5)
        received = b""
        while b"body_too_large" not in received and (data := sock.recv(4096)):
            received += data
    assert received.startswith(b"HTTP/1.1 413 "), received[:200]
    assert b'"error": "body_too_large"' in received


def test_routes_methods_and_models(runtime: Runtime) -> None:
    with runtime.client() as client:
        assert client.get("/api/v1/nope").json()["error"] == "not_found"
        wrong = client.put("/api/v1/chat")
        assert (wrong.status_code, wrong.headers["allow"]) == (405, "POST, OPTIONS")
        listed = client.get("/api/v1/models").json()
        # Each model's reasoning_control: tests/test_workers_ai/test_thinking_http.py.
        for caps in listed["capabilities"].values():
            assert caps.pop("reasoning_control")["kind"] in ("switch", "effort", "none"), caps
        assert listed == {
            "models": [NATIVE, FAST, OPENAI_SHAPED, GLM],
            "default": NATIVE,
            "reasoning": [OPENAI_SHAPED, GLM],
            "capabilities": {
                NATIVE: {
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
                OPENAI_SHAPED: {
                    "context_window": 128_000,
                    "vision": False,
                    "tools": True,
                    "reasoning": True,
                    "paid_plan": False,
                },
                GLM: {
                    "context_window": 131_072,
                    "vision": False,
                    "tools": True,
                    "reasoning": True,
                    "paid_plan": False,
                },
            },
            "thinking": "off",
            "limits": {
                "max_messages": 1000,
                "max_message_chars": 1_000_000,
                "max_body_bytes": 5_730_304,
                "max_images": 8,
                "max_image_bytes": 3_145_728,
                "max_tokens_limit": 4096,
                "default_max_tokens": 1024,
            },
            "conversations": True,
            # wrangler.toml's [vars]: the owner's title, no system prompt, four suggestions.
            "page": {
                "title": "AI chat",
                "system_prompt": "",
                "suggestions": [
                    "Explain how rainbows form",
                    "Write a haiku about the sea",
                    "Help me plan a week of dinners",
                    "What is a Durable Object?",
                ],
            },
            "version": "0.2.0",
        }
        page = client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")


def test_kill_switch_flips_on_the_next_request(runtime: Runtime) -> None:
    """A dashboard change is a new version: the launcher restarts workerd with the new vars."""
    before = len(runtime.calls())
    try:
        for value, status in [("1", 503), ("0", 200), (None, 200)]:
            runtime.set_vars(AI_CHAT_DISABLED=value)
            response = post(runtime, {"messages": convo("[[pace:0]] hi")})
            assert response.status_code == status
            if status == 503:
                assert response.json()["error"] == "ai_unavailable"
        # As deployed: no wrangler.toml environment sets LOCAL_DEV_STATS (test_wrangler_config).
        runtime.set_vars(AI_CHAT_DISABLED="1", LOCAL_DEV_STATS=None)
        # A client each: the 503 comes before the body is read, and workerd then closes that
        # connection, so a kept-alive socket may be reset under a second request (seen under load).
        with runtime.client() as client:
            assert client.post("/api/v1/chat", content=b"{broken").status_code == 503
        with runtime.client() as client:
            assert client.get("/api/v1/models").status_code == 503
            hidden = client.get("/__local/stats")
            assert hidden.status_code == 404 and b"live" not in hidden.content, hidden.content[:200]
    finally:
        runtime.set_vars(AI_CHAT_DISABLED=None, LOCAL_DEV_STATS="1")
    assert len(runtime.calls()) == before + 2, "a 503 must come before any model call"


def test_leaving_before_the_first_token_stops_the_model(runtime: Runtime) -> None:
    assert_stopped(disconnect_after(runtime, "[[pace:300]] slow", 0))


def test_every_ending_releases_every_proxy(runtime: Runtime) -> None:
    """done, error, timeout, incomplete, cancel, non-streamed and a pre-stream 502."""
    before = runtime.stats()
    for text in [
        "[[pace:0]] done",
        "[[fault:midstream]] [[pace:0]] x",
        "[[fault:stall]] [[pace:0]] x",
        "[[fault:nodone]] [[pace:0]] x",
        "[[fault:nostream]] x",
        "[[fault:throw]] x",
    ]:
        post(runtime, {"messages": convo(text)})
    disconnect_after(runtime, "[[pace:50]] cut", 1)
    deadline = time.monotonic() + 3
    while (after := runtime.stats())["live"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert after["live"] == 0
    assert after["created"] - before["created"] == after["destroyed"] - before["destroyed"]
    assert after["created"] > before["created"]


async def one_stream(client: httpx.AsyncClient, i: int, cancel: bool) -> str | None:
    """None when stream i went as it should; else what differed."""
    messages = convo(f"[[pace:1]] stream {i}")
    raw = b""
    try:
        async with client.stream("POST", "/api/v1/chat", json={"messages": messages}) as r:
            if r.status_code != 200:
                return f"stream {i}: status {r.status_code}: {(await r.aread())[:200]!r}"
            async for chunk in r.aiter_raw():
                raw += chunk
                if cancel and raw.count(b"content_block_delta") >= 2:
                    return None
    except httpx.HTTPError as exc:
        return f"stream {i}: {exc!r} after {len(raw)} bytes: ...{raw[-120:]!r}"
    want = expected_wire(messages)
    if raw == want:
        return None
    at = next(
        (k for k, (a, b) in enumerate(zip(raw, want, strict=False)) if a != b),
        min(len(raw), len(want)),
    )
    return f"stream {i}: {len(raw)} bytes, wanted {len(want)}; first difference at byte {at}: got {raw[at : at + 80]!r}, wanted {want[at : at + 80]!r}"


def failures(results: list[str | None]) -> list[str]:
    return [r for r in results if r is not None]


def test_fifty_concurrent_streams_all_complete(runtime: Runtime) -> None:
    async def main() -> list[str | None]:
        async with httpx.AsyncClient(
            base_url=runtime.url, timeout=30, limits=httpx.Limits(max_connections=60)
        ) as client:
            return await asyncio.gather(*(one_stream(client, i, False) for i in range(50)))

    assert failures(asyncio.run(main())) == []


def test_five_hundred_streams_half_cancelled_leak_nothing(runtime: Runtime) -> None:
    async def batch(start: int) -> list[str | None]:
        async with httpx.AsyncClient(base_url=runtime.url, timeout=30) as client:
            return await asyncio.gather(
                *(one_stream(client, i, i % 2 == 1) for i in range(start, start + 50))
            )

    async def run(n: int) -> list[str]:
        return [f for start in range(0, n, 50) for f in failures(await batch(start))]

    assert asyncio.run(run(100)) == []
    time.sleep(0.3)
    before = runtime.stats()
    assert asyncio.run(run(500)) == []
    deadline = time.monotonic() + 5
    while (after := runtime.stats())["live"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert after["live"] == 0, after
    assert after["created"] == after["destroyed"], after
    grown_objects = after["py_objects"] - before["py_objects"]
    grown_wasm = after["wasm_memory_bytes"] - before["wasm_memory_bytes"]
    print(
        f"\n500 streams: {grown_objects:+d} Python objects, {grown_wasm / 1e6:+.1f} MB Wasm memory; stats {after}"
    )
    assert grown_objects < 2000, (before, after)
    assert grown_wasm <= 16 * 2**20, (before, after)


def test_clients_leaving_after_the_last_event_leave_no_relay_alive(runtime: Runtime) -> None:
    """300 one-token streams, 32 at once, each client dropping its connection as soon as it
    has the final event: after a collection no RelayPipe or Relay may be alive.

    Measured on workerd (bench/notes/2026-11-24-soak.md): for such clients the body writer's
    `closed` may never settle, and a Python callback handed to it kept the whole pipe alive,
    for about 5 in 100 of them."""

    async def one(client: httpx.AsyncClient, i: int) -> str | None:
        text = f"[[pace:0]] [[tokens:1]] last-event {i}"
        raw = b""
        async with client.stream("POST", "/api/v1/chat", json={"messages": convo(text)}) as r:
            if r.status_code != 200:
                return f"stream {i}: status {r.status_code}"
            async for chunk in r.aiter_raw():
                raw += chunk
                if b"message_stop" in raw:
                    return None
        return f"stream {i}: ended without message_stop: {raw[-120:]!r}"

    async def main() -> list[str | None]:
        async with httpx.AsyncClient(
            base_url=runtime.url, timeout=30, limits=httpx.Limits(max_connections=32)
        ) as client:
            sem = asyncio.Semaphore(32)

            async def bounded(i: int) -> str | None:
                async with sem:
                    return await one(client, i)

            return await asyncio.gather(*(bounded(i) for i in range(300)))

    assert failures(asyncio.run(main())) == []
    ours = ("RelayPipe", "Relay", "UpstreamDecoder")
    deadline = time.monotonic() + 15
    while True:
        stats = runtime.stats()  # after a gc.collect() in the Worker
        alive = {name: stats["py_types"].get(name, 0) for name in ours}
        if (not stats["live"] and not any(alive.values())) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert alive == dict.fromkeys(ours, 0), (
        f"ended relays still alive after collection: {alive} (live {stats['live']},"
        f" relays {stats['relays']}, ended {stats['relays_ended']})"
    )


def test_clients_leaving_while_others_stream_close_their_upstreams(runtime: Runtime) -> None:
    """24 streams at once, half leaving after their first delta of a slow 200-token answer: every
    leaver's model connection closes before the answer's end, every other stream completes.

    Measured on workerd: with many streams at once, request.signal reaches the Worker for only a
    few of the leavers, and a TransformStream's cancel() hardly ever; the old pipe closed 5 of
    50 upstreams at 25 at once (bench/RESULTS.md). The body writer's `closed` is what tells."""

    async def one(client: httpx.AsyncClient, i: int) -> str | None:
        leaves = i % 2 == 1
        tag = f"leaver-{i}" if leaves else f"stayer-{i}"
        text = f"[[pace:10]] [[tokens:200]] {tag}" if leaves else f"[[pace:2]] [[tokens:20]] {tag}"
        raw = b""
        async with client.stream("POST", "/api/v1/chat", json={"messages": convo(text)}) as r:
            if r.status_code != 200:
                return f"{tag}: status {r.status_code}"
            async for chunk in r.aiter_raw():
                raw += chunk
                if leaves and b"content_block_delta" in raw:
                    return None
        return (
            None
            if raw.endswith(b"event: done\ndata: {}\n\n")
            else f"{tag}: ended with {raw[-120:]!r}"
        )

    async def main() -> list[str | None]:
        async with httpx.AsyncClient(
            base_url=runtime.url, timeout=30, limits=httpx.Limits(max_connections=30)
        ) as client:
            return await asyncio.gather(*(one(client, i) for i in range(24)))

    assert failures(asyncio.run(main())) == []
    deadline = time.monotonic() + 3  # a missed cancel would run on for 2 s, to the answer's end
    while True:
        calls = {
            c["inputs"]["messages"][-1]["content"].split()[-1]: c for c in runtime.calls()[-24:]
        }
        leavers = {tag: c for tag, c in calls.items() if tag.startswith("leaver-")}
        open_ = [
            tag
            for tag, c in leavers.items()
            if c["clientClosedAt"] is None and c["finishedAt"] is None
        ]
        if not open_ or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(leavers) == 12, sorted(calls)
    ran_on = {
        tag: (c["chunksAtClose"], c["chunksTotal"])
        for tag, c in leavers.items()
        if c["clientClosedAt"] is None
    }
    assert ran_on == {}, (
        f"upstreams read to the end (or still open) after their client left: {ran_on}"
    )
    for c in leavers.values():
        assert_stopped(c)
    deadline = time.monotonic() + 3
    while (stats := runtime.stats())["live"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stats["live"] == 0 and stats["created"] == stats["destroyed"], stats
