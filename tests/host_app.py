"""The app on the host: a WebRequest in, the route table over fakes, the answer out. Shared by the
host tests of every door (tests/test_surface/test_app.py and the doors' own)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from fakes import FakeLimiter, FakeModel, FakeSource, frames
from host_driver import drive

from routes import TABLE
from streaming.relay import Relayed
from surface.policy import handle
from surface.web import Pieces, WebRequest, WebResponse

URL = "https://chat.example.dev"


async def body_of(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def request(method: str, path: str, body: bytes = b"", **headers: Any) -> WebRequest:
    return WebRequest(
        method=method,
        url=URL + path,
        path=path,
        headers={k.replace("_", "-"): v for k, v in headers.items()},
        body=body_of(body),
    )


def call(
    req: WebRequest,
    env: dict[str, str] | None = None,
    model: FakeModel | None = None,
    limiter: FakeLimiter | None = None,
) -> WebResponse:
    return asyncio.run(
        handle(
            req,
            (env or {}).get,
            model or FakeModel(frames("hi")),
            TABLE,
            limiter=limiter or FakeLimiter(),
        )
    )


def streamed(response: WebResponse) -> bytes:
    """The body as the shell would send it (host_driver.drive)."""
    assert response.status == 200 and isinstance(response.body, Relayed), response
    source, relay = response.body.source, response.body.relay
    assert isinstance(source, FakeSource), source

    async def run() -> bytes:
        return b"".join([chunk async for chunk in drive(source, relay)])

    return asyncio.run(run())


def whole(response: WebResponse) -> bytes:
    """A whole answer's body: its bytes, or its pieces joined (surface.web.Pieces)."""
    if isinstance(response.body, Pieces):
        return response.body.joined()
    assert isinstance(response.body, bytes), response
    return response.body
