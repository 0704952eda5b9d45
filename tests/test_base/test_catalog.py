from collections.abc import Iterator

import pytest

from base import catalog
from base.catalog import ModelInfo, info


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    catalog.reset()
    yield
    catalog.reset()


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (
            "@cf/google/gemma-4-26b-a4b-it",
            ModelInfo(
                reasons=False,
                vision=True,
                remote_images=True,
                tools=True,
                context_window=256_000,
                switches_thinking=True,
            ),
        ),
        ("@cf/meta/llama-3.1-8b-instruct-fast", ModelInfo(reasons=False, context_window=128_000)),
        (
            "@cf/openai/gpt-oss-20b",
            ModelInfo(reasons=True, openai_schema=True, tools=True, context_window=128_000),
        ),
        (
            "@cf/OpenAI/GPT-OSS-20B",
            ModelInfo(reasons=True, openai_schema=True, tools=True, context_window=128_000),
        ),
        (
            "@cf/meta/llama-4-scout-17b-16e-instruct",
            ModelInfo(reasons=False, vision=True, tools=True, context_window=131_000),
        ),
        ("@cf/qwen/qwq-32b", ModelInfo(reasons=True, openai_schema=True)),
        (
            "@cf/deepseek-ai/deepseek-r1-distill-qwen-32b",
            ModelInfo(reasons=True, opens_thinking=True),
        ),
        (
            "@cf/moonshotai/kimi-k2.6",
            ModelInfo(
                reasons=True,
                openai_schema=True,
                vision=True,
                remote_images=True,
                tools=True,
                context_window=262_144,
                paid_plan=True,
            ),
        ),
        (
            "@cf/zai-org/glm-4.7-flash",
            ModelInfo(
                reasons=True,
                openai_schema=True,
                tools=True,
                context_window=131_072,
                switches_thinking=True,
            ),
        ),
    ],
)
def test_model_info(model: str, expected: ModelInfo) -> None:
    assert info(model) == expected, model


GEMMA = "@cf/google/gemma-4-26b-a4b-it"


def entry(name: str, **props: object) -> dict[str, object]:
    return {
        "name": name,
        "task": {"name": "Text Generation"},
        "properties": [{"property_id": k, "value": str(v).lower()} for k, v in props.items()],
    }


def test_the_live_catalog_wins_where_it_speaks() -> None:
    result = [
        entry(GEMMA, context_window=1000, vision=False),
        entry(
            "@cf/new/model-x",
            context_window=64000,
            function_calling=True,
            reasoning=True,
            enable_thinking=True,
        ),
    ]
    assert catalog.loaded(result, now=10.0, every=3600) == 2
    assert catalog.source() == "live"
    # The window and vision from the catalog; tools, which it does not mention, from the rules.
    assert info(GEMMA) == ModelInfo(
        reasons=False,
        vision=False,
        remote_images=False,
        tools=True,
        context_window=1000,
        switches_thinking=True,
        listed=True,
    )
    assert info("@cf/NEW/model-x") == ModelInfo(
        reasons=True, tools=True, context_window=64000, switches_thinking=True, listed=True
    )
    # A model it does not list keeps the rules' facts, and is marked.
    assert info("@cf/openai/gpt-oss-20b") == ModelInfo(
        reasons=True, openai_schema=True, tools=True, context_window=128_000, listed=False
    )
    assert catalog.unlisted([GEMMA, "@cf/openai/gpt-oss-20b"]) == ["@cf/openai/gpt-oss-20b"]
    assert catalog.capabilities(GEMMA) == {
        "context_window": 1000,
        "vision": False,
        "tools": True,
        "reasoning": False,
        "paid_plan": False,
        "reasoning_control": {
            "kind": "switch",
            "can_turn_off": True,
            "field": "chat_template_kwargs.enable_thinking",
            "default": "on",
        },
    }


def test_refreshed_now_and_then_and_a_failure_keeps_what_was_there() -> None:
    assert catalog.due(0.0)
    catalog.begin(0.0, every=3600)
    assert not catalog.due(1.0)  # a neighbouring request does not ask again meanwhile
    catalog.loaded([entry(GEMMA, context_window=1000)], now=2.0, every=3600)
    assert not catalog.due(3601.0) and catalog.due(3602.0)
    catalog.failed("500", now=3602.0, every=3600)
    assert info(GEMMA).context_window == 1000 and catalog.source() == "live"
    assert not catalog.due(3661.0) and catalog.due(3662.0)  # retried after a minute


@pytest.mark.parametrize(
    "result", [None, [], {"result": []}, [{"name": 5}, "x", {"properties": []}]]
)
def test_an_answer_without_models_is_a_failure_and_the_rules_stay(result: object) -> None:
    assert catalog.loaded(result, now=0.0, every=3600) == 0
    assert catalog.source() == "static" and info(GEMMA) == catalog.static_info(GEMMA)


def test_odd_property_values_are_read_safely() -> None:
    facts = catalog.parse(
        [
            entry("@cf/a/b", context_window="1,000"),
            {
                "name": "@cf/a/c",
                "properties": [
                    {"property_id": "context_window", "value": "-5"},
                    {"value": "x"},
                    "y",
                ],
            },
        ]
    )
    assert (
        facts["@cf/a/b"].context_window,
        facts["@cf/a/c"].context_window,
        facts["@cf/a/c"].tools,
    ) == (None, None, None)


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [(None, 3600.0), ("0", 0.0), ("90", 90.0), ("x", 3600.0), ("-1", 3600.0), ("inf", 3600.0)],
)
def test_refresh_seconds(raw: str | None, seconds: float) -> None:
    env: dict[str, str] = {} if raw is None else {"AI_CATALOG_REFRESH_SECONDS": raw}
    assert catalog.refresh_seconds(env.get) == seconds


def test_what_info_keeps_changes_with_the_facts() -> None:
    """info() is kept per model between requests; a new answer from the catalog (or a reset)
    replaces it at once, and a failure keeps it."""
    before = info(GEMMA)
    assert info(GEMMA) is before, "a second call must not build the facts again"
    generation = catalog.generation()
    catalog.loaded([entry(GEMMA, context_window=1000)], now=2.0, every=3600)
    assert catalog.generation() != generation
    assert info(GEMMA).context_window == 1000, f"still the old facts: {info(GEMMA)}"
    catalog.failed("500", now=3.0, every=3600)
    assert info(GEMMA).context_window == 1000
    catalog.loaded([entry(GEMMA, context_window=2000)], now=4.0, every=3600)
    assert info(GEMMA).context_window == 2000
    catalog.reset()
    assert info(GEMMA) == before


def test_info_keeps_a_bounded_number_of_models() -> None:
    for i in range(catalog._INFO_MAX * 3):
        info(f"@cf/odd/model-{i}")
    assert len(catalog._INFO) <= catalog._INFO_MAX
