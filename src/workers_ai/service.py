"""The one way every door, and the Durable Object, opens the model: env.AI.run() with the
asked model or the first fallback that answers (AI_FALLBACK_MODELS), its session-affinity key
and the API key's id, bounded by the idle limit; and the relay and the whole answer around it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from base import catalog, page
from base.errors import ApiError, ClientGone
from base.settings import Settings
from base.text import well_formed_json
from streaming.relay import (
    Encoder,
    Failed,
    Finished,
    OneShot,
    Relay,
    Relayed,
    Source,
    Timing,
    Upstream,
    relay_whole,
)
from workers_ai import affinity, budget, fallback, upstream_errors

log = logging.getLogger("service")


class UpstreamFailure(Exception):
    """env.AI.run() failed before any byte of the answer was streamed."""


class UpstreamSilent(Exception):
    """env.AI.run() gave nothing (no stream, no result) within the time it was allowed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """What the core asks of one env.AI.run() beyond model and inputs; the shell adds the
    AI Gateway's options (tagged with key_id) and the abort signal."""

    reject_if_busy: bool = False  # a busy model fails at once (3040) instead of queueing
    affinity: str | None = None  # the conversation key (affinity.py)
    key_id: str | None = None  # the API key's id (never the key), for the gateway's metadata

    def binding_options(self) -> dict[str, Any]:
        """The options the Ai class reads itself (extraHeaders) or sends on (rejectIfBusy)."""
        options: dict[str, Any] = {}
        if self.reject_if_busy:
            options["rejectIfBusy"] = True
        if self.affinity:
            options["extraHeaders"] = {affinity.HEADER: self.affinity}
        return options


class ChatModel(Protocol):
    async def stream(
        self,
        model: str,
        inputs: dict[str, Any],
        *,
        timeout: float,
        options: RunOptions | None = None,
    ) -> Upstream:
        """Raises UpstreamFailure, or UpstreamSilent after `timeout` seconds.

        The timeout is the model's to keep: in the Worker a Python (asyncio) timer would
        outlive a request whose client left, holding its objects for good (measured on
        workerd), so the shell waits with a JS AbortSignal.timeout instead."""
        ...

    async def drain(self, source: Source, relay: Relay) -> None:
        """Runs the relay over a streamed answer to its end, for a client that wants it whole:
        the relay's idle limit applies (silence times out, not length), and a client that
        leaves stops the read. The relay's encoder collects; nothing is written anywhere."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Opened:
    source: Upstream
    model: str  # the model that answers: the one asked, or a fallback


async def open_answer(
    ai: ChatModel,
    settings: Settings,
    model: str,
    inputs: dict[str, Any],
    *,
    session: str,
    key_id: str | None,
) -> Opened:
    """The first model of the asked one and AI_FALLBACK_MODELS that answers. A fallback is
    tried only when the model before it is busy (3040) or needs a paid plan (5035), and only
    before the first byte: once run() has answered, the answer is that model's, and the door
    names and relays that model (Opened.model). Every call but the last is made with
    rejectIfBusy, so a busy model fails at once instead of queueing; the last one queues, as a
    call without fallbacks does. `session`: the session-affinity key (affinity.key), sent with
    every call; `key_id`: the API key's id, for the AI Gateway's metadata."""
    return await _open_planned(ai, settings, _plan(settings, model, inputs), session, key_id)


def _plan(settings: Settings, model: str, inputs: dict[str, Any]) -> list[tuple[str, Any]]:
    """The models to try, in order, with the inputs each gets; raises what the client must fix
    (the asked model's context window) before any call."""
    plan = []
    inputs = page.with_system_prompt(inputs, settings.system_prompt)
    for name in fallback.candidates(model, settings.fallback_models):
        sent = fallback.inputs_for(name, inputs, model, thinking_mode=settings.thinking)
        if sent is None:
            continue
        if name == model:
            budget.check(model, sent)  # the asked model's window: the client's to fix
        elif not budget.fits(name, sent):
            continue
        plan.append((name, sent))
    return plan


async def _open_planned(
    ai: ChatModel,
    settings: Settings,
    plan: list[tuple[str, Any]],
    session: str,
    key_id: str | None,
) -> Opened:
    limit = settings.give_up_after
    for i, (name, sent) in enumerate(plan):
        last = i == len(plan) - 1
        options = RunOptions(reject_if_busy=not last, affinity=session, key_id=key_id)
        try:
            # Whatever field carried it (a tool's arguments, say), no lone surrogate goes upstream.
            source = await ai.stream(name, well_formed_json(sent), timeout=limit, options=options)
        except UpstreamSilent:
            log.error("env.AI.run(%r) sent nothing for %gs", name, limit)
            raise ApiError(
                504, "upstream_timeout", f"The model sent nothing for {limit:g} seconds."
            ) from None
        except UpstreamFailure as exc:
            code, _ = upstream_errors.parse(str(exc))
            error, detail = upstream_errors.classify(str(exc), model=name, now=time.time())
            if not last and code in upstream_errors.FALLBACK_CODES:
                log.warning("%s; trying %s", detail, plan[i + 1][0])
                continue
            log.error("%s", detail)
            raise error from exc
        return Opened(source=source, model=name)
    raise AssertionError(
        "the asked model is always in the plan"
    )  # budget.check raised, or it was called


async def answer_whole(ai: ChatModel, source: Upstream, relay: Relay) -> Finished:
    """A non-streamed answer: the relay run to its end (its encoder keeps what it needs), a
    one-shot result at once, a stream through the model's drain, so silence times out, not
    length. A failure is the client's error (504 for silence, else 502); no ending at all means
    the client went away."""
    if isinstance(source, OneShot):
        relay_whole(relay, source)
    else:
        await ai.drain(source, relay)
    ending = relay.ending
    if isinstance(ending, Failed):
        raise ApiError(
            504 if ending.code == "upstream_timeout" else 502, ending.code, ending.message
        )
    if ending is None:
        raise ClientGone()
    return ending


def new_relay(
    settings: Settings,
    encoder: Encoder,
    max_tokens: int,
    model: str,
    stops: tuple[str, ...] = (),
) -> Relay:
    """The relay of one answer; `model` is the one that answers (its thinking flag)."""
    s = settings
    timing = Timing(ping_after=s.ping_after, give_up_after=s.give_up_after)
    opens = catalog.info(model).opens_thinking
    return Relay(
        encoder,
        timing,
        now=time.monotonic(),
        max_tokens=max_tokens,
        opens_thinking=opens,
        stops=stops,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One model call a request asks for: its inputs and its session-affinity key."""

    inputs: dict[str, Any]
    session: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Asked:
    """What a door asks of the model: one call, or (legacy completions' list of prompts)
    several, each answered on its own with the same model, limits and stop strings."""

    model: str
    calls: tuple[Call, ...]
    key_id: str | None
    max_tokens: int
    stops: tuple[str, ...] = ()

    @classmethod
    def one(
        cls,
        *,
        model: str,
        inputs: dict[str, Any],
        session: str,
        key_id: str | None,
        max_tokens: int,
        stops: tuple[str, ...] = (),
    ) -> Asked:
        """One call: every door but legacy completions' list of prompts."""
        call = Call(inputs=inputs, session=session)
        return cls(model=model, calls=(call,), key_id=key_id, max_tokens=max_tokens, stops=stops)


@dataclass(frozen=True, slots=True, kw_only=True)
class Answered:
    model: str  # the model that answered this call (a fallback, maybe)
    finished: Finished


async def streamed(
    ai: ChatModel, settings: Settings, asked: Asked, encoder: Callable[[str], Encoder]
) -> Relayed:
    """The streamed answer to the one call asked: the relay over the model's stream, run by the
    shell; `encoder(model)` re-frames it, given the model that answers. A stream relays one
    upstream, so one call only."""
    [call] = asked.calls
    opened = await open_answer(
        ai, settings, asked.model, call.inputs, session=call.session, key_id=asked.key_id
    )
    relay = new_relay(settings, encoder(opened.model), asked.max_tokens, opened.model, asked.stops)
    return Relayed(source=opened.source, relay=relay)


class Batch:
    """Answers made for one request: the first failure (in time) is the request's, and the
    others are cancelled then. A relay closed from outside is one its driver stops at its next
    read or tick (RelayPipe, host_driver), the upstream with it, as on the idle limit."""

    __slots__ = ("_relays", "error")

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self._relays: list[Relay] = []

    def add(self, relay: Relay) -> None:
        self._relays.append(relay)

    def fail(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
            for relay in self._relays:
                relay.cancel(SIBLING_FAILED)  # nobody reads it: its bytes are dropped


# How a sibling of a failed answer ends (nobody sees it: the request answers the first failure).
SIBLING_FAILED = Failed(code="cancelled", message="Another answer of this request failed.")


def named_by_answer(encoder: Encoder) -> Callable[[str], Encoder]:
    """An encoder that names no model (the door reads it from Answered.model), for
    answers_whole."""
    return lambda model: encoder


async def answers_whole(
    ai: ChatModel,
    settings: Settings,
    asked: Asked,
    collectors: Sequence[Callable[[str], Encoder]],
) -> list[Answered]:
    """Every call asked, answered whole, at the same time, in the calls' order; each of
    `collectors`, given the model that answers, makes the encoder that collects its call's
    answer. What the client must fix (a context window) is
    raised before any call is made. Each call is drained by the model's drain, whose reader
    the client's leaving stops; when one call fails, the others are stopped (Batch) and the
    first failure is raised once every call has ended."""
    assert len(collectors) == len(asked.calls)
    plans = [_plan(settings, asked.model, call.inputs) for call in asked.calls]
    batch = Batch()

    async def one(
        plan: list[tuple[str, Any]], call: Call, collector: Callable[[str], Encoder]
    ) -> Answered:
        try:
            opened = await _open_planned(ai, settings, plan, call.session, asked.key_id)
            if batch.error is not None:  # a sibling failed while this one opened
                if not isinstance(opened.source, OneShot):
                    opened.source.cancel()
                raise ApiError(502, SIBLING_FAILED.code, SIBLING_FAILED.message)
            encoder = collector(opened.model)
            relay = new_relay(settings, encoder, asked.max_tokens, opened.model, asked.stops)
            batch.add(relay)
            return Answered(
                model=opened.model, finished=await answer_whole(ai, opened.source, relay)
            )
        except BaseException as exc:
            batch.fail(exc)
            raise

    if len(plans) == 1:
        return [await one(plans[0], asked.calls[0], collectors[0])]
    results = await asyncio.gather(
        *(one(*each) for each in zip(plans, asked.calls, collectors, strict=True)),
        return_exceptions=True,
    )
    if batch.error is not None:
        raise batch.error
    return [r for r in results if isinstance(r, Answered)]


def summed_usage(answers: Sequence[Answered]) -> dict[str, int] | None:
    """The usage of several answers, key by key; None unless every answer reported one."""
    total: dict[str, int] = {}
    for answer in answers:
        if answer.finished.usage is None:
            return None
        for key, value in answer.finished.usage.items():
            total[key] = total.get(key, 0) + value
    return total
