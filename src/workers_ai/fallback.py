"""Which models may answer a request, in order, and the inputs each one gets.

The asked model first, then AI_FALLBACK_MODELS. A fallback only gets a request it can take
as it is (images need vision, tools need function calling, JSON mode and min_p the same
input schema as the asked model), and only what it reads: reasoning sent back goes to a model
that reasons, a reasoning effort becomes what the model takes (thinking.py: its template's
enable_thinking, or its own levels), a completion's prompt becomes one user message for a model
that takes OpenAI's schema, and an embedding request goes to embedding models only.
"""

from __future__ import annotations

from typing import Any

from base import catalog, thinking

# Inputs whose shape depends on the model's input schema (openai_params, openai_compat).
_SCHEMA_BOUND = ("response_format", "min_p")


def candidates(model: str, fallbacks: tuple[str, ...]) -> tuple[str, ...]:
    return (model, *(m for m in fallbacks if m != model))


def _has_images(inputs: dict[str, Any]) -> bool:
    for message in inputs.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") == "image_url" for p in content
        ):
            return True
    return False


def inputs_for(
    model: str, inputs: dict[str, Any], asked: str, *, thinking_mode: str = thinking.DEFAULT_MODE
) -> dict[str, Any] | None:
    """What `model` is sent for a request made to `asked`; None when it cannot take it.
    `thinking_mode`: AI_THINKING, for a request that asks no reasoning effort."""
    if "text" in inputs:
        # An embedding request: only another embedding model takes the same texts. The live
        # catalog lists chat models alone, so it has nothing to say of these.
        return dict(inputs) if model == asked or catalog.embedder(model) else None
    if model != asked and catalog.embedder(model) is not None:
        return None  # nor does a chat request go to an embedding model
    facts = catalog.info(model)
    if model != asked:
        first = catalog.info(asked)
        if (
            facts.listed is False
            or (_has_images(inputs) and not facts.vision)
            or (inputs.get("tools") and not facts.tools)
        ):
            return None
        if facts.openai_schema != first.openai_schema and any(k in inputs for k in _SCHEMA_BOUND):
            return None
    out = dict(inputs)
    if facts.openai_schema and isinstance(out.get("prompt"), str):
        # /v1/completions sends Workers AI's `prompt` (the model's chat template around it);
        # OpenAI-schema models take messages only, which is the same template.
        out["messages"] = [{"role": "user", "content": out.pop("prompt")}]
    if not facts.reasons and any(
        isinstance(m, dict) and "reasoning" in m for m in out.get("messages") or ()
    ):
        out["messages"] = [
            {k: v for k, v in m.items() if k != "reasoning"} for m in out["messages"]
        ]
    return thinking.apply(catalog.thinking_control(model), out, thinking_mode)
