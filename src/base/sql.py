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


class Tables:
    """A store's tables, made by its first statement: an object that never stores makes none."""

    __slots__ = ("_made", "_schema", "_sql")

    def __init__(self, sql: Sql, schema: tuple[str, ...]) -> None:
        self._sql, self._schema, self._made = sql, schema, False

    def ready(self) -> None:
        if not self._made:
            for statement in self._schema:
                self._sql.run(statement)
            self._made = True
