"""The one way every door, and the Durable Object, opens the model: env.AI.run() with the
asked model or the first fallback that answers (AI_FALLBACK_MODELS), its session-affinity key
and the API key's id, bounded by the idle limit; and the relay and the whole answer around it."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Protocol

from checks.chat_request import well_formed_json
from streaming.relay import (
    Encoder,
    Failed,
    Finished,
    OneShot,
    Relay,
    Source,
    Timing,
    Upstream,
    relay_whole,
)
from surface.errors import ApiError, ClientGone
from surface.settings import Settings
from workers_ai import affinity, budget, catalog, fallback, upstream_errors

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
    plan = []
    for name in fallback.candidates(model, settings.fallback_models):
        sent = fallback.inputs_for(name, inputs, model)
        if sent is None:
            continue
        if name == model:
            budget.check(model, sent)  # the asked model's window: the client's to fix
        elif not budget.fits(name, sent):
            continue
        plan.append((name, sent))
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
    settings: Settings, encoder: Encoder, max_tokens: int, model: str, stops: tuple[str, ...] = ()
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
