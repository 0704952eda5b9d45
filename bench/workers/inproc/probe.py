"""In-isolate costs (bench/probes/inproc.mjs): copied beside a copy of src/ whose entry.py
routes POST /__probe here; runs n iterations of one piece of a request inside one request, so
workerd's HTTP and the SDK's entry are paid once, not per iteration."""

from __future__ import annotations

import json
from typing import Any

import js

from base import settings as config
from common.chat_events import ChatEncoder
from routes import TABLE
from shell.bindings import WorkersAi, env_lookup, js_env, limiter
from shell.jsstream import RelayPipe
from surface import policy
from surface.web import WebRequest
from workers_ai.service import new_relay

FRAMES = (
    b"".join(b"data: " + json.dumps({"response": f" tok{i}"}).encode() + b"\n\n" for i in range(10))
    + b"data: [DONE]\n\n"
)


async def _empty_body() -> Any:
    yield b""


async def run(kind: str, n: int, env: Any, ctx: Any, entry: Any) -> str:
    lookup = env_lookup(env)
    if kind == "noop":
        for _ in range(n):
            pass
    elif kind == "settings":
        for _ in range(n):
            config.load(lookup)
    elif kind == "env_objects":  # what entry.fetch builds from env before policy
        for _ in range(n):
            env_lookup(env)
            getattr(env, "CONVERSATIONS", None)
            getattr(js_env(env), "RESPONSES", None)
            getattr(env, "OWNERS", None)
            limiter(env)
            limiter(env, "KEY_RATE_LIMITER")
            limiter(env, "READ_RATE_LIMITER")
    elif kind == "models":  # GET /api/v1/models through policy.handle
        for _ in range(n):
            web = WebRequest(
                method="GET",
                url="http://x/api/v1/models",
                path="/api/v1/models",
                headers={},
                body=_empty_body(),
            )
            await policy.handle(web, lookup, WorkersAi(env, None), TABLE, limiter=limiter(env))
    elif kind == "limiter":
        lim = limiter(env)
        assert lim is not None, "no RATE_LIMITER binding"
        for _ in range(n):
            await lim.allow("ip:probe")
    elif kind in ("pipe", "pipe_off", "pipe_bare"):
        settings = config.load(lookup)
        window = 0.09 if kind == "pipe" else 0.0
        for _ in range(n):
            upstream = (
                js.Response.new(js.Uint8Array.new(len(FRAMES)).fill(32)).body
                if kind == "pipe_bare"
                else js.Response.new(FRAMES).body
            )
            relay = new_relay(
                settings, ChatEncoder(model=None), 1000, "@cf/meta/llama-3.1-8b-instruct-fast"
            )
            pipe = RelayPipe(upstream, relay, None, ctx, None, window=window)
            await js.Response.new(pipe.stream).arrayBuffer()
    elif kind == "response_only":  # the floor of "pipe": a body read whole by Response
        for _ in range(n):
            await js.Response.new(js.Response.new(FRAMES).body).arrayBuffer()
    else:
        raise ValueError(kind)
    return "ok"
