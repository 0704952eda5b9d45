"""The Worker's route table, composed in one place from each API's own routes."""

from __future__ import annotations

from app import CHAT_API, RouteTable
from openai_compat import OPENAI_API

TABLE = RouteTable.of(CHAT_API, OPENAI_API)
