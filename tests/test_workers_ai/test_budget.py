import pytest

from base.errors import ApiError
from workers_ai.budget import CONTEXT_WINDOWS, check, estimate

LLAMA = "@cf/meta/llama-3.1-8b-instruct"


def inputs(*contents: str, max_tokens: int = 100, **extra: object) -> dict[str, object]:
    return {
        "messages": [{"role": "user", "content": c} for c in contents],
        "stream": True,
        "max_tokens": max_tokens,
        **extra,
    }


def test_estimate_is_chars_over_4_plus_overhead_plus_max_tokens() -> None:
    assert estimate(inputs("a" * 8, "b" * 5, max_tokens=10)) == 4 + 2 * 4 + 10  # ceil(13 / 4) = 4


def test_structured_inputs_count_too() -> None:
    tools = [{"type": "function", "function": {"name": "f" * 400}}]
    assert estimate(inputs("hi", tools=tools)) > estimate(inputs("hi")) + 100


def test_every_model_in_wrangler_toml_has_a_window() -> None:
    import tomllib
    from pathlib import Path

    config = tomllib.loads((Path(__file__).resolve().parents[2] / "wrangler.toml").read_text())
    blocks = [config["vars"], *(env["vars"] for env in config.get("env", {}).values())]
    models = {m.strip() for block in blocks for m in block["AI_MODELS"].split(",")}
    assert models - CONTEXT_WINDOWS.keys() == set()


def test_fits_exactly_at_the_window() -> None:
    window = CONTEXT_WINDOWS[LLAMA]
    fits = inputs("x" * 4 * 1000, max_tokens=window - 1000 - 4)
    assert estimate(fits) == window
    check(LLAMA, fits)


def test_one_token_over_fails_with_the_window_in_the_message() -> None:
    window = CONTEXT_WINDOWS[LLAMA]
    over = inputs("x" * 4 * 1000, max_tokens=window - 1000 - 4 + 1)
    with pytest.raises(ApiError) as caught:
        check(LLAMA, over)
    error = caught.value
    assert (error.status, error.code, error.param) == (400, "context_length_exceeded", "messages")
    assert error.message == (
        f"The conversation plus max_tokens need about {window + 1} tokens, more than {LLAMA}'s "
        f"context window of {window} tokens; shorten the conversation or lower max_tokens."
    )


def test_an_unknown_model_is_left_to_workers_ai() -> None:
    check("@cf/someone/unlisted", inputs("x" * 10_000_000))
