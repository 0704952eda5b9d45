"""The Durable Object of one owner's daily token count (daily_budget.DailyUsage holds every
statement, tested on the host), and daily_budget.Budgets over its namespace."""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from typing import Any
from urllib.parse import urlsplit

import js
from workers import DurableObject, Response

from base.errors import ApiError
from shell.js_glue import DurableSql, js_headers, js_object
from surface.daily_budget import DailyUsage
from surface.request_log import redacted
from surface.web import JSON_HEADERS

log = logging.getLogger("budget")


class OwnerBudget(DurableObject):  # type: ignore[misc]  # the SDK has no stubs
    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self._usage = DailyUsage(DurableSql(ctx.storage))

    async def on_fetch(self, request: Any) -> Response:
        raw = request.js_object
        op = urlsplit(str(raw.url)).path.strip("/")
        try:
            payload = json.loads(str(await raw.text()) or "{}")
            answer, status = self._usage.handle(op, payload), 200
        except ApiError as error:
            answer, status = {"error": error.code, "message": error.message}, error.status
        except Exception:
            log.error("owner budget: %s failed: %s", op, redacted(traceback.format_exc()))
            answer, status = {"error": "internal_error", "message": "The budget failed."}, 500
        return Response(json.dumps(answer), status=status, headers=js_headers(JSON_HEADERS))


class DurableBudgets:
    """daily_budget.Budgets: one OwnerBudget object per owner, named by the owner. A count is
    added in the background: ctx.waitUntil keeps the request's (or the object's) context alive
    until it is written, and a failure is logged (with no owner in it)."""

    def __init__(self, namespace: Any, ctx: Any) -> None:
        self._namespace = namespace
        self._ctx = ctx
        self._writes: set[asyncio.Future[None]] = set()

    def _fetch(self, owner: str, op: str, payload: dict[str, Any]) -> Any:
        stub = self._namespace.get(self._namespace.idFromName(owner))
        init = {"method": "POST", "body": json.dumps(payload)}
        return stub.fetch(js.Request.new(f"https://budget/{op}", js_object(init)))

    async def used(self, owner: str) -> int:
        response = await self._fetch(owner, "used", {})
        text = str(await response.text())
        if int(response.status) != 200:
            raise RuntimeError(f"the owner's budget answered {int(response.status)}")
        return int(json.loads(text)["used"])

    def spend(self, owner: str, tokens: int) -> None:
        promise = self._fetch(owner, "add", {"tokens": tokens})
        done = js.Promise.withResolvers()
        self._ctx.waitUntil(done.promise)

        async def written() -> None:
            try:
                response = await promise
                if int(response.status) != 200:
                    log.error("tokens were not counted: %s", int(response.status))
            except Exception as exc:
                log.error("tokens were not counted: %s", exc)
            finally:
                done.resolve()

        task = asyncio.ensure_future(written())
        self._writes.add(task)  # a task nothing holds may be collected before it ends
        task.add_done_callback(self._writes.discard)
