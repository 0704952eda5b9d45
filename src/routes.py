"""The Worker's route table, composed in one place from each API's own routes."""

from __future__ import annotations

from app import CHAT_API, RouteTable
from census import STATS_API
from conversation_api import CONVERSATIONS_API
from health import HEALTH_API
from openai_compat import OPENAI_API
from responses_api import RESPONSES_API
from ui_chat import UI_CHAT_API

# The more specific prefixes first: a 404 takes the error shape of the first API it is under.
TABLE = RouteTable.of(
    HEALTH_API, STATS_API, CONVERSATIONS_API, UI_CHAT_API, CHAT_API, RESPONSES_API, OPENAI_API
)
