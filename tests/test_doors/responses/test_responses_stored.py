"""Stored Responses, the Worker's side (responses_stored.py) on the host: what a request
continues from, the references it resolves, the owner, the limits and the input_items page."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from fakes import completion_context

from base.errors import ApiError
from base.settings import load
from doors.responses import responses_stored as stored
from doors.responses.expansion import Budget, Size, total
from doors.responses.responses_api import parse_responses
from surface.owners import owner_of

SETTINGS = load({"AI_MODELS": "@cf/google/gemma-4-26b-a4b-it"}.get)
HEX = "ab" * 16
OLD = "resp_" + HEX
NEW = "resp_" + "cd" * 16


class FakeStore:
    def __init__(self) -> None:
        self.records: dict[str, tuple[str, dict[str, Any]]] = {}
        self.saved: list[tuple[str, str, dict[str, Any], float]] = []
        self.links: list[str] = []

    async def load(self, id: str, owner: str) -> dict[str, Any] | None:
        found = self.records.get(id)
        return found[1] if found is not None and found[0] == owner else None

    async def link(
        self, id: str, owner: str, keep_until: float | None, *, deleted_too: bool = False
    ) -> dict[str, Any] | None:
        self.links.append(id)
        return await self.load(id, owner)

    async def delete(self, id: str, owner: str) -> bool:
        return self.records.pop(id, None) is not None

    def save(self, id: str, owner: str, record: dict[str, Any], expires_at: float) -> None:
        self.saved.append((id, owner, record, expires_at))

    async def put(self, id: str, owner: str, record: dict[str, Any], expires_at: float) -> None:
        self.saved.append((id, owner, record, expires_at))


def context(store: FakeStore | None, key_id: str | None = None, token: str | None = None) -> Any:
    ctx = dataclasses.replace(completion_context(SETTINGS), responses=store, key_id=key_id)
    if token is not None:
        request = dataclasses.replace(ctx.request, headers={"x-owner-token": token})
        ctx = dataclasses.replace(ctx, request=request)
    return ctx


TURN_ONE: Any = {
    "context": [],
    "input": [
        {
            "type": "message",
            "role": "user",
            "id": f"msg_{HEX}_i0",
            "content": [{"type": "input_text", "text": "hi"}],
        }
    ],
    "response": {
        "id": OLD,
        "output": [
            {
                "id": f"msg_{HEX}_0",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "annotations": [], "logprobs": [], "text": "hello"}
                ],
            }
        ],
    },
}


def history(body: dict[str, Any], ctx: Any, store: bool = True) -> stored.History | None:
    model = body.get("model", ctx.settings.default_model)
    budget = Budget(ctx.settings, model)
    return asyncio.run(stored.history(body, ctx, NEW, store=store, budget=budget))


def test_previous_response_id_puts_its_items_before_the_input() -> None:
    fake = FakeStore()
    fake.records[OLD] = ("key:k1", TURN_ONE)
    ctx = context(fake, "k1")
    body = {"input": "and then?", "previous_response_id": OLD}
    found = history(body, ctx)
    assert found is not None
    assert found.context == [*TURN_ONE["input"], *TURN_ONE["response"]["output"]]
    assert found.input == [
        {
            "role": "user",
            "content": [{"type": "input_text", "text": "and then?"}],
            "type": "message",
            "id": f"msg_{'cd' * 16}_i0",
        }
    ]
    request = parse_responses(body, ctx, found, store=True)
    assert request.completion.messages == (
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "and then?"},
    )
    assert request.echo["previous_response_id"] == OLD and request.echo["store"] is True


def test_another_keys_response_is_not_found() -> None:
    fake = FakeStore()
    fake.records[OLD] = ("key:k1", TURN_ONE)
    with pytest.raises(ApiError) as info:
        history({"input": "x", "previous_response_id": OLD}, context(fake, "k2"))
    assert (info.value.status, info.value.code, info.value.param) == (
        404,
        "not_found",
        "previous_response_id",
    )


def test_the_owner_is_the_conversations_owner_key_then_token() -> None:
    token = "0f" * 16
    assert stored.owner(context(FakeStore())) == ""
    assert stored.owner(context(FakeStore(), "k1", token)) == "key:k1"
    assert stored.owner(context(FakeStore(), None, token)) == owner_of(
        {"x-owner-token": token}, None, None
    )
    assert stored.owner(context(FakeStore(), None, token)).startswith("token:")
    assert token not in stored.owner(context(FakeStore(), None, token))


def test_another_tokens_response_is_not_found_and_a_bad_token_is_400() -> None:
    fake = FakeStore()
    mine, theirs = "0f" * 16, "f0" * 16
    fake.records[OLD] = (stored.owner(context(fake, None, mine)), TURN_ONE)
    body = {"input": "x", "previous_response_id": OLD}
    assert history(body, context(fake, None, mine)) is not None
    with pytest.raises(ApiError) as info:
        history(body, context(fake, None, theirs))
    assert (info.value.status, info.value.param) == (404, "previous_response_id")
    with pytest.raises(ApiError) as info:
        history(body, context(fake, None, "not hex"))
    assert (info.value.status, info.value.code) == (400, "invalid_owner_token")


def test_an_item_reference_is_the_stored_item() -> None:
    fake = FakeStore()
    fake.records[OLD] = ("", TURN_ONE)
    body = {
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "item_reference", "id": f"msg_{HEX}_0"},
            {"role": "user", "content": "more"},
        ]
    }
    found = history(body, context(fake))
    assert found is not None and found.input[1] == TURN_ONE["response"]["output"][0]
    with pytest.raises(ApiError) as info:
        history({"input": [{"type": "item_reference", "id": f"msg_{HEX}_9"}]}, context(fake))
    assert (info.value.status, info.value.param) == (404, "input[0].id")


def test_store_false_with_nothing_to_read_reads_nothing() -> None:
    assert history({"input": "x"}, context(FakeStore()), store=False) is None


def test_without_storage_store_true_and_previous_response_id_are_400() -> None:
    for body in ({"input": "x", "store": True}, {"input": "x", "previous_response_id": OLD}):
        with pytest.raises(ApiError) as info:
            ctx = context(None)
            stored.wants_store(body, ctx)
            history(body, ctx)
        assert (info.value.status, info.value.code) == (400, "unsupported_parameter")
        assert "no RESPONSES binding" in info.value.message
    assert stored.wants_store({"input": "x"}, context(None)) is False
    assert stored.wants_store({"input": "x"}, context(FakeStore())) is True
    assert stored.wants_store({"input": "x", "store": False}, context(FakeStore())) is False


def test_items_past_the_conversation_limit_are_413_before_the_model() -> None:
    ctx = dataclasses.replace(
        context(FakeStore()), settings=dataclasses.replace(SETTINGS, max_conversation_bytes=300_000)
    )
    found = history({"input": "x" * 50_000}, ctx)
    assert found is not None
    with pytest.raises(ApiError) as info:
        stored.check_size(found, ctx)
    assert (info.value.status, info.value.code, info.value.param) == (
        413,
        "stored_response_too_large",
        "input",
    )


def test_the_input_items_page_follows_order_limit_and_after() -> None:
    items = [{"id": f"i{n}"} for n in range(5)]
    assert stored.page(items, {}) == {
        "object": "list",
        "data": items[::-1],
        "first_id": "i4",
        "last_id": "i0",
        "has_more": False,
    }
    assert stored.page(items, {"order": "asc", "limit": "2", "after": "i0"}) == {
        "object": "list",
        "data": [{"id": "i1"}, {"id": "i2"}],
        "first_id": "i1",
        "last_id": "i2",
        "has_more": True,
    }
    for query in ({"order": "up"}, {"limit": "0"}, {"after": "nope"}):
        with pytest.raises(ApiError):
            stored.page(items, query)


def test_the_saver_writes_the_response_its_input_and_context_once_ended() -> None:
    fake = FakeStore()
    ctx = context(fake, "k1")
    found = history({"input": "x"}, ctx)
    assert found is not None
    save = stored.Saver(
        ctx,
        NEW,
        1000,
        found,
        lambda gone: {"id": NEW, "status": "incomplete" if gone else "completed"},
    )
    save.after(True)
    assert fake.saved == [
        (
            NEW,
            "key:k1",
            {
                "response": {"id": NEW, "status": "incomplete"},
                "input": found.input,
                "previous": None,
                "chain": [],
                "size": total(found.input).as_json(),
            },
            1000 + 30 * 86400,
        )
    ]


BIG = "w" * 200_000


def big_record(kind: str) -> dict[str, Any]:
    """A stored response whose one input item holds 200,000 characters."""
    if kind == "reasoning":
        item: dict[str, Any] = {
            "type": "reasoning",
            "id": f"rs_{HEX}_i0",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": BIG}],
        }
    else:
        item = {
            "type": "message",
            "role": "user",
            "id": f"msg_{HEX}_i0",
            "content": [{"type": "input_text", "text": BIG}],
        }
    return {**TURN_ONE, "input": [item]}


@pytest.mark.parametrize("kind", ["reasoning", "message"])
@pytest.mark.parametrize(
    "model", ["@cf/google/gemma-4-26b-a4b-it", "@cf/meta/llama-3.1-8b-instruct"]
)
def test_two_thousand_references_are_refused_before_they_are_joined(kind: str, model: str) -> None:
    fake = FakeStore()
    fake.records[OLD] = ("", big_record(kind))
    settings = load({"AI_MODELS": f"{model},@cf/google/gemma-4-26b-a4b-it"}.get)
    ctx = dataclasses.replace(context(fake), settings=settings)
    ref = {"type": "item_reference", "id": f"{'rs' if kind == 'reasoning' else 'msg'}_{HEX}_i0"}
    body = {"model": model, "input": [ref] * 2000}
    with pytest.raises(ApiError) as info:
        history(body, ctx, store=False)
    error = info.value
    # The byte budget (dropped reasoning still counts as bytes) or the window, at an early item.
    assert (error.status, error.code) in (
        (413, "input_too_large"),
        (400, "context_length_exceeded"),
    ), error
    at = int(error.param.removeprefix("input[").removesuffix("]"))  # type: ignore[union-attr]
    assert at < 200, error.param


def test_reasoning_for_a_model_that_does_not_reason_is_not_counted_as_text() -> None:
    fake = FakeStore()
    fake.records[OLD] = ("", big_record("reasoning"))
    model = "@cf/meta/llama-3.1-8b-instruct"
    settings = load({"AI_MODELS": model}.get)
    ctx = dataclasses.replace(context(fake), settings=settings)
    ref = {"type": "item_reference", "id": f"rs_{HEX}_i0"}
    body = {"model": model, "input": [ref, {"role": "user", "content": "hi"}]}
    budget = Budget(settings, model)
    found = asyncio.run(stored.history(body, ctx, NEW, store=False, budget=budget))
    assert found is not None and budget.total.chars == 2 and budget.total.reasoning == 0
    assert budget.total.bytes > 200_000  # still held, so still counted
    request = parse_responses(body, ctx, found)
    assert request.completion.messages == ({"role": "user", "content": "hi"},)


def chain_of(n: int, text: str) -> FakeStore:
    """A chain of n responses stored as they are now: each its own items and its ancestors'
    ids, and the size of everything through it."""
    fake = FakeStore()
    ids = [f"resp_{i:032x}" for i in range(n)]
    size = Size()
    for i, id in enumerate(ids):
        own = [
            {"type": "message", "role": "user", "id": f"msg_{i:032x}_i0", "content": text},
        ]
        output = [
            {"type": "message", "role": "assistant", "id": f"msg_{i:032x}_0", "content": "ok"}
        ]
        size = size + total([*own, *output])
        fake.records[id] = (
            "",
            {
                "response": {"id": id, "output": output},
                "input": own,
                "previous": ids[i - 1] if i else None,
                "chain": ids[:i],
                "size": size.as_json(),
            },
        )
    return fake


def test_a_chain_is_read_once_per_link_in_order() -> None:
    fake = chain_of(5, "t")
    found = history({"input": "next", "previous_response_id": f"resp_{4:032x}"}, context(fake))
    assert found is not None
    assert sorted(fake.links) == sorted(f"resp_{i:032x}" for i in range(5))
    assert [item["id"] for item in found.context] == [
        f"msg_{i:032x}_{s}" for i in range(5) for s in ("i0", "0")
    ]
    assert found.chain == [f"resp_{i:032x}" for i in range(5)]


def test_a_long_chain_past_the_window_is_refused_after_one_read() -> None:
    fake = chain_of(100, "w" * 20_000)  # 2,000,000 characters: past a 256,000-token window
    with pytest.raises(ApiError) as info:
        history({"input": "next", "previous_response_id": f"resp_{99:032x}"}, context(fake))
    assert (info.value.status, info.value.code, info.value.param) == (
        400,
        "context_length_exceeded",
        "previous_response_id",
    )
    assert fake.links == [f"resp_{99:032x}"]  # only the last link: its size says it all


def test_a_tool_output_answers_a_call_the_stored_response_made() -> None:
    fake = FakeStore()
    call = {
        "type": "function_call",
        "id": f"fc_{HEX}_0",
        "call_id": "call_7",
        "name": "f",
        "arguments": "{}",
    }
    fake.records[OLD] = ("", {**TURN_ONE, "response": {"id": OLD, "output": [call]}})
    ctx = context(fake)
    answer = {"type": "function_call_output", "call_id": "call_7", "output": "42"}
    body = {"input": [answer], "previous_response_id": OLD}
    found = history(body, ctx)
    request = parse_responses(body, ctx, found, store=True)
    assert request.completion.messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_7",
        "content": "42",
    }
    stray = {"input": [{**answer, "call_id": "call_8"}], "previous_response_id": OLD}
    with pytest.raises(ApiError) as info:
        parse_responses(stray, ctx, history(stray, ctx), store=True)
    assert (info.value.status, info.value.param) == (400, "input[0].call_id")


def test_a_chain_longer_than_max_messages_is_refused_after_one_read() -> None:
    fake = chain_of(12, "t")
    ctx = dataclasses.replace(
        context(fake), settings=dataclasses.replace(SETTINGS, max_messages=10)
    )
    with pytest.raises(ApiError) as info:
        history({"input": "next", "previous_response_id": f"resp_{11:032x}"}, ctx)
    assert (info.value.status, info.value.code, info.value.param) == (
        400,
        "too_many_messages",
        "previous_response_id",
    )
    assert "12 responses long" in info.value.message and fake.links == [f"resp_{11:032x}"]
