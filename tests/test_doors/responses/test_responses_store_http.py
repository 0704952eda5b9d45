"""Stored Responses over HTTP on workerd, through its own Ai class and the RESPONSES Durable
Object: openai-python's previous_response_id (the model sees turn one), GET, DELETE and
input_items, store: false kept nowhere, another key's or owner token's 404 (@ai-sdk/openai's
two turns with item references: tests/js/runtime/ai-sdk-openai.test.mjs)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from conftest import Runtime, start_runtime

pytestmark = pytest.mark.runtime

GEMMA = "@cf/google/gemma-4-26b-a4b-it"
KEYS = [f"sk-test-{secrets.token_hex(12)}" for _ in range(2)]


@pytest.fixture(scope="module")
def keyed() -> Iterator[Runtime]:
    rt = start_runtime(vars={"API_KEYS": ",".join(KEYS)})
    yield rt
    rt.stop()


def client(rt: Runtime, key: str = "unused", token: str | None = None) -> openai.OpenAI:
    headers = {"X-Owner-Token": token} if token is not None else None
    return openai.OpenAI(
        base_url=rt.url + "/v1", api_key=key, max_retries=0, timeout=30, default_headers=headers
    )


def refused(rt: Runtime, id: str, item: str, headers: dict[str, str]) -> list[tuple[int, Any]]:
    """What GET, input_items, DELETE, previous_response_id and item_reference answer."""
    turn = {"model": GEMMA, "input": "[[pace:0]] x", "store": False}
    with httpx.Client(base_url=rt.url, headers=headers, timeout=30) as http:
        answers = [
            http.get(f"/v1/responses/{id}"),
            http.get(f"/v1/responses/{id}/input_items"),
            http.delete(f"/v1/responses/{id}"),
            http.post("/v1/responses", json={**turn, "previous_response_id": id}),
            http.post(
                "/v1/responses",
                json={**turn, "input": [{"type": "item_reference", "id": item}]},
            ),
        ]
    return [(a.status_code, a.json()) for a in answers]


def texts(items: list[Any]) -> list[dict[str, Any]]:
    return [item.model_dump() for item in items]


def user_texts(rt: Runtime) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in rt.last_call()["inputs"]["messages"]]


def test_previous_response_id_continues_with_turn_one(runtime: Runtime) -> None:
    with client(runtime) as c:
        with c.responses.stream(model=GEMMA, input="[[pace:0]] my name is Ada") as stream:
            first = stream.get_final_response()
        assert first.model_dump()["store"] is True and first.status == "completed"
        second = c.responses.create(
            model=GEMMA, input="[[pace:0]] what is my name?", previous_response_id=first.id
        )
        assert second.previous_response_id == first.id
        assert user_texts(runtime) == [
            ("user", "[[pace:0]] my name is Ada"),
            ("assistant", first.output_text),
            ("user", "[[pace:0]] what is my name?"),
        ]
        third = c.responses.create(
            model=GEMMA, input="[[pace:0]] and again?", previous_response_id=second.id
        )
        assert [m[0] for m in user_texts(runtime)] == ["user", "assistant"] * 2 + ["user"]
        assert third.status == "completed"


def test_get_delete_and_input_items(runtime: Runtime) -> None:
    with client(runtime) as c:
        made = c.responses.create(model=GEMMA, input="[[pace:0]] keep me", instructions="brief")
        got = c.responses.retrieve(made.id)
        assert got.model_dump() == made.model_dump()
        items = c.responses.input_items.list(made.id)
        assert [(i["type"], i["role"], i["content"][0]["text"]) for i in texts(items.data)] == [
            ("message", "user", "[[pace:0]] keep me")
        ]
        c.responses.delete(made.id)  # openai-python returns nothing: the wire, below
        with pytest.raises(openai.NotFoundError):
            c.responses.retrieve(made.id)
    raw = httpx.delete(f"{runtime.url}/v1/responses/{made.id}")
    assert raw.status_code == 404 and raw.json()["error"]["code"] == "not_found"


def test_delete_answers_openai_s_shape(runtime: Runtime) -> None:
    with client(runtime) as c:
        made = c.responses.create(model=GEMMA, input="[[pace:0]] x")
    raw = httpx.delete(f"{runtime.url}/v1/responses/{made.id}")
    assert raw.json() == {"id": made.id, "object": "response.deleted", "deleted": True}


def test_input_items_pages_in_order(runtime: Runtime) -> None:
    turn = [{"role": "user", "content": f"[[pace:0]] {n}"} for n in range(3)]
    with client(runtime) as c:
        made = c.responses.create(model=GEMMA, input=turn)  # type: ignore[arg-type]
        page = c.responses.input_items.list(made.id, order="asc", limit=2)
        assert [i["content"][0]["text"] for i in texts(page.data)] == [
            "[[pace:0]] 0",
            "[[pace:0]] 1",
        ]
        assert page.has_more is True
        rest = c.responses.input_items.list(made.id, order="asc", after=page.data[-1].id)
        assert [i["content"][0]["text"] for i in texts(rest.data)] == ["[[pace:0]] 2"]


def test_store_false_is_kept_nowhere(runtime: Runtime) -> None:
    with client(runtime) as c:
        made = c.responses.create(model=GEMMA, input="[[pace:0]] forget me", store=False)
        assert made.model_dump()["store"] is False
        with pytest.raises(openai.NotFoundError):
            c.responses.retrieve(made.id)
        with pytest.raises(openai.NotFoundError) as info:
            c.responses.create(model=GEMMA, input="x", previous_response_id=made.id)
    assert info.value.body["param"] == "previous_response_id"  # type: ignore[index]


def test_a_client_that_leaves_leaves_an_incomplete_response(runtime: Runtime) -> None:
    body = {"model": GEMMA, "input": "[[pace:50]] a long one", "stream": True}
    with (
        httpx.Client(base_url=runtime.url, timeout=10) as http,
        http.stream("POST", "/v1/responses", json=body) as response,
    ):
        lines = response.iter_lines()
        id = next(line for line in lines if '"id":"resp_' in line).split('"id":"')[1][:37]
    deadline = time.monotonic() + 5
    while True:
        got = httpx.get(f"{runtime.url}/v1/responses/{id}")
        if got.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert got.status_code == 200, got.text
    assert got.json()["status"] == "incomplete"
    assert got.json()["incomplete_details"] == {"reason": "client_disconnected"}


def test_another_key_gets_404(keyed: Runtime) -> None:
    with client(keyed, KEYS[0]) as mine, client(keyed, KEYS[1]) as theirs:
        made = mine.responses.create(model=GEMMA, input="[[pace:0]] mine")
        assert mine.responses.retrieve(made.id).id == made.id
        with pytest.raises(openai.NotFoundError):
            theirs.responses.retrieve(made.id)
        with pytest.raises(openai.NotFoundError):
            theirs.responses.input_items.list(made.id)
        with pytest.raises(openai.NotFoundError):
            theirs.responses.delete(made.id)
        with pytest.raises(openai.NotFoundError):
            theirs.responses.create(model=GEMMA, input="x", previous_response_id=made.id)
        assert mine.responses.retrieve(made.id).id == made.id  # their delete did nothing


def test_the_response_id_is_never_in_a_log_line(keyed: Runtime) -> None:
    with client(keyed, KEYS[0]) as c:
        made = c.responses.create(model=GEMMA, input="[[pace:0]] log me not")
        c.responses.retrieve(made.id)
    time.sleep(0.3)
    hexid = made.id.removeprefix("resp_")
    assert keyed.log and not [line for line in keyed.log if hexid in line]


def test_another_owner_token_gets_what_a_random_id_gets(runtime: Runtime) -> None:
    mine, theirs = secrets.token_hex(16), secrets.token_hex(16)
    with client(runtime, token=mine) as c:
        made = c.responses.create(model=GEMMA, input="[[pace:0]] mine alone")
    item = str(made.output[0].id)
    never = "resp_" + secrets.token_hex(16)
    never_item = f"msg_{never.removeprefix('resp_')}_0"
    expected = refused(runtime, never, never_item, {"X-Owner-Token": theirs})
    assert [status for status, _ in expected] == [404] * 5, expected
    assert refused(runtime, made.id, item, {"X-Owner-Token": theirs}) == expected
    assert refused(runtime, made.id, item, {}) == expected  # no token: no owner, not theirs
    with client(runtime, token=mine.upper()) as c:  # the same token, as the page may send it
        assert c.responses.retrieve(made.id).id == made.id
        assert [i.id for i in c.responses.input_items.list(made.id).data]
        second = c.responses.create(
            model=GEMMA, input="[[pace:0]] again", previous_response_id=made.id
        )
        assert second.previous_response_id == made.id
        turn: Any = [{"type": "item_reference", "id": item}, {"role": "user", "content": "y"}]
        referred = c.responses.create(model=GEMMA, input=turn)
        assert referred.status == "completed"
        assert ("assistant", made.output_text) in user_texts(runtime)
        c.responses.delete(made.id)
    assert refused(runtime, made.id, item, {"X-Owner-Token": mine}) == expected


def test_one_stored_by_no_owner_is_read_by_its_id(runtime: Runtime) -> None:
    with client(runtime) as c:
        made = c.responses.create(model=GEMMA, input="[[pace:0]] anyone's")
    with client(runtime, token=secrets.token_hex(16)) as c:
        assert c.responses.retrieve(made.id).id == made.id


def test_a_malformed_owner_token_is_400_before_the_model(runtime: Runtime) -> None:
    body = {"model": GEMMA, "input": "[[pace:0]] x"}
    calls = len(runtime.calls())
    answer = httpx.post(
        f"{runtime.url}/v1/responses", json=body, headers={"X-Owner-Token": "abc"}, timeout=30
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "invalid_owner_token"
    assert answer.json()["error"]["param"] == "X-Owner-Token"
    assert len(runtime.calls()) == calls, "the model was called"


def test_under_keys_the_key_rules_whatever_the_token(keyed: Runtime) -> None:
    token = secrets.token_hex(16)
    with client(keyed, KEYS[0], token) as mine:
        made = mine.responses.create(model=GEMMA, input="[[pace:0]] the key's")
    with client(keyed, KEYS[0], secrets.token_hex(16)) as same_key:
        assert same_key.responses.retrieve(made.id).id == made.id
    never = "resp_" + secrets.token_hex(16)
    other = {"Authorization": f"Bearer {KEYS[1]}", "X-Owner-Token": token}
    item = str(made.output[0].id)
    expected = refused(keyed, never, f"msg_{never.removeprefix('resp_')}_0", other)
    assert refused(keyed, made.id, item, other) == expected
