"""Owned conversations (issue 34): who owns one, the owner's index on SQLite, and the routes'
use of both through the policy, with fakes for the two Durable Objects."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fakes import FakeLimiter, FakeModel, LiteSql, frames

from base.errors import ApiError
from common.conversation_store import Store
from routes import TABLE
from surface.owners import (
    DEFAULT_HASH_KEY,
    OWNED_HEADER,
    TITLE_CHARS,
    OwnerIndex,
    list_query,
    owner_of,
    same_owner,
    title_of,
)
from surface.policy import handle
from surface.web import API_HEADERS, Headers, WebRequest, WebResponse, json_response

TOKEN = "0123456789abcdef" * 2
OTHER = "fedcba9876543210" * 2
ID = "a" * 32


def test_a_key_owns_before_a_token_and_nothing_is_nobody() -> None:
    assert owner_of({"x-owner-token": TOKEN}, "k1", None) == "key:k1"
    assert owner_of({}, None, None) is None


def test_a_token_is_kept_only_as_its_keyed_hash() -> None:
    owner = owner_of({"x-owner-token": TOKEN}, None, None)
    assert owner is not None and owner.startswith("token:") and TOKEN not in owner
    assert owner == owner_of({"x-owner-token": " " + TOKEN.upper() + " "}, None, DEFAULT_HASH_KEY)
    assert owner != owner_of({"x-owner-token": TOKEN}, None, "another secret")
    assert owner != owner_of({"x-owner-token": OTHER}, None, None)


@pytest.mark.parametrize("token", ["", "short", "g" * 32, "0" * 31, "0" * 65, TOKEN + "\u0660"])
def test_a_malformed_token_is_refused_not_ignored(token: str) -> None:
    with pytest.raises(ApiError) as caught:
        owner_of({"x-owner-token": token}, None, None)
    assert caught.value.status == 400 and caught.value.code == "invalid_owner_token"
    assert token.strip() == "" or token not in caught.value.message


def test_an_owned_conversation_is_its_owners_alone() -> None:
    assert same_owner(None, None) and same_owner(None, "key:a")
    assert same_owner("key:a", "key:a")
    assert not same_owner("key:a", "key:b") and not same_owner("key:a", None)


def test_a_title_is_the_first_text_trimmed() -> None:
    assert title_of("  hello\n\n  world  ") == "hello world"
    assert title_of([{"type": "image_url"}, {"type": "text", "text": " look "}]) == "look"
    assert title_of("   ") is None and title_of(None) is None
    long = title_of("x" * 500)
    assert long is not None and len(long) == TITLE_CHARS and long.endswith("…")


def test_the_list_query() -> None:
    assert list_query({}) == {"limit": 20, "after": None}
    assert list_query({"limit": ["5"], "after": ["17"]}) == {"limit": 5, "after": 17}
    for bad in ({"limit": ["0"]}, {"limit": ["101"]}, {"limit": ["x"]}, {"after": ["-1"]}):
        with pytest.raises(ApiError):
            list_query(bad)


def test_the_index_lists_newest_first_by_pages_and_keeps_the_first_title() -> None:
    index = OwnerIndex(LiteSql())
    for n in range(5):
        index.touch(f"{n:032x}", 1000.0 + n, f"chat {n}")
    index.touch(f"{1:032x}", 2000.0, "a later message")  # a turn: to the top, title kept
    first = index.page(2, None)
    assert [c["title"] for c in first["data"]] == ["chat 1", "chat 4"]
    assert first["data"][0] == {
        "id": f"{1:032x}",
        "title": "chat 1",
        "created_at": 1001,
        "updated_at": 2000,
    }
    assert first["has_more"] and first["next_cursor"]
    second = index.page(2, int(first["next_cursor"]))
    third = index.page(2, int(second["next_cursor"]))
    assert [c["title"] for c in second["data"] + third["data"]] == ["chat 3", "chat 2", "chat 0"]
    assert not third["has_more"] and third["next_cursor"] is None
    index.remove(f"{3:032x}")
    assert len(index.page(100, None)["data"]) == 4


def test_an_untitled_conversation_takes_its_first_message_as_title() -> None:
    index = OwnerIndex(LiteSql())
    index.handle("touch", {"id": ID, "now": 1.0, "title": None})
    index.handle("touch", {"id": ID, "now": 2.0, "title": "first"})
    index.handle("touch", {"id": ID, "now": 3.0, "title": "second"})
    assert index.handle("list", {"limit": 5, "after": None})["data"][0]["title"] == "first"


def test_the_store_keeps_its_owner() -> None:
    store = Store(LiteSql())
    store.create(1.0, "key:k")
    assert store.exists() and store.owner == "key:k"
    nobody = Store(LiteSql())
    nobody.create(1.0)
    assert nobody.owner is None


# ---- the routes, through the policy ---------------------------------------------------------


class Conversations:
    """The CONVERSATIONS binding: records each call with its owner."""

    def __init__(self, status: int = 200, *, unowned: bool = False) -> None:
        self.calls: list[tuple[str, str | None]] = []
        self.status = status
        self.unowned = unowned  # made by nobody: it answers anyone, and says it is not theirs

    async def call(
        self,
        id: str,
        op: str,
        payload: dict[str, Any] | None = None,
        *,
        after: str | None = None,
        owner: str | None = None,
    ) -> WebResponse:
        self.calls.append((op, owner))
        status = {"create": 201, "delete": 204}.get(op, self.status)
        owned: Headers = ()
        if op == "messages" and owner is not None and not self.unowned:
            owned = ((OWNED_HEADER, "1"),)
        return json_response(status, {"id": id}, owned)


class Indexes:
    """The OWNERS binding on SQLite, one index per owner; `broken` makes every call raise."""

    def __init__(self, broken: bool = False) -> None:
        self.indexes: dict[str, OwnerIndex] = {}
        self.broken = broken

    async def call(self, owner: str, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        if self.broken:
            raise RuntimeError("the owner index answered 500")
        index = self.indexes.setdefault(owner, OwnerIndex(LiteSql()))
        return index.handle(op, payload)


async def body_of(body: bytes) -> AsyncIterator[bytes]:
    yield body


def send(
    method: str,
    path: str,
    conversations: Conversations,
    indexes: Indexes,
    body: bytes = b"",
    limiters: tuple[FakeLimiter, FakeLimiter] | None = None,
    **headers: str,
) -> WebResponse:
    metered, reads = limiters or (FakeLimiter(), FakeLimiter())
    request = WebRequest(
        method=method,
        url="https://chat.example" + path,
        path=path.split("?")[0],
        headers={k.replace("_", "-"): v for k, v in headers.items()},
        body=body_of(body),
    )
    return asyncio.run(
        handle(
            request,
            lambda _: None,
            FakeModel(frames("hi")),
            TABLE,
            limiter=metered,
            read_limiter=reads,
            conversations=conversations,
            owner_indexes=indexes,
        )
    )


def listed(conversations: Conversations, indexes: Indexes, token: str) -> list[str]:
    response = send("GET", "/api/v1/conversations", conversations, indexes, x_owner_token=token)
    assert response.status == 200, response.body
    assert dict(API_HEADERS).items() <= dict(response.headers).items()
    assert isinstance(response.body, bytes)
    return [c["id"] for c in json.loads(response.body)["data"]]


def test_a_create_with_a_token_is_listed_for_that_token_only() -> None:
    conversations, indexes = Conversations(), Indexes()
    made = send("POST", "/api/v1/conversations", conversations, indexes, x_owner_token=TOKEN)
    assert made.status == 201 and isinstance(made.body, bytes)
    id = json.loads(made.body)["id"]
    owner = conversations.calls[0][1]
    assert owner is not None and TOKEN not in owner
    assert listed(conversations, indexes, TOKEN) == [id]
    assert listed(conversations, indexes, OTHER) == []


def test_a_create_by_nobody_is_listed_nowhere_and_the_list_wants_an_owner() -> None:
    conversations, indexes = Conversations(), Indexes()
    assert send("POST", "/api/v1/conversations", conversations, indexes).status == 201
    assert conversations.calls == [("create", None)] and indexes.indexes == {}
    response = send("GET", "/api/v1/conversations", conversations, indexes)
    assert response.status == 401 and b"owner_required" in bytes(response.body)  # type: ignore[arg-type]


def test_a_broken_index_loses_no_conversation_and_no_turn() -> None:
    conversations, indexes = Conversations(), Indexes(broken=True)
    made = send("POST", "/api/v1/conversations", conversations, indexes, x_owner_token=TOKEN)
    assert made.status == 201
    turn = send(
        "POST",
        f"/api/v1/conversations/{ID}/messages",
        conversations,
        indexes,
        b'{"content": "hi"}',
        content_type="application/json",
        x_owner_token=TOKEN,
    )
    assert turn.status == 200
    gone = send(
        "DELETE", f"/api/v1/conversations/{ID}", conversations, indexes, x_owner_token=TOKEN
    )
    assert gone.status == 204
    response = send("GET", "/api/v1/conversations", conversations, indexes, x_owner_token=TOKEN)
    assert response.status == 503 and b"index_unavailable" in bytes(response.body)  # type: ignore[arg-type]


def test_a_turn_titles_and_a_delete_unlists() -> None:
    conversations, indexes = Conversations(), Indexes()
    turn = send(
        "POST",
        f"/api/v1/conversations/{ID}/messages",
        conversations,
        indexes,
        b'{"content": "  what is   a durable object?"}',
        content_type="application/json",
        x_owner_token=TOKEN,
    )
    assert turn.status == 200
    response = send("GET", "/api/v1/conversations", conversations, indexes, x_owner_token=TOKEN)
    assert json.loads(bytes(response.body))["data"][0]["title"] == "what is a durable object?"  # type: ignore[arg-type]
    send("DELETE", f"/api/v1/conversations/{ID}", conversations, indexes, x_owner_token=TOKEN)
    assert listed(conversations, indexes, TOKEN) == []


def test_a_turn_on_nobody_s_conversation_lists_it_nowhere() -> None:
    """Issue 47: the object answers an owner's turn on an unowned conversation without saying
    it is theirs; the door lists nothing, and the marker never reaches the client."""
    conversations, indexes = Conversations(unowned=True), Indexes()
    turn = send(
        "POST",
        f"/api/v1/conversations/{ID}/messages",
        conversations,
        indexes,
        b'{"content": "passing by"}',
        content_type="application/json",
        x_owner_token=TOKEN,
    )
    assert turn.status == 200 and conversations.calls[-1][0] == "messages"
    assert listed(conversations, indexes, TOKEN) == []
    owned = Conversations()
    mine = send(
        "POST",
        f"/api/v1/conversations/{ID}/messages",
        owned,
        indexes,
        b'{"content": "mine"}',
        content_type="application/json",
        x_owner_token=TOKEN,
    )
    assert all(name != OWNED_HEADER for name, _ in mine.headers), mine.headers
    assert listed(owned, indexes, TOKEN) == [ID]


def test_every_route_hands_the_owner_to_the_conversation() -> None:
    conversations, indexes = Conversations(), Indexes()
    for method, tail in (("GET", ""), ("GET", "/stream"), ("POST", "/stop"), ("DELETE", "")):
        send(
            method, f"/api/v1/conversations/{ID}{tail}", conversations, indexes, x_owner_token=TOKEN
        )
    owners = {owner for _, owner in conversations.calls}
    assert len(owners) == 1 and None not in owners


def test_the_list_is_counted_as_a_read_not_a_model_call() -> None:
    metered, reads = FakeLimiter(), FakeLimiter()
    send(
        "GET",
        "/api/v1/conversations?limit=5",
        Conversations(),
        Indexes(),
        limiters=(metered, reads),
        x_owner_token=TOKEN,
    )
    assert metered.keys == [] and len(reads.keys) == 1
    reads = FakeLimiter(limit=0)
    refused = send(
        "GET",
        "/api/v1/conversations",
        Conversations(),
        Indexes(),
        limiters=(metered, reads),
        x_owner_token=TOKEN,
    )
    assert refused.status == 429


def test_a_bad_list_query_or_token_is_400() -> None:
    for path, token in (("?limit=0", TOKEN), ("?after=x", TOKEN), ("", "nope")):
        response = send(
            "GET", "/api/v1/conversations" + path, Conversations(), Indexes(), x_owner_token=token
        )
        assert response.status == 400, path


def test_a_title_skips_the_files_sent_before_the_text() -> None:
    sent = '<file name="cities.csv">\ncity,people\nLisbon,545000\n</file>\n\nWhich is larger?'
    assert title_of(sent) == "Which is larger?"
    assert title_of('<file name="notes.md">\n# Notes\n</file>') == "notes.md"
    assert title_of("<file name=x> not a file block") == "<file name=x> not a file block"
