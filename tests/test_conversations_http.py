"""Durable conversations on workerd, through its own Ai class and Durable Objects (SQLite on
disk): resume after a disconnect, two readers, the grace period, stop, a restart, 404 and 409."""

from __future__ import annotations

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


@pytest.fixture(scope="module")
def durable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    store: Path = tmp_path_factory.mktemp("durable-objects")
    rt = start_runtime("--persist", str(store), vars={"RESUME_GRACE_SECONDS": str(GRACE)})
    yield rt
    rt.stop()


def create(rt: Runtime) -> str:
    response = httpx.post(rt.url + BASE, timeout=10)
    assert response.status_code == 201, response.text
    id = response.json()["id"]
    assert re.fullmatch("[0-9a-f]{32}", id), id
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


def whole_turn(rt: Runtime, id: str, content: str, **extra: Any) -> list[tuple[str, str, str]]:
    response = httpx.post(
        f"{rt.url}{BASE}/{id}/messages", json={"content": content, **extra}, timeout=30
    )
    assert response.status_code == 200, response.text
    return events(response.content)


def texts(evs: list[tuple[str, str, str]]) -> str:
    import json

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
    waited = call["clientClosedAt"] - left
    assert GRACE * 1000 * 0.8 < waited < GRACE * 1000 + 5000, (
        f"stopped {waited:.0f} ms after the reader left"
    )
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
    got = httpx.get(f"{durable.url}{BASE}/{id}", timeout=10).json()
    assert got == {"id": id, "messages": history, "streaming": False}
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
