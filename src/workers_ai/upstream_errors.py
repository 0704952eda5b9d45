"""What a failed env.AI.run() means for the client, by the Workers AI error code.

The binding throws ``InferenceUpstreamError("<code>: <description>")`` (the shell passes
its text on as UpstreamFailure), e.g. ``3040: Capacity temporarily exceeded, please try
again.``. The code picks the status and our stable error code; the description stays in
the log, except the context window size, which the client needs to shorten its request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from base.errors import ApiError

CAPACITY_RETRY_SECONDS = 10
DAY = 86_400


@dataclass(frozen=True, slots=True, kw_only=True)
class Meaning:
    status: int
    code: str
    message: str
    retry: str | None = None  # "soon" (capacity) or "tomorrow" (the daily quota resets 00:00 UTC)
    log_hint: str = ""


BUSY = Meaning(
    status=429,
    code="upstream_busy",
    message="The model is busy right now; try again in a few seconds.",
    retry="soon",
)
QUOTA = Meaning(
    status=429,
    code="upstream_quota_exceeded",
    message="The daily AI quota is used up; try again after 00:00 UTC.",
    retry="tomorrow",
    log_hint="the account's daily Workers AI allocation is used up",
)
CONTEXT = Meaning(
    status=400,
    code="context_length_exceeded",
    message="The conversation is too long for this model; shorten it or lower max_tokens.",
)
REJECTED = Meaning(
    status=400,
    code="upstream_rejected_input",
    message="The model refused the request as invalid.",
)
UNAVAILABLE = Meaning(
    status=502,
    code="model_unavailable",
    message="The chosen model is not available; choose another model.",
    log_hint="change AI_MODELS / AI_DEFAULT_MODEL to models in the Workers AI catalog",
)
PAID_PLAN = Meaning(
    status=403,
    code="model_requires_paid_plan",
    message="The model needs the Workers Paid plan.",
    log_hint="the account is on the Workers Free plan: upgrade it, or remove the model from AI_MODELS",
)
OTHER = Meaning(status=502, code="upstream_error", message="The model could not be reached.")

TABLE: dict[int, Meaning] = {
    3040: BUSY,  # capacity temporarily exceeded
    3036: QUOTA,  # daily free neuron allocation used up
    4006: QUOTA,
    5021: CONTEXT,  # input + max_tokens exceed the context window
    5006: REJECTED,  # input validation failed
    5007: UNAVAILABLE,  # no such model
    5028: UNAVAILABLE,  # model retired
    5035: PAID_PLAN,  # Workers Paid plan only (since 2026-07-28)
}

# Failures before the first byte after which the next of AI_FALLBACK_MODELS is tried: the
# model is busy (rejectIfBusy) or out of this account's plan. Anything else would fail the
# same way on another model, or is the client's to fix.
FALLBACK_CODES = frozenset({3040, 5035})

# "<code>: " with the code standing alone: not part of a longer number or a version.
_CODE = re.compile(r"(?<![\w.])(\d{4}):\s*")
_WINDOW = re.compile(r"context window limit \((\d+)\)")
_ESTIMATE = re.compile(r"input and maximum output tokens \((\d+)\)")


def parse(text: str) -> tuple[int | None, str]:
    """The error code and its description; a known code wins over a leading unrelated one."""
    matches = list(_CODE.finditer(text))
    for match in matches:
        if int(match.group(1)) in TABLE:
            return int(match.group(1)), text[match.end() :]
    if matches:
        return int(matches[0].group(1)), text[matches[0].end() :]
    return None, text


def _until_utc_midnight(now: float) -> int:
    return DAY - int(now) % DAY


def classify(text: str, *, model: str, now: float) -> tuple[ApiError, str]:
    """The client's error for a failed run(), and the line to log (with the detail)."""
    code, description = parse(text)
    meaning = TABLE.get(code, OTHER) if code is not None else OTHER
    message = meaning.message
    if meaning is CONTEXT:
        window = _WINDOW.search(description)
        estimate = _ESTIMATE.search(description)
        if window:
            need = f"need about {estimate.group(1)} tokens, more than" if estimate else "exceed"
            message = (
                f"The conversation plus max_tokens {need} this model's context window "
                f"of {window.group(1)} tokens; shorten the conversation or lower max_tokens."
            )
    if meaning is UNAVAILABLE:
        message = f"The model {model} is not available; choose another model."
    if meaning is PAID_PLAN:
        message = (
            f"The model {model} needs the Workers Paid plan, and this service's account is on the Free plan; "
            "choose another model (GET /api/v1/models marks the paid ones)."
        )
    headers: tuple[tuple[str, str], ...] = ()
    if meaning.retry == "soon":
        headers = (("retry-after", str(CAPACITY_RETRY_SECONDS)),)
    elif meaning.retry == "tomorrow":
        headers = (("retry-after", str(_until_utc_midnight(now))),)
    param = "messages" if meaning is CONTEXT else None
    hint = f" ({meaning.log_hint})" if meaning.log_hint else ""
    log_line = f"env.AI.run({model!r}) failed: {meaning.code}{hint}: {text}"
    return ApiError(meaning.status, meaning.code, message, headers=headers, param=param), log_line
