"""Thinking only when asked: one table of how each model's reasoning is controlled, and the one
mapping from what a request asks (`reasoning_effort`, Responses' `reasoning.effort`, the chat
door's own field: all arrive as the inputs' `reasoning_effort`) to what that model takes.

The families' controls are those of `@cloudflare/workers-types` 5.20261117.1 (its
`ChatTemplateKwargs` and each model's input type; the types call Workers AI's model config the
source of truth), read 2026-11-28 (shared notes, field-2026-11-28.md). The live catalog wins
where it has a fact: its `enable_thinking` property says the chat template switches thinking
(`chat_template_kwargs.enable_thinking`), its `reasoning` property whether the model reasons.

A level asked becomes the lowest level the model takes at or above it (else its highest), so
a model is never made to think more than asked where it can think less. "none" to a model
that cannot be turned off becomes its lowest level, and /v1/models says so.

AI_THINKING decides for a request that says nothing: `off` (the default) sends the cheapest
control (thinking off where it can be, else the lowest level): nobody pays for thinking
nobody asked for; `auto` sends nothing, and each model thinks as its own default says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

VAR = "AI_THINKING"
MODES = ("off", "auto")
DEFAULT_MODE = "off"

# Every effort a door takes, least thinking first: OpenAI's reasoning_effort values and the
# levels Workers AI models add (max).
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
_RANK = {effort: rank for rank, effort in enumerate(EFFORTS)}

Kind = Literal["switch", "effort", "fixed", "unknown", "none"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Control:
    """How one model's thinking is controlled.

    switch: `chat_template_kwargs.enable_thinking` (true or false); effort: `reasoning_effort`,
    one of `levels` (lowest first, "none" among them when it can be turned off); fixed: it
    reasons and takes no control; unknown: it reasons and its control is not in the table
    (a level asked is sent as `reasoning_effort`, "none" sends nothing); none: no reasoning."""

    kind: Kind
    levels: tuple[str, ...] = ()
    default: str | None = None  # what the model does when told nothing: "on", or its level
    note: str | None = None

    @property
    def can_turn_off(self) -> bool:
        return self.kind == "switch" or "none" in self.levels

    def describe(self) -> dict[str, object]:
        """What /v1/models and /api/v1/models say of it (`reasoning_control`)."""
        out: dict[str, object] = {"kind": self.kind, "can_turn_off": self.can_turn_off}
        if self.kind == "switch":
            out["field"] = "chat_template_kwargs.enable_thinking"
        elif self.kind in ("effort", "unknown"):
            out["field"] = "reasoning_effort"
        if self.levels:
            out["levels"] = list(self.levels)
        if self.default is not None:
            out["default"] = self.default
        if self.note is not None:
            out["note"] = self.note
        return out


_SWITCH = Control(kind="switch", default="on")
_CANNOT = "cannot be turned off: reasoning_effort none sends its lowest level"

# First match wins (a lower-cased id contains the tag), so the more specific tags come first.
FAMILIES: tuple[tuple[str, Control], ...] = (
    ("gemma-4", _SWITCH),
    ("glm-4.7-flash", _SWITCH),
    ("glm-5.2", Control(kind="effort", levels=("none", "high", "max"), default="max")),
    ("glm-5.3", Control(kind="effort", levels=("low", "high", "max"), note=_CANNOT)),
    (
        "gpt-oss",
        Control(kind="effort", levels=("low", "medium", "high"), default="medium", note=_CANNOT),
    ),
    (
        "kimi",
        Control(
            kind="effort",
            levels=("none", "high"),
            default="high",
            note="low, medium and max are sent as high",
        ),
    ),
    ("deepseek-v4", Control(kind="effort", levels=("none", "low", "high", "max"))),
    (
        "qwen3.8",
        Control(kind="effort", levels=("low", "medium", "xhigh"), default="xhigh", note=_CANNOT),
    ),
    # Older hybrid Qwen3 models switch thinking in their chat template.
    ("qwen3", _SWITCH),
    ("deepseek-r1", Control(kind="fixed", note="always reasons; takes no control")),
    ("qwq", Control(kind="fixed", note="always reasons; takes no control")),
)
_UNKNOWN = Control(
    kind="unknown", note="its control is not known here: a level is sent as reasoning_effort"
)
_NONE = Control(kind="none")


def control(model: str, *, reasons: bool, switches: bool) -> Control:
    """The control of `model`, given what the catalog (live, else its rules) says: that the
    template switches thinking wins; then the table; then whether it reasons at all."""
    if switches:
        return _SWITCH
    name = model.lower()
    for tag, known in FAMILIES:
        if tag in name:
            return known
    return _UNKNOWN if reasons else _NONE


def level_for(asked: str, levels: tuple[str, ...]) -> str:
    """The lowest of `levels` at or above `asked`, else the highest."""
    rank = _RANK[asked]
    for level in sorted(levels, key=_RANK.__getitem__):
        if _RANK[level] >= rank:
            return level
    return max(levels, key=_RANK.__getitem__)


def mode(lookup: Callable[[str], str | None]) -> str:
    """AI_THINKING, or the default; settings.load() refuses any other value first."""
    raw = (lookup(VAR) or "").strip().lower()
    return raw if raw in MODES else DEFAULT_MODE


def apply(known: Control, inputs: dict[str, Any], default_mode: str) -> dict[str, Any]:
    """The inputs with the asked `reasoning_effort` turned into what the model takes (a new
    dict when anything changes)."""
    asked = inputs.get("reasoning_effort")
    if asked is None and default_mode == "off":
        asked = "none"
    if not isinstance(asked, str) or asked not in _RANK:
        asked = None
    out = {k: v for k, v in inputs.items() if k != "reasoning_effort"}
    if asked is None or known.kind in ("fixed", "none"):
        return out
    if known.kind == "switch":
        kwargs = out.get("chat_template_kwargs")
        kwargs = dict(kwargs) if isinstance(kwargs, dict) else {}
        kwargs["enable_thinking"] = asked != "none"
        out["chat_template_kwargs"] = kwargs
    elif known.kind == "effort":
        out["reasoning_effort"] = level_for(asked, known.levels)
    elif asked != "none":
        out["reasoning_effort"] = level_for(asked, ("low", "medium", "high"))
    return out
