"""A stand-in for a Cloudflare Access team: RS256 keys, tokens signed with them, and a local
certs server (http://127.0.0.1:PORT/cdn-cgi/access/certs) that counts its fetches."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

AUD = "4714c1358e65fe4b408ad6d432a5f878f08194bdb4752441fd56faefa9b2b6f2"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _int(value: int) -> str:
    return b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))


class Key:
    def __init__(self, kid: str) -> None:
        self.kid = kid
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwk(self) -> dict[str, str]:
        numbers = self.private.public_key().public_numbers()
        return {
            "kid": self.kid,
            "kty": "RSA",
            "alg": "RS256",
            "use": "sig",
            "e": _int(numbers.e),
            "n": _int(numbers.n),
        }

    def sign(self, data: bytes) -> bytes:
        return self.private.sign(data, padding.PKCS1v15(), hashes.SHA256())


def claims(team: str, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    out: dict[str, Any] = {
        "aud": [AUD],
        "email": "ada@example.com",
        "exp": now + 600,
        "iat": now,
        "nbf": now,
        "iss": team,
        "type": "app",
        "identity_nonce": "nonce",
        "sub": "7335d417-61da-459d-899c-0a01c76a2f94",
        "country": "GB",
    }
    for name, value in changes.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def token(key: Key, body: dict[str, Any], *, alg: str = "RS256", kid: str | None = None) -> str:
    header = {"alg": alg, "kid": kid or key.kid, "typ": "JWT"}
    signed = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(body).encode())}"
    if alg == "RS256":
        signature = key.sign(signed.encode())
    elif alg == "HS256":  # HMAC keyed with the public key: the classic confusion attack
        secret = json.dumps(key.jwk()).encode()
        signature = hmac.new(secret, signed.encode(), hashlib.sha256).digest()
    else:
        signature = b""
    return f"{signed}.{b64(signature)}"


class CertsServer:
    """Serves {"keys": [...]} of `keys` at /cdn-cgi/access/certs; `fetches` counts the GETs."""

    def __init__(self, keys: list[Key]) -> None:
        self.keys = keys
        self.fetches = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != "/cdn-cgi/access/certs":
                    self.send_error(404)
                    return
                outer.fetches += 1
                body = json.dumps({"keys": [k.jwk() for k in outer.keys]}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.team = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
