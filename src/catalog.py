"""What this service knows about Workers AI models beyond their ids: which ones reason first.

Reasoning models stream their chain of thought before the answer: OpenAI-shaped ones in
`reasoning_content` / `reasoning` (gpt-oss, kimi, glm, qwq), the distilled R1 models as native
text that starts inside `<think>` without the opening tag (cloudflare/ai issue 501, PR 504).
"""

from __future__ import annotations

from dataclasses import dataclass

_REASONING = ("gpt-oss", "kimi", "glm", "qwq", "deepseek-r1")
_OPENS_THINKING = ("deepseek-r1",)
# Models that take OpenAI's input schema (ChatCompletionsInput) and stream OpenAI-shaped
# chunks; the built-in model (local/model.mjs isReasoningModel) picks its shape by the same rule.
_OPENAI_SCHEMA = ("gpt-oss", "kimi", "glm", "qwq")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    reasons: bool
    opens_thinking: bool  # native text begins inside <think>, its opening tag left out
    openai_schema: bool = False  # inputs as OpenAI's chat completions (stop, not top_k)


def info(model: str) -> ModelInfo:
    name = model.lower()
    return ModelInfo(
        reasons=any(tag in name for tag in _REASONING),
        opens_thinking=any(tag in name for tag in _OPENS_THINKING),
        openai_schema=any(tag in model for tag in _OPENAI_SCHEMA),
    )
