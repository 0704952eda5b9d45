import pytest

from workers_ai.upstream_errors import TABLE, classify, parse

MODEL = "@cf/meta/llama-3.1-8b-instruct"
MIDNIGHT = 1_767_225_600  # 2026-01-01T00:00:00Z
NOW = MIDNIGHT - 90  # 23:58:30 UTC

# (thrown text, status, code, retry-after, text the message must contain). Texts as thrown:
# 3040 as in cloudflare/ai workers-ai-provider tests; 5028 from cloudflare-docs issue 32501;
# 5021 as quoted in issue 10; the others in the same "<code>: <description>" format.
CASES = [
    (
        "InferenceUpstreamError: 3040: Capacity temporarily exceeded, please try again.",
        429,
        "upstream_busy",
        "10",
        "try again",
    ),
    ("3040: Capacity temporarily exceeded, please try again.", 429, "upstream_busy", "10", "busy"),
    (
        "InferenceUpstreamError: 3036: You have used up your daily free allocation of 10,000 neurons, please upgrade to Cloudflare's Workers Paid plan if you would like to continue usage.",
        429,
        "upstream_quota_exceeded",
        "90",
        "00:00 UTC",
    ),
    (
        "AiError: 4006: you have used up your daily free allocation of 10,000 neurons",
        429,
        "upstream_quota_exceeded",
        "90",
        "quota",
    ),
    (
        "InferenceUpstreamError: 5021: The estimated number of input and maximum output tokens (8810) exceeded this model context window limit (8192).",
        400,
        "context_length_exceeded",
        None,
        "need about 8810 tokens, more than this model's context window of 8192 tokens",
    ),
    (
        "AiError: 5021: exceeded this model context window limit (32000).",
        400,
        "context_length_exceeded",
        None,
        "exceed this model's context window of 32000 tokens",
    ),
    ("AiError: 5021: context too long", 400, "context_length_exceeded", None, "too long"),
    (
        "InferenceUpstreamError: 5006: Error: required properties at '/' are 'messages'",
        400,
        "upstream_rejected_input",
        None,
        "invalid",
    ),
    (
        "InferenceUpstreamError: 5007: No such model @cf/meta/llama-9 or task",
        502,
        "model_unavailable",
        None,
        MODEL,
    ),
    (
        "AiError: 5028: This model was deprecated on 2026-05-30. Please use an alternative model.",
        502,
        "model_unavailable",
        None,
        "choose another model",
    ),
    ("12345: request 3040: Capacity temporarily exceeded", 429, "upstream_busy", "10", "busy"),
    (
        "InferenceUpstreamError: 9999: something new",
        502,
        "upstream_error",
        None,
        "could not be reached",
    ),
    (
        "InferenceUpstreamError: network connection lost",
        502,
        "upstream_error",
        None,
        "could not be reached",
    ),
    ("model v1.3040: odd", 502, "upstream_error", None, "could not be reached"),
    ("", 502, "upstream_error", None, "could not be reached"),
]


@pytest.mark.parametrize(
    ("text", "status", "code", "retry", "needle"), CASES, ids=[c[0][:40] for c in CASES]
)
def test_each_code(text: str, status: int, code: str, retry: str | None, needle: str) -> None:
    error, log_line = classify(text, model=MODEL, now=NOW)
    assert (error.status, error.code, dict(error.headers).get("retry-after")) == (
        status,
        code,
        retry,
    )
    assert needle in error.message, error.message
    assert text in log_line and code in log_line


def test_detail_stays_in_the_log() -> None:
    error, log_line = classify(
        "InferenceUpstreamError: 5006: secret internal detail", model=MODEL, now=NOW
    )
    assert "secret" not in error.message and "secret" in log_line


def test_unavailable_model_log_names_the_variables() -> None:
    _, log_line = classify(
        "AiError: 5028: This model was deprecated on 2026-05-30.", model=MODEL, now=NOW
    )
    assert "AI_MODELS / AI_DEFAULT_MODEL" in log_line and MODEL in log_line


def test_context_error_names_the_messages() -> None:
    error, _ = classify(
        "5021: exceeded this model context window limit (8192).", model=MODEL, now=NOW
    )
    assert error.param == "messages"


def test_quota_retry_after_counts_to_utc_midnight() -> None:
    for now, seconds in [
        (MIDNIGHT, "86400"),
        (MIDNIGHT + 1, "86399"),
        (MIDNIGHT - 1, "1"),
        (MIDNIGHT + 43_200.5, "43200"),
    ]:
        error, _ = classify("3036: daily allocation used up", model=MODEL, now=now)
        assert dict(error.headers)["retry-after"] == seconds, now


def test_parse_prefers_a_known_code_and_returns_the_description() -> None:
    assert parse("InferenceUpstreamError: 3040: Capacity temporarily exceeded") == (
        3040,
        "Capacity temporarily exceeded",
    )
    assert parse("1101: ctx 5021: too long") == (5021, "too long")
    assert parse("1101: Worker threw exception") == (1101, "Worker threw exception")
    assert parse("no code here") == (None, "no code here")
    assert sorted(TABLE) == [3036, 3040, 4006, 5006, 5007, 5021, 5028, 5035]
