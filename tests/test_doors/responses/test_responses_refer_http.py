"""Stored responses refer, not copy (issue 47), on workerd with its Durable Objects kept on
disk (--persist): a small continuation of a stored conversation of several MB (three images)
adds kilobytes of storage, measured as the SQLite files workerd keeps for the objects; the
chain still reads whole, each link once; deleting a response that another continues keeps
what the continuation reads, and GET, input_items and previous_response_id on it are 404."""

from __future__ import annotations

import base64
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Runtime, start_runtime

pytestmark = pytest.mark.runtime

GEMMA = "@cf/google/gemma-4-26b-a4b-it"
IMAGE_BYTES = 1_500_000  # each image: 2,000,000 characters of base64


@pytest.fixture(scope="module")
def persisted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, Path]]:
    where = tmp_path_factory.mktemp("objects")
    rt = start_runtime("--persist", str(where), pace_ms=0)
    yield rt, where
    rt.stop()


def on_disk(where: Path) -> int:
    """Bytes of every file workerd keeps for the Durable Objects (SQLite, its WAL, metadata)."""
    return sum(f.stat().st_size for f in where.rglob("*") if f.is_file())


def image(n: int) -> str:
    data = b"\x89PNG\r\n\x1a\n" + random.Random(n).randbytes(IMAGE_BYTES)
    return "data:image/png;base64," + base64.b64encode(data).decode()


def turn(http: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    made = http.post("/v1/responses", json={"model": GEMMA, "max_output_tokens": 8, **body})
    assert made.status_code == 200, made.text[:300]
    return made.json()  # type: ignore[no-any-return]


def test_a_small_continuation_of_a_large_conversation_adds_kilobytes(
    persisted: tuple[Runtime, Path],
) -> None:
    rt, where = persisted
    with rt.client(timeout=120) as http:
        previous: str | None = None
        for n in range(3):
            content = [
                {"type": "input_text", "text": f"[[pace:0]] picture {n}"},
                {"type": "input_image", "image_url": image(n)},
            ]
            body: dict[str, Any] = {"input": [{"role": "user", "content": content}]}
            if previous is not None:
                body["previous_response_id"] = previous
            previous = turn(http, body)["id"]
        large = on_disk(where)
        assert large > 3 * 2_000_000, large  # the three images are stored, once each
        small = turn(http, {"input": "[[pace:0]] and now?", "previous_response_id": previous})
        added = on_disk(where) - large
        print(f"\nstored conversation {large} bytes on disk; the continuation added {added}")
        # A copy of the history would add the 6 MB of images again.
        assert added < 256 * 1024, f"the continuation added {added} bytes of storage"
        # ... and it still continues from all of it, each image once.
        again = turn(http, {"input": "[[pace:0]] more", "previous_response_id": small["id"]})
        sent = rt.last_call()["inputs"]["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant"] * 4 + ["user"]
        pictures = [
            part["image_url"]["url"]
            for m in sent
            if isinstance(m["content"], list)
            for part in m["content"]
            if part.get("type") == "image_url"
        ]
        assert pictures == [image(n) for n in range(3)]
        assert again["previous_response_id"] == small["id"]


def test_deleting_a_continued_response_keeps_what_its_continuation_reads(
    persisted: tuple[Runtime, Path],
) -> None:
    rt, _ = persisted
    with rt.client(timeout=60) as http:
        first = turn(http, {"input": "[[pace:0]] my name is Ada"})
        second = turn(http, {"input": "[[pace:0]] hello", "previous_response_id": first["id"]})
        deleted = http.delete(f"/v1/responses/{first['id']}")
        assert deleted.json() == {"id": first["id"], "object": "response.deleted", "deleted": True}
        gone = [
            http.get(f"/v1/responses/{first['id']}"),
            http.get(f"/v1/responses/{first['id']}/input_items"),
            http.delete(f"/v1/responses/{first['id']}"),
            http.post(
                "/v1/responses",
                json={"input": "[[pace:0]] x", "previous_response_id": first["id"]},
            ),
        ]
        assert [a.status_code for a in gone] == [404] * 4, [a.text[:200] for a in gone]
        turn(http, {"input": "[[pace:0]] and?", "previous_response_id": second["id"]})
        sent = rt.last_call()["inputs"]["messages"]
        assert sent[0] == {"role": "user", "content": "[[pace:0]] my name is Ada"}
        assert len(sent) == 5
        # One nothing continues goes at once and whole.
        third = turn(http, {"input": "[[pace:0]] alone"})
        assert http.delete(f"/v1/responses/{third['id']}").status_code == 200
        assert http.get(f"/v1/responses/{third['id']}").status_code == 404


@pytest.fixture(scope="module")
def small_quota() -> Iterator[Runtime]:
    rt = start_runtime(pace_ms=0, vars={"MAX_OWNER_RESPONSE_BYTES": str(1024 * 1024)})
    yield rt
    rt.stop()


def test_an_owner_s_stored_responses_are_bounded_and_a_continuation_counts_its_own(
    small_quota: Runtime,
) -> None:
    rt = small_quota
    mine, theirs = {"X-Owner-Token": "ab" * 16}, {"X-Owner-Token": "cd" * 16}
    big = {"input": "[[pace:0]] " + "b" * 300_000, "max_output_tokens": 8}
    with rt.client(timeout=60) as http:
        made = [http.post("/v1/responses", json=big, headers=mine) for _ in range(3)]
        assert [m.status_code for m in made] == [200] * 3, [m.text[:200] for m in made]
        calls = len(rt.calls())
        full = http.post("/v1/responses", json=big, headers=mine)
        assert full.status_code == 413, full.text[:300]
        error = full.json()["error"]
        assert (error["code"], error["param"]) == ("owner_storage_full", "store"), error
        assert "MAX_OWNER_RESPONSE_BYTES" in error["message"]
        assert len(rt.calls()) == calls  # refused before the model
        # Another owner has its own; store: false is never counted.
        assert http.post("/v1/responses", json=big, headers=theirs).status_code == 200
        assert (
            http.post("/v1/responses", json={**big, "store": False}, headers=mine).status_code
            == 200
        )
        # A continuation of 900 KB of conversation counts its own few bytes.
        small = {"input": "[[pace:0]] more", "previous_response_id": made[2].json()["id"]}
        assert http.post("/v1/responses", json=small, headers=mine).status_code == 200
        # Deleting one makes room again.
        assert http.delete(f"/v1/responses/{made[0].json()['id']}", headers=mine).status_code == 200
        assert http.post("/v1/responses", json=big, headers=mine).status_code == 200
