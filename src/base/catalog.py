"""What this service knows about Workers AI models beyond their ids: one table of model facts,
fed by the live catalog (``env.AI.models()``) when the isolate has it, else by the rules below.

Reasoning models stream their chain of thought before the answer: OpenAI-shaped ones in
`reasoning_content` / `reasoning` (gpt-oss, kimi, glm, qwq), the distilled R1 models as native
text that starts inside `<think>` without the opening tag (cloudflare/ai issue 501, PR 504).

Every rule matches a lower-cased id, so `@cf/OpenAI/GPT-OSS-20B` is the same model as the
catalog's spelling.

The live catalog (workerd's ``Ai.models()``: GET /ai-api/models/search, its ``result``) gives
each model's ``name``, ``task`` and ``properties``, a list of ``{"property_id", "value"}`` with
string values: ``context_window``, ``function_calling``, ``reasoning``, ``vision``, and
``enable_thinking`` (its chat template takes ``chat_template_kwargs.enable_thinking``). Those
facts win over the rules for the models it lists; the rules still say what the catalog does
not (input schema, image URLs, ``<think>`` quirks, the paid plan). The isolate keeps the facts
as plain Python values (never a JS object: a deploy's snapshot fails on one) and asks again
every ``AI_CATALOG_REFRESH_SECONDS``; when the call fails it keeps what it had, which before a
first success is the rules alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from base import thinking

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
_TOOLS = (
    "gemma-4",
    "gpt-oss",
    "llama-4-scout",
    "llama-3.3-70b",
    "kimi",
    "glm",
    "qwen3",
    "mistral-small",
    "hermes-2-pro",
)
# Hybrid models whose chat template switches thinking on and off (`enable_thinking`).
_SWITCHES_THINKING = ("qwen3-", "glm-4.7-flash", "gemma-4")
# Workers Paid plan only since 2026-07-28 (the Workers AI changelog and pricing page): on the
# Free plan they answer 403, internal code 5035. The catalog has no property for it.
_PAID_PLAN = ("kimi-k2.6", "kimi-k2.7", "glm-5.2")

# Context windows in tokens, as the Workers AI model pages give them ("Context Window";
# the catalog's `context_window` property, cloudflare/cloudflare-docs
# src/content/workers-ai-models/<name>.json), read 2026-11. A model not listed here (nor in the
# live catalog) is not checked before the call (Workers AI still is: 5021).
CONTEXT_WINDOWS: dict[str, int] = {
    # (retired 2026-05-30)
    "@cf/meta/llama-3.1-8b-instruct": 7_968,
    "@cf/meta/llama-3.1-8b-instruct-fast": 128_000,
    "@cf/openai/gpt-oss-20b": 128_000,
    "@cf/openai/gpt-oss-120b": 128_000,
    "@cf/google/gemma-4-26b-a4b-it": 256_000,
    "@cf/meta/llama-4-scout-17b-16e-instruct": 131_000,
    "@cf/zai-org/glm-4.7-flash": 131_072,
    "@cf/moonshotai/kimi-k2.6": 262_144,
}


# Embedding models (the catalog's task "Text Embeddings", read 2026-11): they take
# {"text": string | string[]} and answer {"shape", "data": [[floats]]} (the bge models add
# "pooling"); none takes a width, so `dimensions` is cut here (embedding_vectors.narrowed). `width` is
# the vector's length, `tokens` the longest input the model reads, `narrower` the shorter
# widths it was trained for (Matryoshka: a prefix, L2-normalized again, is an embedding too),
# `batch` the most texts one call takes (the input schema's maxItems: 100 for every bge model and
# EmbeddingGemma, cloudflare-docs src/content/workers-ai-models/<name>.json, read 2026-11; also
# taken for an embedding model not listed here).
EMBEDDING_BATCH = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class Embedder:
    width: int
    tokens: int
    narrower: tuple[int, ...] = ()
    batch: int = EMBEDDING_BATCH


EMBEDDERS: dict[str, Embedder] = {
    "@cf/baai/bge-m3": Embedder(width=1024, tokens=8192),
    "@cf/baai/bge-base-en-v1.5": Embedder(width=768, tokens=512),
    "@cf/baai/bge-small-en-v1.5": Embedder(width=384, tokens=512),
    "@cf/baai/bge-large-en-v1.5": Embedder(width=1024, tokens=512),
    # EmbeddingGemma's model card: truncate to 512, 256 or 128 and normalize again.
    "@cf/google/embeddinggemma-300m": Embedder(width=768, tokens=2048, narrower=(512, 256, 128)),
}
EMBEDDING_TASK = "Text Embeddings"


def embedder(model: str) -> Embedder | None:
    """An embedding model's facts; None for any other model."""
    return EMBEDDERS.get(model.lower())


def embedding_capabilities(model: str) -> dict[str, object]:
    """What /v1/models says of an embedding model."""
    facts = embedder(model)
    return {
        "task": "embeddings",
        "dimensions": facts.width if facts else None,
        "dimensions_allowed": [facts.width, *facts.narrower] if facts else [],
        "max_input_tokens": facts.tokens if facts else None,
    }


REFRESH_VAR = "AI_CATALOG_REFRESH_SECONDS"
REFRESH_SECONDS = 3600.0
RETRY_SECONDS = 60.0  # after a failed catalog call
# What the shell asks env.AI.models() for: the chat models, in one page.
SEARCH = {"task": "Text Generation", "per_page": 1000}


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    reasons: bool
    opens_thinking: bool = False  # native text begins inside <think>, its opening tag left out
    openai_schema: bool = False  # inputs as OpenAI's chat completions
    vision: bool = False  # takes image_url content parts
    remote_images: bool = False  # ... given as https: URLs too, not only data: URLs
    tools: bool = False  # function calling
    context_window: int | None = None  # tokens; None when not known here
    switches_thinking: bool = False  # takes chat_template_kwargs.enable_thinking
    paid_plan: bool = False  # Workers Paid plan only (5035 on the Free plan)
    listed: bool | None = None  # in the live catalog; None when the isolate has none


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    """One model as the live catalog describes it."""

    context_window: int | None
    tools: bool | None  # None: the catalog does not say (the rules do)
    reasons: bool | None
    vision: bool | None
    switches_thinking: bool | None


@dataclass(slots=True)
class _State:
    live: dict[str, Facts] = field(default_factory=dict)
    loaded_at: float | None = None  # when the facts in `live` arrived (monotonic seconds)
    next_at: float = 0.0  # when to ask again
    error: str | None = None  # the last failure, if the last call failed


_STATE = _State()
# Bumped whenever the facts change (loaded, reset): what is derived from them (settings.load's
# body limit, info() below) is kept until then. Python values only.
_GENERATION = [0]
# info() of each model asked since the facts last changed; bounded (model ids come from
# requests), cleared with the facts.
_INFO: dict[str, ModelInfo] = {}
_INFO_MAX = 256


def generation() -> int:
    """Changes whenever the catalog's facts do."""
    return _GENERATION[0]


def _changed() -> None:
    _GENERATION[0] += 1
    _INFO.clear()


def _any(tags: tuple[str, ...], name: str) -> bool:
    return any(tag in name for tag in tags)


def static_info(model: str) -> ModelInfo:
    """The rules and the table alone: the fallback, and the tests' baseline."""
    name = model.lower()
    return ModelInfo(
        reasons=_any(_REASONING, name),
        opens_thinking=_any(_OPENS_THINKING, name),
        openai_schema=_any(_OPENAI_SCHEMA, name),
        vision=_any(_VISION, name),
        remote_images=_any(_REMOTE_IMAGES, name),
        tools=_any(_TOOLS, name),
        context_window=CONTEXT_WINDOWS.get(name),
        switches_thinking=_any(_SWITCHES_THINKING, name),
        paid_plan=_any(_PAID_PLAN, name),
    )


def info(model: str) -> ModelInfo:
    """What is known of a model: the live catalog's facts over the rules. Kept per model until
    the facts change (several calls a request, ~40 us each on workerd)."""
    known = _INFO.get(model)
    if known is None:
        if len(_INFO) >= _INFO_MAX:
            _INFO.clear()
        known = _INFO[model] = _info(model)
    return known


def _info(model: str) -> ModelInfo:
    rules = static_info(model)
    if _STATE.loaded_at is None:
        return rules
    facts = _STATE.live.get(model.lower())
    if facts is None:
        return replace(rules, listed=False)
    vision = _either(facts.vision, rules.vision)
    return replace(
        rules,
        reasons=_either(facts.reasons, rules.reasons) or rules.opens_thinking,
        vision=vision,
        remote_images=vision and rules.remote_images,
        tools=_either(facts.tools, rules.tools),
        context_window=facts.context_window or rules.context_window,
        switches_thinking=_either(facts.switches_thinking, rules.switches_thinking),
        listed=True,
    )


def _either(said: bool | None, rule: bool) -> bool:
    return rule if said is None else said


def capabilities(model: str) -> dict[str, object]:
    """What /api/v1/models and /v1/models say of a model."""
    facts = info(model)
    return {
        "context_window": facts.context_window,
        "vision": facts.vision,
        "tools": facts.tools,
        "reasoning": facts.reasons,
        "paid_plan": facts.paid_plan,
        "reasoning_control": thinking_control(model).describe(),
    }


def thinking_control(model: str) -> thinking.Control:
    """How the model's thinking is switched or leveled (thinking.py), from the facts above."""
    facts = info(model)
    return thinking.control(model, reasons=facts.reasons, switches=facts.switches_thinking)


# -- the live catalog -----------------------------------------------------------------------

_TRUE = ("true", "1", "yes")


def _flag(properties: dict[str, object], key: str) -> bool | None:
    if key not in properties:
        return None
    value = properties[key]
    return value is True or (isinstance(value, str) and value.strip().lower() in _TRUE)


def _window(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value > 0 else None
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii():
        number = int(value.strip())
        return number if number > 0 else None
    return None


def parse(result: object) -> dict[str, Facts]:
    """The search result as facts by lower-cased name; entries it cannot read are skipped."""
    out: dict[str, Facts] = {}
    if not isinstance(result, list):
        return out
    for entry in result:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        properties: dict[str, object] = {}
        raw = entry.get("properties")
        for item in raw if isinstance(raw, list) else ():
            if isinstance(item, dict) and isinstance(item.get("property_id"), str):
                properties[item["property_id"]] = item.get("value")
        out[entry["name"].lower()] = Facts(
            context_window=_window(properties.get("context_window")),
            tools=_flag(properties, "function_calling"),
            reasons=_flag(properties, "reasoning"),
            vision=_flag(properties, "vision"),
            switches_thinking=_flag(properties, "enable_thinking"),
        )
    return out


def refresh_seconds(lookup: Callable[[str], str | None]) -> float:
    raw = (lookup(REFRESH_VAR) or "").strip()
    try:
        value = float(raw) if raw else REFRESH_SECONDS
    except ValueError:
        return REFRESH_SECONDS
    return value if 0 <= value < float("inf") else REFRESH_SECONDS


def due(now: float) -> bool:
    return now >= _STATE.next_at


def begin(now: float, every: float) -> None:
    """A call is on its way: the isolate's other requests do not start another meanwhile."""
    _STATE.next_at = now + min(every, RETRY_SECONDS)


def loaded(result: object, now: float, every: float) -> int:
    """The catalog answered: its facts replace the last ones. Returns how many it described;
    an answer with none is a failure (a broken answer must not mark every model unlisted)."""
    facts = parse(result)
    if not facts:
        failed("the catalog listed no model", now, every)
        return 0
    _STATE.live, _STATE.loaded_at, _STATE.error = facts, now, None
    _STATE.next_at = now + every
    _changed()
    return len(facts)


def failed(reason: str, now: float, every: float) -> None:
    _STATE.error = reason
    _STATE.next_at = now + min(every, RETRY_SECONDS)


def unlisted(models: Iterable[str]) -> list[str]:
    """Of these, the models the live catalog does not list (retired or misspelled ids)."""
    return [m for m in models if info(m).listed is False]


def source() -> str:
    """ "live" while the isolate has catalog facts, else "static"."""
    return "static" if _STATE.loaded_at is None else "live"


def reset() -> None:
    """Back to the rules alone (tests)."""
    global _STATE
    _STATE = _State()
    _changed()
