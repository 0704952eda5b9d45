"""GET /api/v1/usage: who the request speaks for (the Access identity's email, when signed in),
and that owner's tokens today against OWNER_DAILY_TOKENS."""

from __future__ import annotations

import time

from base.errors import ApiError
from surface import daily_budget
from surface.guard import PAGE_OR_KEY
from surface.owners import request_owner
from surface.routing import Api, Context, Route, app_error
from surface.web import WebResponse, json_response

PATH = "/api/v1/usage"


def budget_owner(ctx: Context) -> str:
    """Whose budget a request spends: its owner (owners.request_owner), else its address."""
    return request_owner(ctx) or daily_budget.address_owner(ctx.request.headers)


async def usage(ctx: Context) -> WebResponse:
    cap = daily_budget.limit(ctx.env) if ctx.env is not None else None
    owner = budget_owner(ctx)
    used = None
    if cap is not None:
        if ctx.budgets is None:
            raise ApiError(500, "server_misconfigured", "The service is misconfigured.")
        used = await ctx.budgets.used(owner)
    now = time.time()
    identity = ctx.identity
    return json_response(
        200,
        {
            "owner": owner.split(":", 1)[0],  # access, key, token or address: never the value
            "signed_in": None if identity is None else {"email": identity.email},
            "day": daily_budget.day_of(now),
            "used": used,
            "limit": cap,
            "remaining": None if cap is None or used is None else max(0, cap - used),
            "resets_at": int(daily_budget.next_midnight(now)),
        },
    )


USAGE_API = Api(
    prefix=PATH,
    routes={
        PATH: Route(methods={"GET": usage}, render_error=app_error, access=PAGE_OR_KEY, reads=True)
    },
    render_error=app_error,
)
