"""A module on_fetch and a Durable Object whose on_fetch sets an alarm and whose on_alarm
records that it fired: the flag's handler names, checked on workerd."""

from typing import Any

import js
from workers import DurableObject, Response


class Box(DurableObject):  # type: ignore[misc]  # the SDK has no stubs
    async def on_fetch(self, request: Any) -> Any:
        raw = request.js_object
        if str(raw.url).endswith("/set"):
            await self.ctx.storage.put("fired", "no")
            await self.ctx.storage.setAlarm(js.Date.now() + 100)
            return Response("set")
        return Response(str(await self.ctx.storage.get("fired")))

    async def on_alarm(self, *_: Any) -> None:
        await self.ctx.storage.put("fired", "yes")


async def on_fetch(request: Any, env: Any, ctx: Any) -> Any:
    stub = env.BOX.get(env.BOX.idFromName("a"))
    return await stub.fetch(request.url)
