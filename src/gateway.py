"""AI Gateway: with the var AI_GATEWAY_ID set, every env.AI.run() goes through that
gateway (caching, analytics, spend limits and logs in the Cloudflare dashboard)."""

from __future__ import annotations

from typing import Any

from settings import Lookup

VAR = "AI_GATEWAY_ID"


def run_options(env: Lookup) -> dict[str, Any]:
    """The third argument of env.AI.run(); empty (no gateway) when the var is unset or blank."""
    gateway = (env(VAR) or "").strip()
    return {"gateway": {"id": gateway}} if gateway else {}
