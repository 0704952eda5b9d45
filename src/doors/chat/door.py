"""POST /api/v1/chat (the page's SSE events) and GET /api/v1/models."""

from __future__ import annotations

from base import catalog
from base.version import VERSION
from checks.chat_request import parse_chat
from common import answers
from common.chat_events import ChatEncoder
from surface import daily_budget
from surface.guard import PAGE_OR_KEY
from surface.routing import Api, Context, Route, app_error, parse_body
from surface.web import WebResponse, json_response
from workers_ai import affinity
from workers_ai.service import Asked


async def chat(ctx: Context) -> WebResponse:
    request = parse_chat(await parse_body(ctx), ctx.settings)
    asked = Asked.one(
        model=request.model,
        inputs=request.ai_inputs(),
        session=affinity.key([ctx.request.headers.get(affinity.HEADER)], request.messages),
        key_id=ctx.key_id,
        max_tokens=request.max_tokens,
        stops=request.stop,
    )
    # message_stop names the model only when a fallback answered instead of the one asked.
    return await answers.streamed(
        ctx, asked, lambda model: ChatEncoder(model=None if model == request.model else model)
    )


async def models(ctx: Context) -> WebResponse:
    s = ctx.settings
    limits = {
        "max_messages": s.max_messages,
        "max_message_chars": s.max_message_chars,
        "max_body_bytes": s.max_body_bytes,
        "max_images": s.max_images,
        "max_image_bytes": s.max_image_bytes,
        "max_tokens_limit": s.max_tokens_limit,
        "default_max_tokens": s.default_max_tokens,
    }
    reasoning = [m for m in s.models if catalog.info(m).reasons]
    capabilities = {m: catalog.capabilities(m) for m in s.models}
    body = {
        "models": list(s.models),
        "default": s.default_model,
        "reasoning": reasoning,
        "capabilities": capabilities,
        # AI_THINKING: what a request that says nothing gets; the page's Think toggle starts so.
        "thinking": s.thinking,
        "limits": limits,
        # The page keeps its chats as durable conversations when this deployment has them.
        "conversations": ctx.conversations is not None,
        # The owner's settings for the page (base/page.py).
        "page": {
            "title": s.chat_title,
            "system_prompt": s.system_prompt,
            "suggestions": list(s.chat_suggestions),
        },
        "version": VERSION,
    }
    # Only when they are on, so the page asks GET /api/v1/usage only then.
    if ctx.identity is not None:
        body["signed_in"] = {"email": ctx.identity.email}
    cap = daily_budget.limit(ctx.env) if ctx.env is not None else None
    if cap is not None:
        body["daily_tokens"] = cap
    return json_response(200, body)


CHAT_API = Api(
    prefix="/api/",
    routes={
        "/api/v1/chat": Route(
            methods={"POST": chat},
            render_error=app_error,
            access=PAGE_OR_KEY,
            metered=True,
        ),
        "/api/v1/models": Route(
            methods={"GET": models}, render_error=app_error, access=PAGE_OR_KEY
        ),
    },
    render_error=app_error,
)
