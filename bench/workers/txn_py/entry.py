"""A Durable Object that tries ctx.storage.transactionSync() with a Python callable: committed,
a Python exception inside, a SQLite error inside (bench/probes/do_transaction.mjs)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from workers import DurableObject, Response, WorkerEntrypoint


class Probe(DurableObject):  # type: ignore[misc]
    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self.sql = ctx.storage.sql
        self.sql.exec("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v TEXT)")

    def count(self) -> int:
        return int(self.sql.exec("SELECT count(*) AS n FROM t").toArray().to_py()[0]["n"])

    def attempt(self, work: Callable[[], None]) -> dict[str, object]:
        self.sql.exec("DELETE FROM t")
        try:
            self.ctx.storage.transactionSync(work)
            error = None
        except BaseException as exc:
            error = f"{type(exc).__name__}: {str(exc)[:120]}"
        return {"error": error, "rows_after": self.count()}

    async def fetch(self, request: Any) -> Any:
        def ok() -> None:
            self.sql.exec("INSERT INTO t (v) VALUES ('a')")
            self.sql.exec("INSERT INTO t (v) VALUES ('b')")

        def raises() -> None:
            self.sql.exec("INSERT INTO t (v) VALUES ('a')")
            raise ValueError("ours")

        def too_big() -> None:
            self.sql.exec("INSERT INTO t (v) VALUES ('a')")
            self.sql.exec("INSERT INTO t (v) VALUES (?)", "x" * 3_000_000)

        tries = (("ok", ok), ("raises", raises), ("too_big", too_big))
        return Response(json.dumps({name: self.attempt(work) for name, work in tries}))


class Default(WorkerEntrypoint):  # type: ignore[misc]
    async def fetch(self, request: Any) -> Any:
        stub = self.env.PROBE.get(self.env.PROBE.idFromName("p"))
        return await stub.fetch(request)
