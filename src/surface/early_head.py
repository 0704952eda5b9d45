"""The early head of a whole answer: a JSON answer still being made after WHOLE_HEAD_SECONDS
leaves with status 200 and its JSON headers, then a space each STREAM_PING_SECONDS, then the
answer (JSON allows whitespace before a value).

Why: workerd learns that a client closed its socket (a FIN) only when it writes to it; before
the head goes out, nothing is written, and a client that left costs the whole answer. After the
head, the client's kernel answers the next write with a reset, workerd aborts request.signal
and every model call of the request stops (bench/notes/2026-11-29-client-leaving.md). The
price: a failure after the head can no longer change the status; its error object is the body.
"""

from __future__ import annotations

from base import settings as config
from base.errors import ApiError
from base.settings import Lookup, SettingsError
from surface.policy import cors_headers
from surface.routing import app_error
from surface.web import API_HEADERS, JSON_HEADERS, Headers, Pieces, WebRequest, WebResponse

WHOLE_HEAD_SECONDS_DEFAULT = 10.0
# What a heartbeat writes: JSON whitespace, before the answer's value.
SPACE = b" "


def head_after(lookup: Lookup) -> float:
    """WHOLE_HEAD_SECONDS: how long a whole answer may take before its head goes out (0: never,
    every status exact; a client that closes without a reset is then not noticed before the
    answer's end). A bad value reads as the default here and is a misconfiguration in load()."""
    try:
        return config.whole_head_seconds(lookup)
    except SettingsError:
        return WHOLE_HEAD_SECONDS_DEFAULT


def head_headers(request: WebRequest, lookup: Lookup, request_id: str) -> Headers | None:
    """The early head's headers: those of the JSON answer it stands for (CORS included);
    None when the request may not have one (the settings or the origin refuse it)."""
    try:
        settings = config.load(lookup)
    except SettingsError:
        return None
    cors = cors_headers(request, settings.allowed_origins)
    if cors is None:
        return None
    return JSON_HEADERS + API_HEADERS + cors + (("x-request-id", request_id),)


def heartbeat_every(lookup: Lookup) -> float:
    try:
        return config.load(lookup).ping_after
    except SettingsError:
        return 15.0


def late_body(response: WebResponse) -> bytes:
    """What follows the early head: the answer's JSON body (an error's too: its status is lost,
    its error object says it); anything that is not a whole body is an internal error."""
    if isinstance(response.body, bytes) and response.body:
        return response.body
    if isinstance(response.body, Pieces):
        # An embedding answer made in pieces (embedding_vectors.answer_pieces): whole here, as
        # the late body is one write.
        return response.body.joined()
    error = ApiError(500, "internal_error", "The request could not be completed.")
    return error_body(error)


def error_body(error: ApiError) -> bytes:
    body = app_error(error).body
    assert isinstance(body, bytes)
    return body
