"""Durable conversations on workerd, through its own Ai class and Durable Objects (SQLite on
disk): resume after a disconnect, two readers, the grace period, stop, a restart, 404 and 409;
and what an attacker or a careless client tries (issue 33): messages past SQLite's value limit,
a DELETE racing a message, hostile resume values, a restart mid-turn, the logs."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Runtime, assert_stopped, expected_tokens, start_runtime

pytestmark = pytest.mark.runtime

GRACE = 1.0
BASE = "/api/v1/conversations"


# Every id this module made: none may appear in any line the runtime wrote (the last test).
CREATED: list[str] = []


@pytest.fixture(scope="module")
def durable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    store: Path = tmp_path_factory.mktemp("durable-objects")
    rt = start_runtime(
        "--persist",
        str(store),
        vars={"RESUME_GRACE_SECONDS": str(GRACE)},
        capture_stderr=True,  # workerd's own lines are scanned for ids too
    )
    yield rt
    rt.stop()


def create(rt: Runtime) -> str:
    response = httpx.post(rt.url + BASE, timeout=10)
    assert response.status_code == 201, response.text
    id = response.json()["id"]
    assert re.fullmatch("[0-9a-f]{32}", id), id
    CREATED.append(id)
    return str(id)


def events(raw: bytes) -> list[tuple[str, str, str]]:
    """(id, event, data) of each event; comments (pings) left out."""
    out = []
    for block in raw.decode().split("\n\n")[:-1]:
        if block.startswith(":"):
            continue
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        out.append((lines["id"], lines["event"], lines["data"]))
    return out


def whole_turn(rt: Runtime, id: str, content: Any, **extra: Any) -> list[tuple[str, str, str]]:
    response = httpx.post(
        f"{rt.url}{BASE}/{id}/messages", json={"content": content, **extra}, timeout=30
    )
    assert response.status_code == 200, response.text
    return events(response.content)


def texts(evs: list[tuple[str, str, str]]) -> str:
    return "".join(
        json.loads(data)["text"] for _, name, data in evs if name == "content_block_delta"
    )


def read_some(rt: Runtime, method: str, path: str, count: int, **kwargs: Any) -> bytes:
    """Read until `count` events arrived, then leave (the connection closes)."""
    got = b""
    with (
        httpx.Client(timeout=30) as client,
        client.stream(method, rt.url + path, **kwargs) as response,
    ):
        assert response.status_code == 200
        for chunk in response.iter_raw():
            got += chunk
            if len(events(got)) >= count:
                break
    return got[: got.rindex(b"\n\n") + 2]


def test_a_turn_is_numbered_stored_and_the_history_kept(durable: Runtime) -> None:
    id = create(durable)
    first = whole_turn(durable, id, "[[pace:0]] hello there")
    ids = [i for i, _, _ in first]
    assert ids == [f"1:{n}" for n in range(1, len(first) + 1)], ids
    assert [name for _, name, _ in first][-2:] == ["message_stop", "done"]
    said = [{"role": "user", "content": "[[pace:0]] hello there"}]
    assert texts(first) == "".join(expected_tokens(said))
    whole_turn(durable, id, "[[pace:0]] again")
    conversation = httpx.get(f"{durable.url}{BASE}/{id}", timeout=10).json()
    assert conversation["streaming"] is False and len(conversation["messages"]) == 4
    call = durable.last_call()
    assert call["inputs"]["messages"][:2] == [
        said[0],
        {"role": "assistant", "content": texts(first)},
    ]
    assert call["affinity"] == id, call  # the conversation's id is its session key (issue 24)


def test_a_reader_that_leaves_and_comes_back_gets_every_event_once_in_order(
    durable: Runtime,
) -> None:
    id = create(durable)
    content = "[[pace:60]] tell me slowly"
    before = read_some(durable, "POST", f"{BASE}/{id}/messages", 4, json={"content": content})
    seen = events(before)
    last = seen[-1][0]
    rest = httpx.get(
        f"{durable.url}{BASE}/{id}/stream", headers={"last-event-id": last}, timeout=30
    )
    after = events(rest.content)
    both = seen + after
    assert [i for i, _, _ in both] == [f"1:{n}" for n in range(1, len(both) + 1)], [
        i for i, _, _ in both
    ]
    assert [name for _, name, _ in both][-2:] == ["message_stop", "done"]
    assert texts(both) == "".join(expected_tokens([{"role": "user", "content": content}]))
    again = httpx.get(
        f"{durable.url}{BASE}/{id}/stream?after={last}", timeout=10
    )  # after the end: the same rest, stored
    assert events(again.content) == after


def test_two_readers_get_identical_streams(durable: Runtime) -> None:
    id = create(durable)
    second: list[bytes] = []

    def join() -> None:  # once the answer is being written: polled, for a loaded machine
        deadline = time.monotonic() + 20
        while (
            not httpx.get(f"{durable.url}{BASE}/{id}", timeout=10).json()["streaming"]
            and time.monotonic() < deadline
        ):
            time.sleep(0.02)
        second.append(httpx.get(f"{durable.url}{BASE}/{id}/stream", timeout=30).content)

    joiner = threading.Thread(target=join)
    joiner.start()
    first = httpx.post(
        f"{durable.url}{BASE}/{id}/messages",
        json={"content": "[[tokens:40]] [[pace:50]] for two"},
        timeout=30,
    ).content
    joiner.join()
    assert events(first) == events(second[0]), (first[-200:], second[0][-200:])


def test_no_reader_past_the_grace_stops_the_model(durable: Runtime) -> None:
    id = create(durable)
    read_some(
        durable,
        "POST",
        f"{BASE}/{id}/messages",
        2,
        json={"content": "[[tokens:200]] [[pace:50]] long"},
    )
    left = time.time() * 1000
    call = durable.wait_for(lambda c: c["clientClosedAt"] is not None, timeout=GRACE + 10)
    assert_stopped(call)
    # A lower bound only (the turn went on through its grace; a loaded machine only makes
    # it later): that it stops at all is the wait_for above, polled with a generous limit.
    waited = call["clientClosedAt"] - left
    assert waited > GRACE * 1000 * 0.8, f"stopped {waited:.0f} ms after the reader left"
    rest = events(httpx.get(f"{durable.url}{BASE}/{id}/stream", timeout=10).content)
    assert [(name, data) for _, name, data in rest][-2:] == [
        ("message_stop", '{"stop_reason":"cancelled"}'),
        ("done", "{}"),
    ]


def test_stop_ends_the_turn_and_the_model_call(durable: Runtime) -> None:
    id = create(durable)
    stopper = threading.Timer(0.5, lambda: httpx.post(f"{durable.url}{BASE}/{id}/stop", timeout=10))
    stopper.start()
    turn = whole_turn(durable, id, "[[tokens:200]] [[pace:50]] stop me")
    stopper.join()
    assert [(name, data) for _, name, data in turn][-2:] == [
        ("message_stop", '{"stop_reason":"cancelled"}'),
        ("done", "{}"),
    ]
    assert_stopped(durable.wait_for(lambda c: c["closedAt"] is not None))
    assert httpx.post(f"{durable.url}{BASE}/{id}/stop", timeout=10).json() == {"stopped": False}


def test_a_message_while_a_turn_runs_is_409_and_unknown_ids_are_404(durable: Runtime) -> None:
    id = create(durable)
    slow = threading.Thread(
        target=lambda: whole_turn(durable, id, "[[tokens:30]] [[pace:40]] busy")
    )
    slow.start()
    time.sleep(0.5)
    busy = httpx.post(f"{durable.url}{BASE}/{id}/messages", json={"content": "me too"}, timeout=10)
    slow.join()
    assert (busy.status_code, busy.json()["error"]) == (409, "turn_in_progress")
    unknown = "0" * 32
    for method, path in [("GET", ""), ("GET", "/stream"), ("POST", "/stop")]:
        response = httpx.request(method, f"{durable.url}{BASE}/{unknown}{path}", timeout=10)
        assert (response.status_code, response.json()["error"]) == (404, "not_found"), (
            method,
            path,
            response.text,
        )
    assert httpx.get(f"{durable.url}{BASE}/not-an-id", timeout=10).status_code == 404
    bad = httpx.post(f"{durable.url}{BASE}/{id}/messages", json={"content": " "}, timeout=10)
    assert (bad.status_code, bad.json()) == (
        400,
        {"error": "invalid_field", "message": "content: must not be empty"},
    )


def test_history_survives_a_restart_and_delete_forgets_it(durable: Runtime) -> None:
    id = create(durable)
    whole_turn(durable, id, "[[pace:0]] remember me")
    before = httpx.get(f"{durable.url}{BASE}/{id}", timeout=10).json()
    durable.set_vars(RESUME_GRACE_SECONDS=str(GRACE + 0.5))  # a new version: workerd restarts
    assert httpx.get(f"{durable.url}{BASE}/{id}", timeout=30).json() == before
    assert httpx.delete(f"{durable.url}{BASE}/{id}", timeout=10).status_code == 204
    assert httpx.get(f"{durable.url}{BASE}/{id}", timeout=10).status_code == 404


def test_readers_resuming_again_and_again_mid_turn_get_every_event_once(durable: Runtime) -> None:
    """Events are stored in batches: a reader that resumes while some are held must still get
    each one once, in order (the object stores what it holds before it replays)."""
    id = create(durable)
    content = "[[tokens:300]] [[pace:3]] batch me"
    seen = events(read_some(durable, "POST", f"{BASE}/{id}/messages", 2, json={"content": content}))
    resumes = 0
    while seen[-1][1] != "done":
        more = read_some(
            durable, "GET", f"{BASE}/{id}/stream", 3, headers={"last-event-id": seen[-1][0]}
        )
        seen += events(more)
        resumes += 1
        assert resumes < 400, "the turn never ended"
    assert [i for i, _, _ in seen] == [f"1:{n}" for n in range(1, len(seen) + 1)], [
        i for i, _, _ in seen
    ]
    stored = events(httpx.get(f"{durable.url}{BASE}/{id}/stream", timeout=10).content)
    assert seen == stored, "what the readers got is not the stored answer"
    assert sum(name == "content_block_delta" for _, name, _ in seen) == 300
    assert resumes >= 5, resumes


def test_a_conversation_can_start_from_a_history(durable: Runtime) -> None:
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "an answer"},
    ]
    response = httpx.post(durable.url + BASE, json={"messages": history}, timeout=10)
    assert response.status_code == 201, response.text
    id = response.json()["id"]
    CREATED.append(id)
    got = httpx.get(f"{durable.url}{BASE}/{id}", timeout=10).json()
    # bytes: each content as stored JSON ("Be brief." is 11), as MAX_CONVERSATION_BYTES counts
    assert got == {"id": id, "messages": history, "streaming": False, "bytes": 11 + 7 + 11}
    turn = whole_turn(durable, id, "[[pace:0]] and then")
    said = [*history, {"role": "user", "content": "[[pace:0]] and then"}]
    assert durable.last_call()["inputs"]["messages"] == said
    assert texts(turn) == "".join(expected_tokens(said))
    bad = httpx.post(
        durable.url + BASE, json={"messages": [{"role": "tool", "content": "x"}]}, timeout=10
    )
    assert (bad.status_code, bad.json()["error"]) == (400, "invalid_field"), bad.text
    unknown = httpx.post(durable.url + BASE, json={"messages": history, "x": 1}, timeout=10)
    assert (unknown.status_code, unknown.json()["error"]) == (400, "unknown_field"), unknown.text


def test_a_create_with_an_empty_object_or_a_model_is_an_empty_conversation(
    durable: Runtime,
) -> None:
    """What clients that create a conversation first send (issue 34): 201, then a turn."""
    model = httpx.get(durable.url + "/api/v1/models", timeout=10).json()["default"]
    for body in ({}, {"model": model}):
        response = httpx.post(durable.url + BASE, json=body, timeout=10)
        assert response.status_code == 201, (body, response.text)
        id = response.json()["id"]
        CREATED.append(id)
        got = httpx.get(f"{durable.url}{BASE}/{id}", timeout=10).json()
        assert got == {"id": id, "messages": [], "streaming": False, "bytes": 0}, got
    assert texts(whole_turn(durable, id, "[[pace:0]] first")) != ""
    bad = httpx.post(durable.url + BASE, json={"model": "nope"}, timeout=10)
    assert (bad.status_code, bad.json()["error"]) == (400, "unknown_model"), bad.text


def test_delete_mid_turn_stops_the_model_and_forgets_everything(durable: Runtime) -> None:
    id = create(durable)
    got: list[list[tuple[str, str, str]]] = []
    reader = threading.Thread(
        target=lambda: got.append(whole_turn(durable, id, "[[tokens:200]] [[pace:50]] delete me"))
    )
    reader.start()
    deadline = time.monotonic() + 20
    while not httpx.get(f"{durable.url}{BASE}/{id}", timeout=10).json()["streaming"]:
        assert time.monotonic() < deadline, "the answer never started"
        time.sleep(0.02)
    time.sleep(0.3)
    assert httpx.delete(f"{durable.url}{BASE}/{id}", timeout=10).status_code == 204
    assert_stopped(durable.wait_for(lambda c: c["closedAt"] is not None, timeout=10))
    reader.join(timeout=30)
    assert [(name, data) for _, name, data in got[0]][-2:] == [  # its reader saw it end
        ("message_stop", '{"stop_reason":"cancelled"}'),
        ("done", "{}"),
    ]
    time.sleep(0.2)  # past a batch's hold: nothing written after the delete brings it back
    assert httpx.get(f"{durable.url}{BASE}/{id}", timeout=10).status_code == 404
    # The object still works for the next conversation with this binding.
    again = create(durable)
    assert texts(whole_turn(durable, again, "[[pace:0]] still fine")) != ""


# --- what an attacker or a careless client tries (issue 33) ----------------------------------


def png(size: int, seed: int = 0) -> str:
    """A data URL of `size` bytes that start as a PNG does (what the magic-bytes check reads)."""
    data = b"\x89PNG\r\n\x1a\n" + random.Random(seed).randbytes(size - 8)
    return "data:image/png;base64," + base64.b64encode(data).decode()


def test_a_2_5_mb_image_and_2_8_mb_of_text_are_stored_and_answered(durable: Runtime) -> None:
    """Past a Durable Object's SQLite value limit (2,200,000 bytes, measured): each was a 500
    whose model call ran on for nobody."""
    id = create(durable)
    image = png(2_500_000, seed=1)
    largest = png(3 * 1024 * 1024, seed=2)  # MAX_IMAGE_BYTES itself
    sent = []
    for url in (image, largest):
        sent.append(
            [
                {"type": "text", "text": "[[pace:0]] what is this?"},
                {"type": "image_url", "image_url": {"url": url}},
            ]
        )
        turn = whole_turn(durable, id, sent[-1])
        assert [name for _, name, _ in turn][-2:] == ["message_stop", "done"]
        assert (
            durable.last_call()["inputs"]["messages"][-1]["content"][1]["image_url"]["url"] == url
        )
    got = httpx.get(f"{durable.url}{BASE}/{id}", timeout=30).json()
    assert [m["role"] for m in got["messages"]] == ["user", "assistant"] * 2
    assert [got["messages"][0]["content"], got["messages"][2]["content"]] == sent
    assert got["bytes"] > 3_333_000 + 4_194_000, got["bytes"]

    # The built-in model echoes the message in one token: a 2.8 MB event, a 2.8 MB answer.
    other = create(durable)
    text = "[[pace:0]] " + "🌍" * 700_000  # 2.8 MB of UTF-8
    turn = whole_turn(durable, other, text)
    assert [name for _, name, _ in turn][-2:] == ["message_stop", "done"]
    got = httpx.get(f"{durable.url}{BASE}/{other}", timeout=30).json()
    assert got["messages"][0]["content"] == text
    assert got["messages"][1]["content"] == texts(turn) and len(texts(turn)) > 700_000
    # Twice that is past the model's context window: refused before the call, nothing kept.
    calls = len(durable.calls())
    again = httpx.post(
        f"{durable.url}{BASE}/{other}/messages", json={"content": "more"}, timeout=30
    )
    assert (again.status_code, again.json()["error"]) == (400, "context_length_exceeded")
    assert len(durable.calls()) == calls
    assert httpx.get(f"{durable.url}{BASE}/{other}", timeout=30).json() == got


def test_a_delete_racing_a_message_never_500s_or_leaves_a_model_call_running(
    durable: Runtime,
) -> None:
    """A DELETE 0-55 ms after a message (and, every other time, a stop just before it): the
    message is answered (its end is a cancel) or 404, and every model call it opened is closed
    before its end."""
    first_call = max((c["id"] for c in durable.calls()), default=0)

    def send(id: str, got: list[httpx.Response]) -> None:
        got.append(
            httpx.post(
                f"{durable.url}{BASE}/{id}/messages",
                json={"content": "[[tokens:300]] [[pace:20]] race me"},
                timeout=30,
            )
        )

    outcomes: list[tuple[float, int, int, bytes]] = []
    for i in range(24):
        id = create(durable)
        delay = (i % 12) * 0.005
        got: list[httpx.Response] = []
        sender = threading.Thread(target=send, args=(id, got))
        sender.start()
        time.sleep(delay)
        if i % 2:
            stopped = httpx.post(f"{durable.url}{BASE}/{id}/stop", timeout=10)
            assert stopped.status_code in (200, 404), stopped.text
        gone = httpx.delete(f"{durable.url}{BASE}/{id}", timeout=10)
        sender.join(timeout=30)
        outcomes.append((delay, got[0].status_code, gone.status_code, got[0].content))
    for delay, status, deleted, body in outcomes:
        assert deleted == 204 and status in (200, 404), (delay, status, deleted, body[-300:])
        if status == 200:
            assert [(n, d) for _, n, d in events(body)][-2:] == [
                ("message_stop", '{"stop_reason":"cancelled"}'),
                ("done", "{}"),
            ], (delay, body[-300:])
    raced = [c for c in durable.calls() if c["id"] > first_call]
    deadline = time.monotonic() + 10
    while any(c["closedAt"] is None for c in raced) and time.monotonic() < deadline:
        time.sleep(0.05)
        raced = [c for c in durable.calls() if c["id"] > first_call]
    for call in raced:
        assert_stopped(call)
    print(
        f"\n{len(outcomes)} races: {sum(s == 200 for _, s, _, _ in outcomes)} answered (cancelled), "
        f"{sum(s == 404 for _, s, _, _ in outcomes)} 404; {len(raced)} model calls, all closed early"
    )


@pytest.mark.parametrize(
    "value",
    [
        "%00",
        "%0d%0a",
        "1:2%0d%0aX-Injected:%201",
        "%ff",
        "1:",
        ":",
        "x",
        "1:2:3",
        "-1:2",
        "1:" + "9" * 13,
        "%E2%80%A8",
        "1%3A2%00",
    ],
)
def test_a_hostile_resume_value_is_400_before_it_reaches_a_header(
    durable: Runtime, value: str
) -> None:
    id = create(durable)
    for target in (id, "f" * 32):
        response = httpx.get(f"{durable.url}{BASE}/{target}/stream?after={value}", timeout=10)
        assert (response.status_code, response.json()) == (
            400,
            {
                "error": "invalid_field",
                "message": "after: must be the id of an event of this conversation, <turn>:<seq> (e.g. 2:17)",
            },
        ), (target, value, response.text)
    header = httpx.get(
        f"{durable.url}{BASE}/{id}/stream", headers={"last-event-id": "1:x"}, timeout=10
    )
    assert (header.status_code, header.json()["message"].split(":")[0]) == (400, "Last-Event-ID")
    fine = httpx.get(f"{durable.url}{BASE}/{'f' * 32}/stream?after=1:2", timeout=10)
    assert (fine.status_code, fine.json()["error"]) == (404, "not_found")


def test_a_resume_past_the_end_of_an_answer_ends_with_done(durable: Runtime) -> None:
    id = create(durable)
    turn = whole_turn(durable, id, "[[pace:0]] short")
    last = turn[-1][0]
    for headers, query in (({"last-event-id": last}, ""), ({}, "?after=1:999")):
        rest = httpx.get(f"{durable.url}{BASE}/{id}/stream{query}", headers=headers, timeout=10)
        assert (rest.status_code, rest.content) == (200, b"event: done\ndata: {}\n\n")


def test_a_restart_mid_turn_keeps_the_partial_answer(durable: Runtime) -> None:
    id = create(durable)
    content = "[[tokens:400]] [[pace:25]] cut me off"
    read: list[bytes] = []

    def reader() -> None:  # attached until the runtime goes away under it
        try:
            with httpx.stream(
                "POST", f"{durable.url}{BASE}/{id}/messages", json={"content": content}, timeout=60
            ) as response:
                for chunk in response.iter_raw():
                    read.append(chunk)
        except httpx.HTTPError:
            pass

    thread = threading.Thread(target=reader)
    thread.start()
    deadline = time.monotonic() + 20
    while len(events(b"".join(read))) < 20:
        assert time.monotonic() < deadline, "the answer never started"
        time.sleep(0.02)
    durable.set_vars(ENVIRONMENT="restarted-mid-turn")  # a new version: workerd restarts
    thread.join(timeout=30)
    got = httpx.get(f"{durable.url}{BASE}/{id}", timeout=30).json()
    assert got["streaming"] is False
    assert [m["role"] for m in got["messages"]] == ["user", "assistant"], got["messages"]
    replay = httpx.get(f"{durable.url}{BASE}/{id}/stream", timeout=10).content
    stored = texts(events(replay))
    assert got["messages"][1]["content"] == stored
    seen = b"".join(read)
    assert stored.startswith(texts(events(seen[: seen.rindex(b"\n\n") + 2]))) and len(stored) > 0
    assert [name for _, name, _ in events(replay)][-2:] == ["error", "done"]
    assert '"upstream_incomplete"' in events(replay)[-2][2]
    assert len(stored.split()) < 400  # cut, not finished


def test_no_log_line_contains_a_conversation_id(durable: Runtime) -> None:
    """Last in the module: every id made above, against every line the runtime wrote
    (the Worker's, the objects', workerd's own). Each request line names its conversation by
    the id's keyed hash (LOG_HASH_KEY unset here: its documented default key)."""
    assert len(CREATED) > 40
    time.sleep(1.0)  # the last streams' lines are written when their relays end
    lines = list(durable.log)
    leaked = [line for line in lines for id in CREATED if id in line]
    assert leaked == [], leaked[:5]
    probed = ["0" * 32, "f" * 32]  # the unknown ids asked for above
    hashes = {
        hmac.new(b"ai-chat log ids", id.encode(), hashlib.sha256).hexdigest()[:16]
        for id in CREATED + probed
    }
    routed = [json.loads(line) for line in lines if '"route":"/api/v1/conversations/{id}' in line]
    assert len(routed) > 100 and all(line["conversation"] in hashes for line in routed), routed[:3]
    assert {line["conversation"] for line in routed} == hashes
    print(
        f"\n{len(lines)} lines scanned for {len(CREATED)} ids: none found; {len(routed)} request lines hashed"
    )
