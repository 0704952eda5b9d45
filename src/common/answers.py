"""The one recipe every door answers by: an Asked in; out, a stream (the relay the shell runs,
in an SSE response) or whole answers. Opening the model, fallbacks, the relay and its limits
are the model service's; a door brings only its parser and its encoder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from streaming.relay import Encoder
from surface.routing import Context
from surface.web import Headers, WebResponse, sse_response
from workers_ai import service


async def streamed(
    ctx: Context,
    asked: service.Asked,
    encoder: Callable[[str], Encoder],
    *,
    headers: Headers = (),
    after: Callable[[bool], None] | None = None,
) -> WebResponse:
    """The streamed answer to the one call asked; `encoder(model)` re-frames it, given the model
    that answers (the one asked, or a fallback); `after(gone)` runs once it has ended."""
    relayed = await service.streamed(ctx.model, ctx.settings, asked, encoder)
    if after is not None:
        relayed = replace(relayed, after=after)
    return sse_response(relayed, headers)


async def whole(
    ctx: Context, asked: service.Asked, collectors: Sequence[Callable[[str], Encoder]]
) -> list[service.Answered]:
    """Every call asked, answered whole (service.answers_whole)."""
    return await service.answers_whole(ctx.model, ctx.settings, asked, collectors)
