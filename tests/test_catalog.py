import pytest

from catalog import ModelInfo, info


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("@cf/google/gemma-4-26b-a4b-it",
         ModelInfo(reasons=False, vision=True, remote_images=True, tools=True, context_window=256_000)),
        ("@cf/meta/llama-3.1-8b-instruct-fast", ModelInfo(reasons=False, context_window=128_000)),
        ("@cf/openai/gpt-oss-20b", ModelInfo(reasons=True, openai_schema=True, tools=True, context_window=128_000)),
        ("@cf/OpenAI/GPT-OSS-20B", ModelInfo(reasons=True, openai_schema=True, tools=True, context_window=128_000)),
        ("@cf/meta/llama-4-scout-17b-16e-instruct", ModelInfo(reasons=False, vision=True, tools=True, context_window=131_000)),
        ("@cf/qwen/qwq-32b", ModelInfo(reasons=True, openai_schema=True)),
        ("@cf/deepseek-ai/deepseek-r1-distill-qwen-32b", ModelInfo(reasons=True, opens_thinking=True)),
        ("@cf/moonshotai/kimi-k2.6", ModelInfo(reasons=True, openai_schema=True, vision=True, remote_images=True, tools=True)),
    ],
)
def test_model_info(model: str, expected: ModelInfo) -> None:
    assert info(model) == expected, model
