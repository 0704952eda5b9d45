"""Cloudflare Access as the identity: with ACCESS_TEAM_DOMAIN and ACCESS_AUD set, a request must
carry a valid `Cf-Access-Jwt-Assertion` (or one of API_KEYS), and the token's subject owns what
the request creates.

The token is parsed and its claims checked here, in plain Python; the shell fetches the team's
keys and checks the RS256 signature with WebCrypto (Verifier). Only RS256 is taken: `alg: none`
and HMAC (a public key used as an HMAC secret) are refused before any key is looked at. Keys
are kept by `kid` as plain JWK dicts (never a JS object) and fetched again for an unknown `kid`,
at most once per REFETCH_SECONDS, so a stream of tokens with made-up kids cannot make the Worker
fetch the keys on every request. Every refusal is 401 `access_denied` naming the check.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from base.errors import ApiError
from base.settings import Lookup, SettingsError

TEAM_VAR = "ACCESS_TEAM_DOMAIN"
AUD_VAR = "ACCESS_AUD"
HEADER = "cf-access-jwt-assertion"
CERTS_PATH = "/cdn-cgi/access/certs"
SKEW_SECONDS = 60.0  # how far exp and nbf may be off: clocks differ
REFETCH_SECONDS = 10.0  # the least time between two fetches of the keys
MAX_TOKEN_CHARS = 16_384
_ORIGIN = re.compile(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?")
_B64URL = re.compile(r"[A-Za-z0-9_-]*")


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessConfig:
    team: str  # the issuer: https://<team>.cloudflareaccess.com, no trailing slash
    aud: str

    @property
    def certs_url(self) -> str:
        return self.team + CERTS_PATH


def config(lookup: Lookup) -> AccessConfig | None:
    """The Access settings; None when either var is unset (no Access: everything as before).
    A team domain that is not an origin is a misconfiguration (SettingsError)."""
    team = (lookup(TEAM_VAR) or "").strip().rstrip("/")
    aud = (lookup(AUD_VAR) or "").strip()
    if not team or not aud:
        return None
    if not _ORIGIN.fullmatch(team):
        raise SettingsError(
            f"{TEAM_VAR}={lookup(TEAM_VAR)!r} must be an origin, e.g. https://<team>.cloudflareaccess.com"
        )
    return AccessConfig(team=team, aud=aud)


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    sub: str
    email: str | None

    @property
    def owner(self) -> str:
        """What this person owns conversations and stored responses as."""
        return "access:" + self.sub


@dataclass(frozen=True, slots=True, kw_only=True)
class Token:
    kid: str
    claims: dict[str, Any]
    signed: bytes  # the first two parts, as signed
    signature: bytes


def denied(check: str) -> ApiError:
    return ApiError(401, "access_denied", f"Cloudflare Access token refused: {check}.")


def _b64(part: str, what: str) -> bytes:
    if not _B64URL.fullmatch(part):
        raise denied(f"the {what} is not base64url")
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise denied(f"the {what} is not base64url") from None


def _json(part: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(_b64(part, what))
    except (ValueError, UnicodeDecodeError):
        raise denied(f"the {what} is not JSON") from None
    if not isinstance(value, dict):
        raise denied(f"the {what} is not a JSON object")
    return value


def parse(raw: str | None) -> Token:
    """The token's parts, or access_denied: missing, malformed, or not RS256 with a kid."""
    if raw is None or not raw.strip():
        raise denied("the Cf-Access-Jwt-Assertion header is missing")
    raw = raw.strip()
    if len(raw) > MAX_TOKEN_CHARS:
        raise denied("the token is too long")
    parts = raw.split(".")
    if len(parts) != 3:
        raise denied("the token is not a JWT (three dot-separated parts)")
    header = _json(parts[0], "header")
    alg = header.get("alg")
    if alg != "RS256":
        shown = alg if isinstance(alg, str) and len(alg) <= 16 else "?"
        raise denied(f"alg {shown!r} is not allowed; only RS256")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid or len(kid) > 256:
        raise denied("the header has no kid")
    claims = _json(parts[1], "payload")
    signature = _b64(parts[2], "signature")
    if not signature:
        raise denied("the signature is empty")
    return Token(
        kid=kid, claims=claims, signed=f"{parts[0]}.{parts[1]}".encode(), signature=signature
    )


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise denied(f"{name} is not a number")
    return float(value)


def check_claims(claims: Mapping[str, Any], settings: AccessConfig, now: float) -> Identity:
    """aud holds ACCESS_AUD, iss is the team domain, exp and nbf hold (SKEW_SECONDS either way),
    and there is a subject: the identity; else access_denied naming the check."""
    aud = claims.get("aud")
    auds = aud if isinstance(aud, list) else [aud]
    if settings.aud not in auds:
        raise denied("aud does not hold this application's AUD tag (ACCESS_AUD)")
    if claims.get("iss") != settings.team:
        raise denied("iss is not the team domain (ACCESS_TEAM_DOMAIN)")
    exp = _number(claims, "exp")
    if exp is None:
        raise denied("exp is missing")
    if now > exp + SKEW_SECONDS:
        raise denied("the token has expired (exp)")
    nbf = _number(claims, "nbf")
    if nbf is not None and now + SKEW_SECONDS < nbf:
        raise denied("the token is not valid yet (nbf)")
    # A service token's JWT has no sub: its common_name (the client id) stands for it.
    sub = claims.get("sub") or claims.get("common_name")
    if not isinstance(sub, str) or not sub or len(sub) > 256:
        raise denied("the token names no subject (sub)")
    email = claims.get("email")
    return Identity(sub=sub, email=email if isinstance(email, str) and email else None)


@dataclass(slots=True)
class KeyCache:
    """The team's keys as JWK dicts by kid, and when they were last fetched. Python values only
    (the module keeps one: an isolate fetches the keys once, not once a request)."""

    team: str | None = None
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    fetched_at: float | None = None
    fetches: int = 0

    def find(self, team: str, kid: str) -> dict[str, Any] | None:
        if team != self.team:
            self.team, self.keys, self.fetched_at = team, {}, None
        return self.keys.get(kid)

    def may_fetch(self, now: float) -> bool:
        return self.fetched_at is None or now - self.fetched_at >= REFETCH_SECONDS

    def loaded(self, jwks: object, now: float) -> None:
        """The certs endpoint's answer ({"keys": [JWK, ...]}); RSA keys with a kid are kept."""
        self.fetched_at = now
        self.fetches += 1
        keys = jwks.get("keys") if isinstance(jwks, dict) else None
        found = {
            str(key["kid"]): key
            for key in (keys if isinstance(keys, list) else ())
            if isinstance(key, dict) and key.get("kty") == "RSA" and isinstance(key.get("kid"), str)
        }
        if found:
            self.keys = found

    def failed(self, now: float) -> None:
        self.fetched_at = now


KEYS = KeyCache()


class Verifier(Protocol):
    """What only the shell can do: fetch the keys, and check an RS256 signature (WebCrypto)."""

    async def fetch_keys(self, url: str) -> object:
        """The certs URL's JSON, as Python values; raises when it cannot be had."""
        ...

    async def verify(self, jwk: dict[str, Any], signed: bytes, signature: bytes) -> bool:
        """Whether `signature` is the RS256 signature of `signed` under the public key `jwk`."""
        ...


async def authenticate(
    headers: Mapping[str, str],
    settings: AccessConfig,
    verifier: Verifier,
    now: float,
    cache: KeyCache = KEYS,
) -> Identity:
    """The identity of a request with a valid Access token; else access_denied, never a 500."""
    token = parse(headers.get(HEADER))
    identity = check_claims(token.claims, settings, now)
    jwk = cache.find(settings.team, token.kid)
    if jwk is None and cache.may_fetch(now):
        try:
            cache.loaded(await verifier.fetch_keys(settings.certs_url), now)
        except Exception as exc:
            cache.failed(now)
            raise denied("the team's keys could not be fetched") from exc
        jwk = cache.find(settings.team, token.kid)
    if jwk is None:
        raise denied("the token's kid is not one of the team's keys")
    try:
        valid = await verifier.verify(jwk, token.signed, token.signature)
    except Exception as exc:  # a key WebCrypto will not import, say
        raise denied("the signature could not be checked") from exc
    if not valid:
        raise denied("the signature does not verify")
    return identity
