"""One structured log line per request, written when the request ends.

The line says what an operator needs to match a user's report (the request id every API
response carries as `x-request-id`) and to judge the answer (outcome, code, timings,
tokens), and nothing of the conversation: no message text, no header value but the
request id. It is filled as the request goes (the shell at the start, the model call,
the response, the relay at the end of a stream), so unlike the core's values it is
mutable; it belongs to one request and is written once.

A durable conversation's id is the capability to read it, so no line carries one: a path's
id becomes `{id}` and the line gets the id's keyed hash (`conversation`) to correlate by;
every other line has any such run of hex replaced too (docs/OPERATING.md).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from urllib.parse import unquote

from streaming.relay import Failed, Finished, Relay, Relayed
from surface.web import Forwarded, WebResponse

# cf-ray is set by Cloudflare's edge; anything else a client sends there is not trusted
# into a header or a log line unless it looks like one.
_RAY = re.compile(r"[0-9A-Za-z-]{1,64}")

Emit = Callable[[str], None]

# The secret var that keys the hash of a conversation id in the logs. Unset, the key is this
# public constant: the hash still cannot be turned back into the 128 random bits of an id, but
# anyone who holds an id can then find its lines (docs/OPERATING.md).
HASH_KEY_VAR = "LOG_HASH_KEY"
DEFAULT_HASH_KEY = "ai-chat log ids"
# A conversation id (32 hex digits, see conversation_api) or anything that may hold one.
_HEX_RUN = re.compile(r"[0-9a-fA-F]{32,}")
# Characters of a path a log line keeps: every route's path fits; a client's long one is cut.
ROUTE_CHARS = 200


def id_hash(value: str, key: str | None) -> str:
    """16 hex digits of HMAC-SHA256(key, value): the same for the same id and key, anywhere."""
    secret = (key or DEFAULT_HASH_KEY).encode()
    return hmac.new(secret, value.encode(), hashlib.sha256).hexdigest()[:16]


def redacted(text: str) -> str:
    """The text with every run of 32 or more hex digits replaced by {id}."""
    return _HEX_RUN.sub("{id}", text)


def route_of(path: str, key: str | None) -> tuple[str, str | None]:
    """(the path as logged, the keyed hash of the id it names or None). Percent escapes are
    decoded first, so an id spelled with them is found too."""
    plain = unquote(path, errors="replace") if "%" in path else path
    found = _HEX_RUN.search(plain)
    logged = redacted(plain)  # redacted first: a cut cannot leave part of an id behind
    if len(logged) > ROUTE_CHARS:
        logged = logged[:ROUTE_CHARS] + "…"
    return logged, (id_hash(found.group(), key) if found else None)


def request_id(headers: Mapping[str, str]) -> str:
    ray = headers.get("cf-ray")
    if ray is not None and _RAY.fullmatch(ray):
        return ray
    return os.urandom(8).hex()


def _ms(seconds: float) -> int:
    return max(round(seconds * 1000), 0)


def _count(usage: object, key: str) -> int | None:
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _outcome(status: int, code: str | None) -> str:
    if code == "client_gone":  # a whole answer's client left: as a stream's does
        return "client_gone"
    if code == "upstream_timeout":
        return "timed_out"
    if status >= 500:
        return "failed"
    return "rejected" if status >= 400 else "complete"


@dataclass(slots=True, kw_only=True)
class RequestLog:
    request_id: str
    method: str
    route: str  # the path, with any conversation id as {id} (route_of)
    started: float  # monotonic seconds
    conversation: str | None = None  # the keyed hash of the path's conversation id
    status: int | None = None
    model: str | None = None
    outcome: str | None = None
    code: str | None = None
    ttfb_ms: int | None = None
    duration_ms: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    reasoning_tokens: int | None = None
    upstream_request_id: str | None = None
    malformed_frames: int = 0
    tokens_cached: int | None = None
    # Every model called, in order: [model, Workers AI error code or None for the one that
    # answered]; in the line only when one failed and another was called (a fallback was
    # tried); an embedding request's batches add `model_calls`, their count.
    attempts: list[tuple[str, int | None]] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    # The budget a refused expansion passed (doors/responses/expansion.py): its name only.
    budget: str | None = None
    # The head went out before the answer (surface/early_head.py): the client saw 200 and
    # whitespace, then the body; `status` is the answer's own.
    early_head: bool = False
    written: bool = False
    # Adds the answer's tokens (in + out) to its owner's daily count (daily_budget.py), when a
    # budget is set: called once, when the line is written, the one place every answer ends.
    spend: Callable[[int], None] | None = None
    budget_owner: str | None = None  # whose count `spend` adds to; never in the line
    # The owner's keyed hash (id_hash), the AI Gateway's metadata.owner; set when a gateway is.
    owner_hash: str | None = None

    def responded(self, response: WebResponse, now: float) -> None:
        """The response is known. A whole body ends the request here; a relayed stream ends
        in relay_ended(). The error code and usage are the response's own fields."""
        self.status = response.status
        if isinstance(response.body, Relayed):
            return
        if isinstance(response.body, Forwarded) and response.body.logged:
            self.written = True  # a durable turn: its object writes the line when it ends
            return
        self.code = response.code if response.status >= 400 else None
        self.outcome = _outcome(response.status, self.code)
        self._usage(response.usage)
        self.ttfb_ms = self.duration_ms = _ms(now - self.started)

    def relay_ended(self, relay: Relay, *, client_gone: bool, now: float) -> None:
        ending = relay.ending
        if isinstance(ending, Finished):
            self.outcome, self.code = "complete", None
        elif isinstance(ending, Failed):
            self.outcome, self.code = _outcome(500, ending.code), ending.code
        else:
            self.outcome = "client_gone" if client_gone else "failed"
        self._usage(relay.usage)
        self.malformed_frames = relay.malformed
        self.details.extend(relay.notes)
        if relay.first_output_at is not None:
            self.ttfb_ms = _ms(relay.first_output_at - self.started)
        self.duration_ms = _ms(now - self.started)

    def _usage(self, usage: Mapping[str, int] | None) -> None:
        self.tokens_in = _count(usage, "prompt_tokens")
        self.tokens_out = _count(usage, "completion_tokens")
        self.reasoning_tokens = _count(usage, "reasoning_tokens")
        self.tokens_cached = _count(usage, "cached_tokens")

    def line(self) -> dict[str, object]:
        line: dict[str, object] = {
            "message": "request",
            "level": "error" if self.outcome == "failed" else "info",
            "request_id": self.request_id,
            "method": self.method,
            "route": self.route,
            "status": self.status,
            "outcome": self.outcome,
            "code": self.code,
            "model": self.model,
            "ttfb_ms": self.ttfb_ms,
            "duration_ms": self.duration_ms,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "reasoning_tokens": self.reasoning_tokens,
            "upstream_request_id": self.upstream_request_id,
            "malformed_frames": self.malformed_frames,
        }
        if self.conversation is not None:
            line["conversation"] = self.conversation
        if self.early_head:
            line["early_head"] = True
        if self.tokens_cached is not None:
            line["tokens_cached"] = self.tokens_cached
        if self.budget is not None:
            line["budget"] = self.budget
        if len(self.attempts) > 1 and any(error is not None for _, error in self.attempts):
            line["attempts"] = [{"model": model, "error": error} for model, error in self.attempts]
        if len(self.attempts) > 1:
            line["model_calls"] = len(self.attempts)
        return line

    def write(self, emit: Emit) -> None:
        """The details first (each its own line, same request id), then the request line; once."""
        if self.written:
            return
        self.written = True
        tokens = (self.tokens_in or 0) + (self.tokens_out or 0)
        if self.spend is not None and tokens > 0:
            try:
                self.spend(tokens)
            except Exception as exc:  # the line is still written; the count is short
                self.details.append(f"the tokens could not be counted: {exc}")
        for detail in self.details:
            emit(detail_line(self.request_id, "warning", "relay", redacted(detail)))
        emit(json.dumps(self.line(), separators=(",", ":")))


def detail_line(request_id: str | None, level: str, logger: str, message: str) -> str:
    return json.dumps(
        {"message": message, "level": level, "logger": logger, "request_id": request_id},
        separators=(",", ":"),
    )


# The request being served by the current asyncio task: the shell sets it, so that what
# the core logs (an upstream error's internal detail) carries the request id.
CURRENT: ContextVar[RequestLog | None] = ContextVar("request_log", default=None)


class JsonLines(logging.Handler):
    """Each log record as one JSON line with the current request's id."""

    def __init__(self, emit: Emit) -> None:
        super().__init__(logging.INFO)
        self._emit = emit

    def emit(self, record: logging.LogRecord) -> None:
        current = CURRENT.get()
        rid = current.request_id if current is not None else None
        message = redacted(record.getMessage())
        self._emit(detail_line(rid, record.levelname.lower(), record.name, message))
