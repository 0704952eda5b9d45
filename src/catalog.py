"""What this service knows about Workers AI models beyond their ids: one table of model facts.

Reasoning models stream their chain of thought before the answer: OpenAI-shaped ones in
`reasoning_content` / `reasoning` (gpt-oss, kimi, glm, qwq), the distilled R1 models as native
text that starts inside `<think>` without the opening tag (cloudflare/ai issue 501, PR 504).

Every rule matches a lower-cased id, so `@cf/OpenAI/GPT-OSS-20B` is the same model as the
catalog's spelling.
"""

from __future__ import annotations

from dataclasses import dataclass

_REASONING = ("gpt-oss", "kimi", "glm", "qwq", "deepseek-r1")
_OPENS_THINKING = ("deepseek-r1",)
# Models that take OpenAI's input schema (ChatCompletionsInput) and stream OpenAI-shaped
# chunks; the built-in model (local/model.mjs isReasoningModel) picks its shape by the same rule.
_OPENAI_SCHEMA = ("gpt-oss", "kimi", "glm", "qwq")
# The catalog's `vision` property (cloudflare-docs src/content/workers-ai-models/*.json, read
# 2026-11): they take `image_url` content parts. llama-3.2-11b-vision takes a separate
# top-level `image` instead, so it is not listed.
_VISION = ("gemma-4", "llama-4-scout", "kimi-k2.6", "kimi-k2.7", "mistral-small-3.1")
# Of those, the ones whose schema takes an https: image URL; llama-4-scout's says "image uri
# with data (e.g. data:image/jpeg;base64,...). HTTP URL will not be accepted".
_REMOTE_IMAGES = ("gemma-4", "kimi-k2.6", "kimi-k2.7", "mistral-small-3.1")
# The catalog's `function_calling` property.
_TOOLS = ("gemma-4", "gpt-oss", "llama-4-scout", "llama-3.3-70b", "kimi", "glm", "qwen3", "mistral-small", "hermes-2-pro")

# Context windows in tokens, as the Workers AI model pages give them ("Context Window";
# the catalog's `context_window` property, cloudflare/cloudflare-docs
# src/content/workers-ai-models/<name>.json), read 2026-11. A model not listed here is not
# checked before the call (Workers AI still is: 5021).
CONTEXT_WINDOWS: dict[str, int] = {
    # (retired 2026-05-30)
    "@cf/meta/llama-3.1-8b-instruct": 7_968,
    "@cf/meta/llama-3.1-8b-instruct-fast": 128_000,
    "@cf/openai/gpt-oss-20b": 128_000,
    "@cf/openai/gpt-oss-120b": 128_000,
    "@cf/google/gemma-4-26b-a4b-it": 256_000,
    "@cf/meta/llama-4-scout-17b-16e-instruct": 131_000,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    reasons: bool
    opens_thinking: bool = False  # native text begins inside <think>, its opening tag left out
    openai_schema: bool = False  # inputs as OpenAI's chat completions
    vision: bool = False  # takes image_url content parts
    remote_images: bool = False  # ... given as https: URLs too, not only data: URLs
    tools: bool = False  # function calling
    context_window: int | None = None  # tokens; None when not known here


def _any(tags: tuple[str, ...], name: str) -> bool:
    return any(tag in name for tag in tags)


def info(model: str) -> ModelInfo:
    name = model.lower()
    return ModelInfo(
        reasons=_any(_REASONING, name),
        opens_thinking=_any(_OPENS_THINKING, name),
        openai_schema=_any(_OPENAI_SCHEMA, name),
        vision=_any(_VISION, name),
        remote_images=_any(_REMOTE_IMAGES, name),
        tools=_any(_TOOLS, name),
        context_window=CONTEXT_WINDOWS.get(name),
    )


def capabilities(model: str) -> dict[str, object]:
    """What /api/v1/models and /v1/models say of a model."""
    facts = info(model)
    return {
        "context_window": facts.context_window,
        "vision": facts.vision,
        "tools": facts.tools,
        "reasoning": facts.reasons,
    }
