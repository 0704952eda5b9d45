"""AI Gateway: with the var AI_GATEWAY_ID set, every env.AI.run() goes through that
gateway (caching, analytics, spend limits and logs in the Cloudflare dashboard).

AI_GATEWAY_CACHE_TTL (seconds) and AI_GATEWAY_SKIP_CACHE ("1") set its cache; each call is
tagged with the id of the API key that made it (metadata.api_key_id, a digest: never the key),
and with its owner (metadata.owner: a keyed hash of the Access identity, API key, owner token or
address, never an email or a token), so the gateway's logs and spend limits split by person.
"""

from __future__ import annotations

from typing import Any

from base.settings import Lookup

VAR = "AI_GATEWAY_ID"
CACHE_TTL_VAR = "AI_GATEWAY_CACHE_TTL"
SKIP_CACHE_VAR = "AI_GATEWAY_SKIP_CACHE"


def run_options(env: Lookup, key_id: str | None = None, owner: str | None = None) -> dict[str, Any]:
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
    metadata = {}
    if key_id is not None:
        metadata["api_key_id"] = key_id
    if owner is not None:
        metadata["owner"] = owner
    if metadata:
        gateway["metadata"] = metadata
    return {"gateway": gateway}


def configured(env: Lookup) -> bool:
    return bool((env(VAR) or "").strip())
