"""access.Verifier in the Worker: the team's keys with fetch(), the RS256 signature with
WebCrypto (crypto.subtle). A key is imported for each check: an imported CryptoKey is a JS object,
and none may be kept in a module global (a deploy's snapshot fails on one)."""

from __future__ import annotations

import json
from typing import Any

import js
from pyodide.ffi import to_js

from shell.js_glue import js_object

_ALGORITHM = {"name": "RSASSA-PKCS1-v1_5", "hash": "SHA-256"}
# Only what an RSA public key is made of: a JWK's other members (use, alg, key_ops) must agree
# with the import's own usages, and Access's certs do not promise they will.
_PUBLIC = ("kty", "n", "e")


class WebCryptoVerifier:
    async def fetch_keys(self, url: str) -> object:
        response = await js.fetch(url)
        if int(response.status) != 200:
            raise RuntimeError(f"{url} answered {int(response.status)}")
        return json.loads(str(await response.text()))

    async def verify(self, jwk: dict[str, Any], signed: bytes, signature: bytes) -> bool:
        subtle = js.crypto.subtle
        public = {k: jwk[k] for k in _PUBLIC if isinstance(jwk.get(k), str)}
        key = await subtle.importKey(
            "jwk", js_object(public), js_object(_ALGORITHM), False, to_js(["verify"])
        )
        valid = await subtle.verify(js_object(_ALGORITHM), key, to_js(signature), to_js(signed))
        return bool(valid)
