"""The texts one isolate embeds at once (host): a request past MAX_TEXTS_AT_ONCE is a 503 with
Retry-After while others are under way, never on an idle isolate, and what a request held is
let go however its answer ends."""

from __future__ import annotations

import asyncio
import gc
import json
from typing import Any

import pytest
from fakes import FakeLimiter
from host_app import call, request, whole

from base.errors import ApiError
from doors.embeddings import embedding_load
from doors.embeddings.embedding_load import MAX_TEXTS_AT_ONCE, hold, released_after, under_way
from routes import TABLE
from streaming.relay import OneShot
from surface.policy import handle
from surface.web import Pieces
from workers_ai.service import RunOptions, UpstreamFailure


def test_past_the_limit_while_others_are_under_way_is_a_503() -> None:
    assert under_way() == 0
    first = hold(MAX_TEXTS_AT_ONCE + 100)  # alone: never refused
    with pytest.raises(ApiError) as caught:
        hold(1)
    error = caught.value
    assert (error.status, error.code, error.param) == (503, "embeddings_busy", "input")
    assert dict(error.headers) == {"retry-after": "1"}
    assert f"embedding {MAX_TEXTS_AT_ONCE + 100} texts" in error.message
    first()
    first()  # once only
    assert under_way() == 0
    a, b = hold(2048), hold(2048)
    with pytest.raises(ApiError):
        hold(1)
    a()
    b()
    assert under_way() == 0


def test_the_texts_are_let_go_when_the_body_is_written_or_dropped() -> None:
    release = hold(10)
    body = released_after(iter([b"a", b"b"]), release)
    assert under_way() == 10
    assert b"".join(body) == b"ab" and under_way() == 0
    release = hold(10)
    body = released_after(iter([b"a", b"b"]), release)
    del body  # the client left before any piece was read
    gc.collect()
    assert under_way() == 0


class SlowModel:
    """Answers each call of texts after `turns` turns of the event loop."""

    def __init__(self, turns: int) -> None:
        self.turns = turns

    async def stream(
        self,
        model: str,
        inputs: dict[str, Any],
        *,
        timeout: float = 60.0,
        options: RunOptions | None = None,
    ) -> OneShot:
        for _ in range(self.turns):
            await asyncio.sleep(0)
        return OneShot(result={"data": [[0.5, 0.25] for _ in inputs["text"]]})

    async def drain(self, source: object, relay: object) -> None:
        raise AssertionError("an embedding is never drained")


def test_three_requests_of_2048_at_once_two_answer_one_is_told_to_retry() -> None:
    body = json.dumps({"input": [f"t{i}" for i in range(2048)]}).encode()

    async def three() -> list[Any]:
        model = SlowModel(turns=5)

        async def one() -> Any:
            req = request("POST", "/v1/embeddings", body, content_type="application/json")
            return await handle(req, {"AI_MODELS": "m1"}.get, model, TABLE, limiter=FakeLimiter())

        return list(await asyncio.gather(one(), one(), one()))

    answers = asyncio.run(three())
    assert sorted(a.status for a in answers) == [200, 200, 503], [a.status for a in answers]
    refused = next(a for a in answers if a.status == 503)
    assert json.loads(refused.body)["error"]["code"] == "embeddings_busy"
    assert under_way() == 2 * 2048  # the two answers are not written yet
    for answer in answers:
        if isinstance(answer.body, Pieces):
            assert len(json.loads(whole(answer))["data"]) == 2048
    assert under_way() == 0
    assert embedding_load.MAX_TEXTS_AT_ONCE == 4096


def test_a_failed_request_lets_its_texts_go() -> None:
    class Failing(SlowModel):
        async def stream(self, model: str, inputs: dict[str, Any], **_: Any) -> OneShot:
            raise UpstreamFailure("3040: Capacity temporarily exceeded, please try again.")

    req = request(
        "POST", "/v1/embeddings", b'{"input": ["a", "b"]}', content_type="application/json"
    )
    response = call(req, {"AI_MODELS": "m1"}, Failing(0), FakeLimiter())  # type: ignore[arg-type]
    assert response.status == 429 and response.code == "upstream_busy", response
    assert under_way() == 0
