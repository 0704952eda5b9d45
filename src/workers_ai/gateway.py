"""AI Gateway: with the var AI_GATEWAY_ID set, every env.AI.run() goes through that
gateway (caching, analytics, spend limits and logs in the Cloudflare dashboard).

AI_GATEWAY_CACHE_TTL (seconds) and AI_GATEWAY_SKIP_CACHE ("1") set its cache; each call is
tagged with the id of the API key that made it (metadata.api_key_id, a digest: never the key),
so the gateway's logs give the cost per key.
"""

from __future__ import annotations

from typing import Any

from base.settings import Lookup

VAR = "AI_GATEWAY_ID"
CACHE_TTL_VAR = "AI_GATEWAY_CACHE_TTL"
SKIP_CACHE_VAR = "AI_GATEWAY_SKIP_CACHE"


def run_options(env: Lookup, key_id: str | None = None) -> dict[str, Any]:
    """The third argument of env.AI.run(); empty (no gateway) when the var is unset or blank.
    settings.load() has already refused a cache TTL that is not a whole number of seconds."""
    gateway_id = (env(VAR) or "").strip()
    if not gateway_id:
        return {}
    gateway: dict[str, Any] = {"id": gateway_id}
    ttl = (env(CACHE_TTL_VAR) or "").strip()
    if ttl.isdigit():
        gateway["cacheTtl"] = int(ttl)
    if (env(SKIP_CACHE_VAR) or "").strip() == "1":
        gateway["skipCache"] = True
    if key_id is not None:
        gateway["metadata"] = {"api_key_id": key_id}
    return {"gateway": gateway}
