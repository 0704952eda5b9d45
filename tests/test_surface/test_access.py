from __future__ import annotations

import asyncio
import base64
import time
from typing import Any

import pytest
from access_certs import AUD, Key, claims, token
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from base.errors import ApiError
from base.settings import SettingsError
from surface import access

TEAM = "https://team.cloudflareaccess.com"
SETTINGS = access.AccessConfig(team=TEAM, aud=AUD)
KEY = Key("k1")


def _int(text: str) -> int:
    return int.from_bytes(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)), "big")


class Verifier:
    """RS256 with the host's cryptography, and a list of the keys fetched."""

    def __init__(self, keys: list[Key]) -> None:
        self.keys = keys
        self.fetched: list[str] = []

    async def fetch_keys(self, url: str) -> object:
        self.fetched.append(url)
        return {"keys": [k.jwk() for k in self.keys]}

    async def verify(self, jwk: dict[str, Any], signed: bytes, signature: bytes) -> bool:
        public = rsa.RSAPublicNumbers(_int(jwk["e"]), _int(jwk["n"])).public_key()
        try:
            public.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            return False
        return True


def check(raw: str | None, verifier: Verifier, cache: access.KeyCache, now: float) -> Any:
    headers = {} if raw is None else {access.HEADER: raw}
    return asyncio.run(access.authenticate(headers, SETTINGS, verifier, now, cache))


def refusal(raw: str | None, verifier: Verifier | None = None, now: float | None = None) -> str:
    """The message of a refused token, checked at `now` (the time it was made: by default
    now; the parametrized tokens below were made when the module was collected, at NOW)."""
    with pytest.raises(ApiError) as caught:
        check(
            raw, verifier or Verifier([KEY]), access.KeyCache(), time.time() if now is None else now
        )
    assert (caught.value.status, caught.value.code) == (401, "access_denied")
    return caught.value.message


def test_a_valid_token_is_the_identity() -> None:
    identity = check(token(KEY, claims(TEAM)), Verifier([KEY]), access.KeyCache(), time.time())
    assert identity == access.Identity(
        sub="7335d417-61da-459d-899c-0a01c76a2f94", email="ada@example.com"
    )
    assert identity.owner == "access:7335d417-61da-459d-899c-0a01c76a2f94"


NOW = int(time.time())


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (None, "the Cf-Access-Jwt-Assertion header is missing"),
        ("", "the Cf-Access-Jwt-Assertion header is missing"),
        ("abc.def", "not a JWT"),
        ("bm90IGpzb24.b.c", "the header is not JSON"),
        ("a.b.c", "the header is not base64url"),
        ("!!.b.c", "the header is not base64url"),
        (token(KEY, claims(TEAM), alg="none"), "alg 'none' is not allowed; only RS256"),
        (token(KEY, claims(TEAM), alg="HS256"), "alg 'HS256' is not allowed; only RS256"),
        (token(KEY, claims(TEAM, exp=NOW - 61)), "the token has expired (exp)"),
        (token(KEY, claims(TEAM, exp=None)), "exp is missing"),
        (token(KEY, claims(TEAM, nbf=NOW + 600)), "the token is not valid yet (nbf)"),
        (token(KEY, claims(TEAM, aud=["other"])), "aud does not hold"),
        (token(KEY, claims(TEAM, aud=AUD + "x")), "aud does not hold"),
        (token(KEY, claims("https://evil.cloudflareaccess.com")), "iss is not the team domain"),
        (token(KEY, claims(TEAM, sub=None)), "names no subject"),
        (token(Key("k1"), claims(TEAM)), "the signature does not verify"),
        (token(KEY, claims(TEAM), kid="k9"), "the token's kid is not one of the team's keys"),
        (token(KEY, claims(TEAM))[:-4] + "AAAA", "the signature does not verify"),
    ],
)
def test_every_check_refuses_with_its_name(raw: str | None, says: str) -> None:
    message = refusal(raw, now=NOW)
    assert says in message, message


def test_a_minute_of_skew_is_allowed() -> None:
    raw = token(KEY, claims(TEAM, exp=NOW - 30, nbf=NOW + 30))
    assert check(raw, Verifier([KEY]), access.KeyCache(), NOW).email == "ada@example.com"


def test_a_new_kid_is_fetched_once_and_unknown_kids_are_bounded() -> None:
    start = int(time.time())  # the tokens' own clock: claims() dates them now
    cache = access.KeyCache()
    verifier = Verifier([KEY])
    check(token(KEY, claims(TEAM)), verifier, cache, 1.0 + start)
    check(token(KEY, claims(TEAM)), verifier, cache, 2.0 + start)
    assert verifier.fetched == [TEAM + "/cdn-cgi/access/certs"]
    # Rotation: a token signed with a new key; the keys are fetched again, once.
    new = Key("k2")
    verifier.keys = [KEY, new]
    now = start + 1.0 + access.REFETCH_SECONDS
    check(token(new, claims(TEAM)), verifier, cache, now)
    check(token(new, claims(TEAM)), verifier, cache, now + 1)
    assert len(verifier.fetched) == 2
    # Made-up kids do not make a fetch each: at most one per REFETCH_SECONDS.
    for i in range(5):
        with pytest.raises(ApiError):
            check(token(KEY, claims(TEAM), kid=f"made-up-{i}"), verifier, cache, now + 2 + i)
    assert len(verifier.fetched) == 2


def test_a_failed_fetch_is_a_refusal_not_an_error() -> None:
    class Down(Verifier):
        async def fetch_keys(self, url: str) -> object:
            raise OSError("connection refused")

    assert "could not be fetched" in refusal(token(KEY, claims(TEAM)), Down([]))


def test_config_needs_both_vars_and_an_origin() -> None:
    nothing: dict[str, str] = {}
    assert access.config(nothing.get) is None
    assert access.config({"ACCESS_TEAM_DOMAIN": TEAM}.get) is None
    got = access.config({"ACCESS_TEAM_DOMAIN": TEAM + "/", "ACCESS_AUD": AUD}.get)
    assert got == SETTINGS
    with pytest.raises(SettingsError) as caught:
        access.config({"ACCESS_TEAM_DOMAIN": "team", "ACCESS_AUD": AUD}.get)
    assert "ACCESS_TEAM_DOMAIN='team' must be an origin" in str(caught.value)
