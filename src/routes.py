"""The Worker's route table, composed in one place from each API's own routes."""

from __future__ import annotations

from doors.chat.door import CHAT_API
from doors.completions.completions_api import COMPLETIONS_API
from doors.conversations.conversation_api import CONVERSATIONS_API
from doors.embeddings.embeddings_api import EMBEDDINGS_API
from doors.files.markdown_api import FILES_API
from doors.openai_chat.openai_compat import OPENAI_API
from doors.responses.responses_api import RESPONSES_API
from doors.ui_chat.ui_chat import UI_CHAT_API
from surface.census import STATS_API
from surface.health import HEALTH_API
from surface.routing import RouteTable
from surface.usage_api import USAGE_API

# The more specific prefixes first: a 404 takes the error shape of the first API it is under.
TABLE = RouteTable.of(
    HEALTH_API,
    STATS_API,
    CONVERSATIONS_API,
    USAGE_API,
    UI_CHAT_API,
    FILES_API,
    CHAT_API,
    RESPONSES_API,
    EMBEDDINGS_API,
    COMPLETIONS_API,
    OPENAI_API,
)
