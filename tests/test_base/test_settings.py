import pytest

from base.settings import (
    BODY_TIMEOUT_DEFAULT,
    DEFAULT_MODELS,
    Lookup,
    SettingsError,
    body_timeout,
    chat_disabled,
    load,
    shell_stream_window,
    stream_window,
)


def env(values: dict[str, str]) -> Lookup:
    return values.get


@pytest.mark.parametrize(
    ("value", "disabled"),
    [("1", True), (None, False), ("0", False), ("true", False), (" 1", False), ("", False)],
)
def test_kill_switch_is_exactly_one(value: str | None, disabled: bool) -> None:
    assert chat_disabled(env({"AI_CHAT_DISABLED": value} if value is not None else {})) is disabled


def test_defaults() -> None:
    s = load(env({}))
    assert s.models == DEFAULT_MODELS and s.default_model == DEFAULT_MODELS[0]
    # the body a 256k-token window needs (6 bytes a token) plus 4 MiB of images
    assert (s.default_max_tokens, s.max_tokens_limit, s.max_body_bytes) == (
        1024,
        4096,
        256_000 * 6 + 4 * 1024 * 1024,
    )
    assert (s.max_messages, s.max_message_chars, s.ping_after, s.give_up_after) == (
        1000,
        1_000_000,
        15.0,
        60.0,
    )
    assert (s.max_images, s.max_image_bytes) == (8, 3 * 1024 * 1024)
    # a model whose window is unknown here counts as 128k tokens
    assert load(env({"AI_MODELS": "@cf/x/unknown"})).max_body_bytes == 128_000 * 6 + 4 * 1024 * 1024
    assert s.allowed_origins == ()


def test_lists_are_trimmed() -> None:
    s = load(env({"AI_MODELS": " a , b ,", "CORS_ALLOWED_ORIGINS": "https://x.dev, https://y.dev"}))
    assert s.models == ("a", "b") and s.default_model == "a"
    assert s.allowed_origins == ("https://x.dev", "https://y.dev")


@pytest.mark.parametrize(
    ("env_values", "message"),
    [
        ({"AI_MODELS": "a", "AI_DEFAULT_MODEL": "b"}, "AI_DEFAULT_MODEL='b' is not in AI_MODELS"),
        ({"MAX_MESSAGES": "many"}, "MAX_MESSAGES='many' is not a int"),
        ({"MAX_BODY_BYTES": "1"}, "MAX_BODY_BYTES='1' must be between"),
        (
            {"AI_MAX_TOKENS_LIMIT": "100", "AI_MAX_TOKENS_DEFAULT": "200"},
            "AI_MAX_TOKENS_DEFAULT='200'",
        ),
        ({"STREAM_PING_SECONDS": "nan"}, "STREAM_PING_SECONDS='nan'"),
        ({"BODY_TIMEOUT_SECONDS": "0"}, "BODY_TIMEOUT_SECONDS='0' must be between"),
        ({"BODY_TIMEOUT_SECONDS": "soon"}, "BODY_TIMEOUT_SECONDS='soon' is not a float"),
        (
            {"AI_FALLBACK_MODELS": "@cf/a/b, llama"},
            "AI_FALLBACK_MODELS='@cf/a/b, llama': 'llama' is not a Workers AI model id",
        ),
        ({"AI_GATEWAY_CACHE_TTL": "1h"}, "AI_GATEWAY_CACHE_TTL='1h' is not a int"),
    ],
)
def test_misconfiguration_names_key_and_value(env_values: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message.replace("(", r"\(")) as caught:
        load(env_values.get)
    key, _, value = message.partition("=")
    assert caught.value.variable == key
    # A client is told which var to fix, never its value.
    assert caught.value.public_message() == (
        f"The service is misconfigured: its owner has to fix the setting {key}."
    )
    assert value.split()[0] not in caught.value.public_message()


def test_an_error_that_starts_with_a_var_names_it() -> None:
    error = SettingsError("OWNER_DAILY_TOKENS is set but the BUDGETS binding is not")
    assert error.variable == "OWNER_DAILY_TOKENS"


def test_an_error_that_names_no_var_says_only_misconfigured() -> None:
    error = SettingsError("the catalog could not be read")
    assert error.variable is None
    assert error.public_message() == "The service is misconfigured."


def test_body_timeout_is_read_on_its_own() -> None:
    assert body_timeout(env({})) == BODY_TIMEOUT_DEFAULT == 30.0
    assert body_timeout(env({"BODY_TIMEOUT_SECONDS": " 2.5 "})) == 2.5


def test_fallback_models_are_an_ordered_list_without_repeats() -> None:
    nothing: dict[str, str] = {}
    assert load(nothing.get).fallback_models == ()
    env = {"AI_FALLBACK_MODELS": " @cf/b/two , @cf/a/one,@cf/b/two,"}
    assert load(env.get).fallback_models == ("@cf/b/two", "@cf/a/one")


@pytest.mark.parametrize(
    ("value", "seconds"), [(None, 0.09), ("", 0.09), ("0", 0.0), ("60", 0.06), ("150", 0.15)]
)
def test_stream_window_ms(value: str | None, seconds: float) -> None:
    lookup = env({"STREAM_WINDOW_MS": value} if value is not None else {})
    assert stream_window(lookup) == seconds
    assert load(lookup).stream_window == seconds
    assert shell_stream_window(lookup) == seconds


@pytest.mark.parametrize("value", ["151", "-1", "0.5", "fast"])
def test_a_bad_stream_window_names_the_variable(value: str) -> None:
    lookup = env({"STREAM_WINDOW_MS": value})
    with pytest.raises(SettingsError, match="STREAM_WINDOW_MS"):
        load(lookup)
    # The shell builds the pipe with the default; the core answers 500 before any model call.
    assert shell_stream_window(lookup) == 0.09


def test_settings_are_made_again_only_when_a_var_or_the_catalog_changes() -> None:
    """load() keeps the last settings with the vars they were read from: the same vars give
    the same object, any var it read that changed (or the catalog's facts) gives new ones."""
    from base import catalog

    catalog.reset()
    try:
        values = {"AI_MAX_TOKENS_LIMIT": "2000", "CORS_ALLOWED_ORIGINS": "https://a.example"}
        first = load(env(dict(values)))
        assert load(env(dict(values))) is first, "the same vars parsed again"
        changed = load(env({**values, "CORS_ALLOWED_ORIGINS": "https://b.example"}))
        assert changed.allowed_origins == ("https://b.example",), changed.allowed_origins
        unset = load(env({"AI_MAX_TOKENS_LIMIT": "2000"}))
        assert unset.allowed_origins == (), unset.allowed_origins
        assert load(env({**values, "STREAM_WINDOW_MS": "40"})).stream_window == 0.04
        # A bad value is still refused every time, and the good settings are not lost by it.
        for _ in range(2):
            with pytest.raises(SettingsError, match="AI_MAX_TOKENS_LIMIT"):
                load(env({**values, "AI_MAX_TOKENS_LIMIT": "zero"}))
        again = load(env(dict(values)))
        assert again.allowed_origins == ("https://a.example",)
        # The body limit follows the model's context window: new facts make new settings.
        limit = again.max_body_bytes
        catalog.loaded(
            [
                {
                    "name": DEFAULT_MODELS[0],
                    "task": {"name": "Text Generation"},
                    "properties": [{"property_id": "context_window", "value": "1000"}],
                }
            ],
            now=1.0,
            every=3600,
        )
        assert load(env(dict(values))).max_body_bytes != limit, "catalog facts ignored"
    finally:
        catalog.reset()
