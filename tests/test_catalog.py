import pytest

from catalog import ModelInfo, info


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("@cf/google/gemma-4-26b-a4b-it", ModelInfo(reasons=False, opens_thinking=False)),
        ("@cf/meta/llama-3.1-8b-instruct-fast", ModelInfo(reasons=False, opens_thinking=False)),
        ("@cf/openai/gpt-oss-20b", ModelInfo(reasons=True, opens_thinking=False, openai_schema=True)),
        ("@cf/qwen/qwq-32b", ModelInfo(reasons=True, opens_thinking=False, openai_schema=True)),
        ("@cf/deepseek-ai/deepseek-r1-distill-qwen-32b", ModelInfo(reasons=True, opens_thinking=True)),
        ("@cf/moonshotai/kimi-k2.6", ModelInfo(reasons=True, opens_thinking=False, openai_schema=True)),
    ],
)
def test_model_info(model: str, expected: ModelInfo) -> None:
    assert info(model) == expected, model
