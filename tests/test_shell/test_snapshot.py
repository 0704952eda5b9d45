"""The dedicated memory snapshot a deploy takes of a Python Worker: saved after the top-level
imports, then served from. A JS object kept in a module global fails the save ("Can't serialize
top-level variable"), so saving is itself the check.

Each mode a user meets is a run of its own: `save` is the first `make dev` of a fresh clone (it
saves, then serves from the same process), `load` every later one, `off` the tests' and
`wrangler dev`'s. In each: the runtime named in health, the live catalog, two turns of one
durable conversation (each ends and is stored), and one stream through every door."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import pytest
from conftest import Runtime, expected_tokens, expected_wire, start_runtime

pytestmark = pytest.mark.runtime

GEMMA = "@cf/google/gemma-4-26b-a4b-it"
# What the first run logged when the catalog call lost its JS `this`.
BAD_LINES = ("Illegal invocation", "Traceback", "Pyodide has suffered a fatal error")


@pytest.fixture(scope="module", params=["save", "load", "off"])
def snapshot_run(request: pytest.FixtureRequest) -> Iterator[Runtime]:
    # Module-scoped, in this order: `load` serves the snapshot that `save` has just written.
    rt = start_runtime("--snapshot", request.param, capture_stderr=True)
    try:
        assert rt.ready["snapshot"] == request.param, rt.ready
        yield rt
    finally:
        rt.stop()
    bad = [line for line in rt.log if any(b in line for b in BAD_LINES)]
    assert not bad, f"--snapshot {request.param}: the runtime logged\n" + "\n".join(bad[:10])


def test_health_names_the_running_python_and_pyodide(snapshot_run: Runtime) -> None:
    body = httpx.get(snapshot_run.url + "/api/v1/health", timeout=10).json()
    assert re.fullmatch(r"3\.14\.\d+", body["runtime"]["python"]), body
    assert body["runtime"]["pyodide"] == "314.0.4", body


def test_the_catalog_call_succeeds(snapshot_run: Runtime) -> None:
    with snapshot_run.client() as client:
        assert client.get("/api/v1/models").status_code == 200
        assert client.get("/api/v1/health").json()["catalog"] == "live", (
            "env.AI.models() failed in this mode: "
            + "\n".join(line for line in snapshot_run.log if "models()" in line)[-2000:]
        )


def test_two_turns_of_a_durable_conversation_end_and_are_stored(snapshot_run: Runtime) -> None:
    with snapshot_run.client(timeout=30) as client:
        created = client.post("/api/v1/conversations")
        assert created.status_code == 201, created.text
        base = f"/api/v1/conversations/{created.json()['id']}"
        history: list[dict[str, str]] = []
        for said in ("[[pace:0]] first", "[[pace:0]] second"):
            history.append({"role": "user", "content": said})
            # The stream must end by itself: a read timeout here is the first-run hang.
            turn = client.post(base + "/messages", json={"content": said})
            assert turn.status_code == 200, turn.text
            assert turn.content.endswith(b"event: done\ndata: {}\n\n"), turn.content[-300:]
            history.append({"role": "assistant", "content": "".join(expected_tokens(history))})
        stored = client.get(base).json()
    assert isinstance(stored.pop("bytes", None), int), stored  # what MAX_CONVERSATION_BYTES counts
    # Each answer keeps its details (model, ending, usage, times: the real clock's), no question.
    details = [m.pop("details", None) for m in stored["messages"]]
    assert [None if d is None else (d["model"], d["stop_reason"]) for d in details] == [
        None,
        (GEMMA, "stop"),
        None,
        (GEMMA, "stop"),
    ], details
    assert stored == {"id": base.rsplit("/", 1)[1], "messages": history, "streaming": False}


def test_one_stream_per_door(snapshot_run: Runtime) -> None:
    messages = [{"role": "user", "content": "[[pace:0]] every door"}]
    text = "".join(expected_tokens(messages))
    with snapshot_run.client(timeout=30) as client:
        chat = client.post("/api/v1/chat", json={"messages": messages})
        assert chat.content == expected_wire(messages), chat.content[-300:]

        completions = client.post(
            "/v1/chat/completions", json={"model": GEMMA, "messages": messages, "stream": True}
        )
        deltas = [
            json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
            for line in completions.text.splitlines()
            if line.startswith("data: {") and '"choices":[{' in line
        ]
        assert "".join(deltas) == text, completions.text[-500:]
        assert completions.text.endswith("data: [DONE]\n\n"), completions.text[-200:]

        responses = client.post(
            "/v1/responses", json={"model": GEMMA, "input": messages, "stream": True}
        )
        done = [
            json.loads(line[6:])
            for line in responses.text.splitlines()
            if line.startswith("data: ") and '"response.output_text.done"' in line
        ]
        assert [d["text"] for d in done] == [text], responses.text[-500:]

        ui = client.post(
            "/api/v1/ui-chat",
            json={
                "id": "c",
                "trigger": "submit-message",
                "messages": [
                    {
                        "id": "u1",
                        "role": "user",
                        "parts": [{"type": "text", "text": messages[0]["content"]}],
                    }
                ],
            },
        )
        ui_text = "".join(
            json.loads(line[6:])["delta"]
            for line in ui.text.splitlines()
            if line.startswith("data: {") and '"type":"text-delta"' in line
        )
        assert ui_text == text, ui.text[-500:]
        assert ui.text.endswith("data: [DONE]\n\n"), ui.text[-200:]
