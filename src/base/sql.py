"""A Durable Object's SQLite as the core sees it (the shell's DurableSql is one): every store
of conversations, owners, responses and budgets is plain Python over this."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Sql(Protocol):
    def rows(self, query: str, *params: object) -> list[dict[str, Any]]:
        """Run one statement; the rows it returns, as dicts."""
        ...

    def run(self, query: str, *params: object) -> None:
        """Run one statement that returns nothing (no rows are converted)."""
        ...

    def atomic(self, work: Callable[[], None]) -> None:
        """Run `work` as one transaction: if it raises, none of its writes stays."""
        ...
