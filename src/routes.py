"""The Worker's route table, composed in one place from each API's own routes."""

from __future__ import annotations

from app import CHAT_API, RouteTable
from conversation_api import CONVERSATIONS_API
from openai_compat import OPENAI_API

# The conversations' routes first: CHAT_API's prefix (/api/) would claim their 404s.
TABLE = RouteTable.of(CONVERSATIONS_API, CHAT_API, OPENAI_API)
