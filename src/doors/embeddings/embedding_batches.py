"""A request's texts embedded in calls of at most the model's batch (its input schema's maxItems,
catalog.Embedder.batch), a few calls at a time, each opened by service.open_answer, the one way
every door calls the model (keys' ids, the session key, fallbacks, the idle limit).

Every vector of one answer comes from one model: the first call may fall back to an embedding
model of AI_FALLBACK_MODELS as any call may, and the calls after it go to the model that answered
it, with no fallback (a busy model then queues them). When no embedding model is among the
fallbacks, every call is the asked model's from the start, and they all run AT_ONCE at a time.

A call that fails fails the request with its own error, the one a request of that batch alone
would have had; no call is started after it, and the calls under way are waited for and their
answers dropped, so nothing of the request outlives its response.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from base import catalog
from base.errors import ApiError
from base.settings import Settings
from doors.embeddings.embedding_vectors import FLOAT, Part, part
from streaming.relay import OneShot
from workers_ai import fallback
from workers_ai.service import ChatModel, open_answer

# Calls under way at once: on workerd four were as fast as six against a model that takes 150 ms
# a call (the Worker's own CPU per answer is then the wait), and they leave two of the six
# connections a Worker request may hold open (bench/notes/2026-11-26-embedding-batches.md).
AT_ONCE = 4
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Shape:
    """How the answer keeps each vector: the asked width (None: the model's) and encoding."""

    width: int | None
    encoding: str


def _fallbacks(model: str, settings: Settings) -> list[str]:
    """The other models that may answer an embedding call to `model`."""
    others = fallback.candidates(model, settings.fallback_models)[1:]
    return [name for name in others if fallback.inputs_for(name, {"text": []}, model) is not None]


def batch_size(model: str, settings: Settings) -> int:
    """The fewest texts one call takes, of the models that may answer."""
    return min(
        facts.batch if (facts := catalog.embedder(name)) else catalog.EMBEDDING_BATCH
        for name in (model, *_fallbacks(model, settings))
    )


async def in_order(jobs: Sequence[Callable[[], Awaitable[T]]], at_once: int) -> list[T]:
    """Every job's result, in the jobs' order, at most `at_once` of them under way; after the
    first failure no job starts, the ones under way end, and that failure is raised."""
    done: dict[int, T] = {}
    failed: list[Exception] = []
    waiting = iter(range(len(jobs)))  # shared: each runner takes the next job

    async def runner() -> None:
        for i in waiting:
            if failed:
                return
            try:
                done[i] = await jobs[i]()
            except Exception as error:
                failed.append(error)
                return

    await asyncio.gather(*(runner() for _ in range(min(at_once, len(jobs)))))
    if failed:
        raise failed[0]
    return [done[i] for i in range(len(jobs))]


async def embed(
    ai: ChatModel,
    settings: Settings,
    model: str,
    texts: tuple[str, ...],
    *,
    session: str,
    key_id: str | None,
    width: int | None = None,
    encoding: str = FLOAT,
) -> tuple[str, list[Part]]:
    """The model that answered, and its answer to each batch of `texts`, in order, each vector
    kept as the answer in `encoding` at `width` needs it (embedding_vectors.part)."""
    size = batch_size(model, settings)
    batches = [texts[i : i + size] for i in range(0, len(texts), size)]
    shape = Shape(width, encoding)

    def job(
        batch: tuple[str, ...], model: str, settings: Settings
    ) -> Callable[[], Awaitable[Part]]:
        async def call() -> Part:
            return (await _call(ai, settings, model, batch, session, key_id, shape))[1]

        return call

    if _fallbacks(model, settings):
        model, first = await _call(ai, settings, model, batches[0], session, key_id, shape)
        alone = replace(settings, fallback_models=())
        rest = await in_order([job(b, model, alone) for b in batches[1:]], AT_ONCE)
        return model, [first, *rest]
    return model, await in_order([job(b, model, settings) for b in batches], AT_ONCE)


async def _call(
    ai: ChatModel,
    settings: Settings,
    model: str,
    batch: tuple[str, ...],
    session: str,
    key_id: str | None,
    shape: Shape,
) -> tuple[str, Part]:
    opened = await open_answer(
        ai, settings, model, {"text": list(batch)}, session=session, key_id=key_id
    )
    source = opened.source
    if not isinstance(source, OneShot):  # an embedding model answers whole; never seen
        source.cancel()
        raise ApiError(502, "upstream_error", "The embedding model streamed; it should not.")
    return opened.model, part(source.result, batch, width=shape.width, encoding=shape.encoding)
