"""What a request must pass before it may read a body or cost anything: an API key (when
the deployment has keys), then the rate limit (on the routes that call the model, and on
the reads that reach a Durable Object, each on a limit of its own).

app.handle calls guard() once, after the kill switch, CORS and the method check, before
the handler; the answer is an error to send, or None to go on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from base.errors import ApiError
from base.settings import Lookup
from surface import rate_limit
from surface.api_keys import SECRET, Keys, bearer, rate_key
from surface.rate_limit import Limiter
from surface.web import WebRequest, origin_of

log = logging.getLogger("guard")


@dataclass(frozen=True, slots=True, kw_only=True)
class Access:
    """Who may call a route when API_KEYS is set, and the error code a refusal carries."""

    page_may_call: bool  # the Worker's own page may call it without a key
    refusal_code: str


# The OpenAI API: what its clients expect on a 401 (their SDKs show the code).
KEY_ONLY = Access(page_may_call=False, refusal_code="invalid_api_key")
# Our API: the chat page calls it from the same origin, and has no key to send.
PAGE_OR_KEY = Access(page_may_call=True, refusal_code="unauthorized")
# A route anyone may call even with keys set (one that costs nothing and says nothing).
OPEN = None


def from_own_page(request: WebRequest) -> bool:
    """Only what a browser sets and a cross-site script cannot: Sec-Fetch-Site (a forbidden
    header name) or Origin (set by the browser on every cross-origin and every POST fetch).
    Not Referer, not anything a page can put in a request of its own."""
    headers = request.headers
    if headers.get("sec-fetch-site") == "same-origin":
        return True
    return headers.get("origin") == origin_of(request.url)


def _refused(access: Access, message: str) -> ApiError:
    return ApiError(401, access.refusal_code, message, headers=(("www-authenticate", "Bearer"),))


def check_key(
    request: WebRequest, access: Access | None, keys: Keys
) -> tuple[ApiError | None, str | None]:
    """(error, the presented key when it is a valid one). Without keys, everything passes,
    and a presented token counts for nothing (so it cannot choose its own rate-limit bucket)."""
    if access is None or not keys:
        return None, None
    presented = bearer(request.headers)
    if presented is not None:
        if keys.match(presented):
            return None, presented
        return _refused(access, "The API key is not valid."), None
    if access.page_may_call and from_own_page(request):
        return None, None
    return _refused(access, "An API key is required: send Authorization: Bearer <key>."), None


async def guard(
    request: WebRequest,
    *,
    access: Access | None,
    metered: bool,
    env: Lookup,
    limiter: Limiter | None,
    key_limiter: Limiter | None = None,
    reads: bool = False,
    read_limiter: Limiter | None = None,
) -> tuple[ApiError | None, str | None]:
    """(the refusal, or None; the valid API key the request presented, or None): the key is
    checked once, here, and the caller takes it from this answer. metered: a model call
    (RATE_LIMITER, or KEY_RATE_LIMITER per key); reads: a read of a Durable Object
    (READ_RATE_LIMITER, per key or address). A missing binding refuses."""
    error, key = check_key(request, access, Keys.parse(env(SECRET)))
    if error is not None or not (metered or reads):
        return error, key
    name, first = (
        (rate_limit.BINDING, limiter) if metered else (rate_limit.READ_BINDING, read_limiter)
    )
    if first is None:
        log.error("misconfigured: no %s binding (a [[ratelimits]] entry in wrangler.toml)", name)
        return rate_limit.not_configured(), key
    if key is not None:
        bucket, counter = rate_key(key), (key_limiter or first) if metered else first
    else:
        bucket, counter = rate_limit.address_key(request.headers), first
    if not await counter.allow(bucket):
        return rate_limit.rate_limited(), key
    return None, key
