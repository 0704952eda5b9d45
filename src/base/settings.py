"""Settings read from the Worker's environment (wrangler [vars] or the dashboard), per request."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from base import catalog, page, thinking

T = TypeVar("T", int, float)

Lookup = Callable[[str], "str | None"]

DEFAULT_MODELS = ("@cf/google/gemma-4-26b-a4b-it",)
# Active embedding models of the Workers AI catalog (read 2026-11): multilingual, English, and
# Google's EmbeddingGemma (Matryoshka widths). /v1/embeddings takes these; the chat doors none.
DEFAULT_EMBEDDING_MODELS = (
    "@cf/baai/bge-m3",
    "@cf/baai/bge-base-en-v1.5",
    "@cf/google/embeddinggemma-300m",
)


DEFAULT_TITLE = "AI chat"


class SettingsError(Exception):
    """The deployment is misconfigured; the message names the variable and its value, first:
    `AI_DEFAULT_MODEL='x' is not in AI_MODELS`."""

    @property
    def variable(self) -> str | None:
        """The var the owner has to fix: the one the message starts with (`X='v' ...`,
        `X is set but ...`)."""
        name = re.match(r"[A-Z][A-Z0-9_]*(?=[= ])", str(self))
        return name.group() if name else None

    def public_message(self) -> str:
        """What a client is told with 500 server_misconfigured: which var to fix, not its
        value (a var may hold something its owner would not show)."""
        if self.variable is None:
            return "The service is misconfigured."
        return f"The service is misconfigured: its owner has to fix the setting {self.variable}."


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    models: tuple[str, ...]
    default_model: str
    default_max_tokens: int
    max_tokens_limit: int
    max_body_bytes: int
    max_messages: int
    max_message_chars: int
    max_images: int
    max_image_bytes: int
    resume_grace: float  # seconds a durable turn goes on with no reader attached
    max_conversation_bytes: int
    max_conversation_images: int  # images a durable conversation may hold, all its turns
    ping_after: float
    give_up_after: float
    allowed_origins: tuple[str, ...]
    # The longest window of the windowed reader of the model's stream, in seconds (0: off,
    # one read per network chunk); see stream_window().
    stream_window: float = 0.09
    # Tried in order when the model is busy (3040) or needs a paid plan (5035) before its
    # first byte (app.open_answer); any Workers AI id, in AI_MODELS or not.
    fallback_models: tuple[str, ...] = ()
    # EMBEDDING_MODELS: the allow-list of POST /v1/embeddings, never in AI_MODELS.
    embedding_models: tuple[str, ...] = DEFAULT_EMBEDDING_MODELS
    # RESPONSES_TTL_DAYS: how long a stored response (/v1/responses, store: true) is kept.
    responses_ttl_days: float = 30.0
    # AI_THINKING: what a request that asks no reasoning effort gets (base/thinking.py).
    thinking: str = thinking.DEFAULT_MODE
    # MAX_OWNER_RESPONSE_BYTES: what one owner's stored responses may hold, all together.
    max_owner_response_bytes: int = 1024**3
    # The owner's (page.py): the page's title, the system message of every chat that has none
    # of its own (every door), and the suggestions of the page's empty chat.
    chat_title: str = DEFAULT_TITLE
    system_prompt: str = ""
    chat_suggestions: tuple[str, ...] = ()


def chat_disabled(lookup: Lookup) -> bool:
    """The kill switch: exactly "1" turns the API off; anything else leaves it on."""
    return lookup("AI_CHAT_DISABLED") == "1"


def _number(lookup: Lookup, key: str, default: T, kind: type[T], low: T, high: T) -> T:
    raw = lookup(key)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = kind(raw.strip())
    except ValueError:
        raise SettingsError(f"{key}={raw!r} is not a {kind.__name__}") from None
    if not (low <= value <= high) or (isinstance(value, float) and not math.isfinite(value)):
        raise SettingsError(f"{key}={raw!r} must be between {low} and {high}")
    return value


def _list(lookup: Lookup, key: str) -> tuple[str, ...]:
    raw = lookup(key) or ""
    return tuple(item for item in (part.strip() for part in raw.split(",")) if item)


# Bytes of request body per token of context window: 4 characters a token, with room for
# JSON escapes and multi-byte text.
BODY_BYTES_PER_TOKEN = 6
# Added to the body limit for images (base64, a third larger than the image).
IMAGE_BODY_BYTES = 4 * 1024 * 1024
UNKNOWN_WINDOW = 128_000  # tokens, for a model whose context window is not in the catalog


def body_limit_for(models: tuple[str, ...]) -> int:
    """The body the largest context window of the allow-list needs, images included."""
    window = max(catalog.info(m).context_window or UNKNOWN_WINDOW for m in models)
    return window * BODY_BYTES_PER_TOKEN + IMAGE_BODY_BYTES


# The last settings made, with every var they were read from and the catalog generation they
# saw: a request reads the vars again (a few us each) and, when none changed, skips the parse
# (~0.35 ms of workerd CPU: bench/notes/2026-11-28-window-cost.md). A var changed in the
# dashboard is seen on the next request, as before. Python values only.
_LAST: list[tuple[tuple[tuple[str, str | None], ...], int, Settings]] = []


def load(lookup: Lookup) -> Settings:
    """The settings from the vars, or SettingsError naming the var that is wrong."""
    generation = catalog.generation()
    if _LAST:
        read, seen_generation, settings = _LAST[0]
        if seen_generation == generation and all(lookup(key) == value for key, value in read):
            return settings
    seen: dict[str, str | None] = {}

    def recording(key: str) -> str | None:
        seen[key] = value = lookup(key)
        return value

    settings = _load(recording)
    _LAST[:] = [(tuple(seen.items()), generation, settings)]
    return settings


def _load(lookup: Lookup) -> Settings:
    models = _list(lookup, "AI_MODELS") or DEFAULT_MODELS
    default_model = (lookup("AI_DEFAULT_MODEL") or "").strip() or models[0]
    if default_model not in models:
        raise SettingsError(f"AI_DEFAULT_MODEL={default_model!r} is not in AI_MODELS")
    limit = _number(lookup, "AI_MAX_TOKENS_LIMIT", 4096, int, 1, 1_000_000)
    default_tokens = _number(lookup, "AI_MAX_TOKENS_DEFAULT", min(1024, limit), int, 1, limit)
    ping_after = _number(lookup, "STREAM_PING_SECONDS", 15.0, float, 0.01, 3600.0)
    give_up_after = _number(lookup, "UPSTREAM_TIMEOUT_SECONDS", 60.0, float, 0.01, 3600.0)
    body_timeout(lookup)  # the shell times the body with it; a bad value is misconfigured here
    whole_head_seconds(lookup)  # the shell reads it too (surface/early_head.py)
    # Checked here, so that a bad value is a misconfiguration before any call; gateway.py reads it.
    _number(lookup, "AI_GATEWAY_CACHE_TTL", 0, int, 0, 31_536_000)
    return Settings(
        models=models,
        default_model=default_model,
        default_max_tokens=default_tokens,
        max_tokens_limit=limit,
        max_body_bytes=_number(
            lookup, "MAX_BODY_BYTES", body_limit_for(models), int, 64, 64 * 1024 * 1024
        ),
        max_messages=_number(lookup, "MAX_MESSAGES", 1000, int, 1, 10_000),
        max_message_chars=_number(lookup, "MAX_MESSAGE_CHARS", 1_000_000, int, 1, 16_000_000),
        max_images=_number(lookup, "MAX_IMAGES", 8, int, 0, 100),
        max_image_bytes=_number(
            lookup, "MAX_IMAGE_BYTES", 3 * 1024 * 1024, int, 1024, 20 * 1024 * 1024
        ),
        resume_grace=_number(lookup, "RESUME_GRACE_SECONDS", 10.0, float, 0.0, 3600.0),
        max_conversation_bytes=_number(
            lookup, "MAX_CONVERSATION_BYTES", 32 * 1024 * 1024, int, 4096, 1024**3
        ),
        max_conversation_images=_number(lookup, "MAX_CONVERSATION_IMAGES", 32, int, 0, 10_000),
        ping_after=ping_after,
        give_up_after=give_up_after,
        allowed_origins=_list(lookup, "CORS_ALLOWED_ORIGINS"),
        fallback_models=_fallbacks(lookup),
        stream_window=stream_window(lookup),
        embedding_models=_embedding_models(lookup, models),
        responses_ttl_days=_number(lookup, "RESPONSES_TTL_DAYS", 30.0, float, 0.00001, 3650.0),
        thinking=_thinking(lookup),
        max_owner_response_bytes=_number(
            lookup, "MAX_OWNER_RESPONSE_BYTES", 1024**3, int, 1024 * 1024, 1024**4
        ),
        **page.owner_settings(lookup, SettingsError),
    )


def _thinking(lookup: Lookup) -> str:
    raw = lookup(thinking.VAR)
    value = (raw or "").strip().lower() or thinking.DEFAULT_MODE
    if value not in thinking.MODES:
        raise SettingsError(f"{thinking.VAR}={raw!r} must be one of {', '.join(thinking.MODES)}")
    return value


def _embedding_models(lookup: Lookup, chat: tuple[str, ...]) -> tuple[str, ...]:
    models = _list(lookup, "EMBEDDING_MODELS") or DEFAULT_EMBEDDING_MODELS
    for model in models:
        if model in chat:
            raise SettingsError(
                f"EMBEDDING_MODELS={lookup('EMBEDDING_MODELS')!r}: {model!r} is in AI_MODELS; "
                "a model is a chat model or an embedding model, not both"
            )
    return tuple(dict.fromkeys(models))


BODY_TIMEOUT_DEFAULT = 30.0


def body_timeout(lookup: Lookup) -> float:
    """BODY_TIMEOUT_SECONDS: how long a request body may take to arrive, counted from the
    request's start. The shell reads it before the core runs, since it times the body."""
    return _number(lookup, "BODY_TIMEOUT_SECONDS", BODY_TIMEOUT_DEFAULT, float, 0.1, 3600.0)


def whole_head_seconds(lookup: Lookup) -> float:
    """WHOLE_HEAD_SECONDS: how long a whole (non-streamed) answer may take before its head
    goes out, so that a client that leaves is noticed (surface/early_head.py); 0: never."""
    return _number(lookup, "WHOLE_HEAD_SECONDS", 10.0, float, 0.0, 3600.0)


STREAM_WINDOW_MS_DEFAULT = 90


def stream_window(lookup: Lookup) -> float:
    """STREAM_WINDOW_MS: the longest window, in ms, of the windowed reader of the model's
    stream (docs/OPERATING.md#stream-windows): tokens that arrive within it go out together,
    for a quarter to a half of the CPU per token. 0 turns windows off (latency first: each
    network chunk goes out as it comes, at the CPU cost of one stream read per chunk). The
    shell reads it where it builds the relay's pipe, so a bad value reads as the default
    there and is a misconfiguration in load()."""
    return _number(lookup, "STREAM_WINDOW_MS", STREAM_WINDOW_MS_DEFAULT, int, 0, 150) / 1000


def shell_stream_window(lookup: Lookup) -> float:
    """stream_window(), or the default when the value is bad (the core reports it)."""
    try:
        return stream_window(lookup)
    except SettingsError:
        return STREAM_WINDOW_MS_DEFAULT / 1000


def _fallbacks(lookup: Lookup) -> tuple[str, ...]:
    models = _list(lookup, "AI_FALLBACK_MODELS")
    for model in models:
        if not model.startswith("@") or any(c.isspace() for c in model):
            raise SettingsError(
                f"AI_FALLBACK_MODELS={lookup('AI_FALLBACK_MODELS')!r}: {model!r} is not a Workers AI model id"
            )
    return tuple(dict.fromkeys(models))
