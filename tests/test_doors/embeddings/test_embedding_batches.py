"""/v1/embeddings in batches, on the host: 2,048 texts in calls of at most 100, AT_ONCE at a
time, joined in order with usage summed; a failing call fails the request as that call alone
would, and no call starts after it; a fallback answers every batch or none (issue 34)."""

from __future__ import annotations

import asyncio
import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from fakes import FakeLimiter
from host_app import call, request, whole

from base import catalog
from base.settings import load
from doors.embeddings.embedding_batches import AT_ONCE, batch_size, in_order
from streaming.relay import OneShot
from surface.web import WebResponse
from workers_ai.service import RunOptions, UpstreamFailure

BGE, GEMMA = "@cf/baai/bge-m3", "@cf/google/embeddinggemma-300m"
BUSY = "3040: Capacity temporarily exceeded, please try again."
ENV = {"AI_MODELS": "m1"}


def vector(text: str) -> list[float]:
    """A vector that names its text: [its CRC-32, its length]."""
    return [float(zlib.crc32(text.encode())), float(len(text))]


@dataclass
class BatchModel:
    """An embedding model: each call answers a vector per text after four turns of the event
    loop, or fails after one when a text is in `fails_on`; it records every call and how many
    ran at once."""

    fails_on: dict[str, str] = field(default_factory=dict)  # a text -> the error of its call
    busy: set[str] = field(default_factory=set)  # models that answer 3040
    calls: list[tuple[str, list[str], RunOptions | None]] = field(default_factory=list)
    running: int = 0
    most: int = 0

    async def stream(
        self,
        model: str,
        inputs: dict[str, Any],
        *,
        timeout: float = 60.0,
        options: RunOptions | None = None,
    ) -> OneShot:
        texts = inputs["text"]
        self.calls.append((model, texts, options))
        if model in self.busy:
            raise UpstreamFailure(BUSY)
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(0)
            for text in texts:  # a failing call fails sooner than the others answer
                if text in self.fails_on:
                    raise UpstreamFailure(self.fails_on[text])
            for _ in range(3):
                await asyncio.sleep(0)
            return OneShot(result={"shape": [len(texts), 2], "data": [vector(t) for t in texts]})
        finally:
            self.running -= 1

    async def drain(self, source: object, relay: object) -> None:
        raise AssertionError("an embedding is never drained")


def post(body: dict[str, Any], model: BatchModel, env: dict[str, str] = ENV) -> WebResponse:
    req = request(
        "POST", "/v1/embeddings", json.dumps(body).encode(), content_type="application/json"
    )
    return call(req, env, model, FakeLimiter())  # type: ignore[arg-type]


def texts(n: int) -> list[str]:
    return [f"text number {i}" for i in range(n)]


def test_2048_texts_in_calls_of_100_at_most_4_at_once_joined_in_order() -> None:
    model = BatchModel()
    sent = texts(2048)
    response = post({"input": sent, "model": BGE}, model)
    assert response.status == 200, response.body
    body = json.loads(whole(response))
    assert [d["index"] for d in body["data"]] == list(range(2048))
    assert [d["embedding"] for d in body["data"]] == [vector(t) for t in sent]
    assert [len(texts) for _, texts, _ in model.calls] == [100] * 20 + [48]
    assert [t for _, texts, _ in model.calls for t in texts] == sent  # each text sent once
    assert model.most == AT_ONCE == 4
    assert {m for m, _, _ in model.calls} == {BGE}
    # usage: each call's estimate (4 characters a token), summed
    assert body["usage"]["prompt_tokens"] == sum(-(-len(t) // 4) for t in sent)


def test_token_ids_count_as_one_input_each() -> None:
    hello = [9906, 11, 1917, 0]  # "Hello, world!" in cl100k_base
    model = BatchModel()
    response = post({"input": [hello, "text"] * 75, "model": BGE}, model)
    assert response.status == 200, response.body
    assert [len(texts) for _, texts, _ in model.calls] == [100, 50]
    vectors = [d["embedding"] for d in json.loads(whole(response))["data"]]
    assert vectors == [vector("Hello, world!"), vector("text")] * 75


def test_a_failing_call_fails_the_request_as_that_call_alone_and_no_call_starts_after() -> None:
    sent = texts(1000)  # 10 calls
    model = BatchModel(fails_on={sent[150]: BUSY})  # in the second call
    batched = post({"input": sent, "model": BGE}, model)
    # the four first calls were under way; none of the six after them was made
    assert [texts[0] for _, texts, _ in model.calls] == [sent[0], sent[100], sent[200], sent[300]]
    alone = post({"input": [sent[150]], "model": BGE}, BatchModel(fails_on={sent[150]: BUSY}))
    assert (batched.status, batched.body) == (alone.status, alone.body)
    assert batched.code == "upstream_busy" and batched.status == 429


def test_a_fallback_answers_every_batch_or_none() -> None:
    """With an embedding model among the fallbacks, the first call goes alone; the model that
    answers it answers the rest, with no fallback, and may queue (no rejectIfBusy)."""
    env = {"AI_MODELS": "m1", "AI_FALLBACK_MODELS": GEMMA}
    model = BatchModel(busy={BGE})
    response = post({"input": texts(250), "model": BGE}, model, env)
    assert response.status == 200 and json.loads(whole(response))["model"] == GEMMA
    assert [(m, len(t)) for m, t, _ in model.calls] == [
        (BGE, 100),
        (GEMMA, 100),
        (GEMMA, 100),
        (GEMMA, 50),
    ]
    assert [o.reject_if_busy for _, _, o in model.calls if o] == [True, False, False, False]
    assert model.most == 2  # the two calls after the first one, together

    answered = BatchModel()
    response = post({"input": texts(250), "model": BGE}, answered, env)
    assert [m for m, _, _ in answered.calls] == [BGE] * 3 and answered.most == 2


def test_the_batch_is_the_smallest_of_the_models_that_may_answer() -> None:
    settings = load({"AI_MODELS": "m1", "AI_FALLBACK_MODELS": "@cf/meta/x," + GEMMA}.get)
    assert batch_size(BGE, settings) == 100
    small = catalog.Embedder(width=8, tokens=8, batch=7)
    catalog.EMBEDDERS["@cf/test/small"] = small
    try:
        assert batch_size(BGE, load({**ENV, "AI_FALLBACK_MODELS": "@cf/test/small"}.get)) == 7
        assert batch_size("@cf/test/unknown", settings) == 100
    finally:
        del catalog.EMBEDDERS["@cf/test/small"]


def test_in_order_keeps_the_order_of_jobs_that_end_out_of_order() -> None:
    async def after(turns: int, value: int) -> int:
        for _ in range(turns):
            await asyncio.sleep(0)
        return value

    jobs = [lambda t=t, v=v: after(t, v) for v, t in enumerate([5, 0, 3, 1, 4, 2])]
    assert asyncio.run(in_order(jobs, 3)) == [0, 1, 2, 3, 4, 5]
    assert asyncio.run(in_order(jobs[:1], 4)) == [0]
