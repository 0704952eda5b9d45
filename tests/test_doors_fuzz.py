"""Hostile bodies for /v1/responses and /api/v1/ui-chat through app.handle (host): valid
requests of every item and part kind, mutated by tests/fuzz.py; no answer may be a 500 or an
undocumented error, and every error keeps its door's shape."""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import AsyncIterator

from fakes import FakeLimiter, FakeModel, frames
from fuzz import Node, encode, mutate

from app import handle
from routes import TABLE
from web import WebRequest

RESPONSES, UI_CHAT = "/v1/responses", "/api/v1/ui-chat"
ENV = {"AI_MODELS": "@cf/google/gemma-4-26b-a4b-it,@cf/openai/gpt-oss-20b"}
COUNT = int(os.environ.get("FUZZ_COUNT", "1500"))
CLIENT_ERRORS = {
    (400, "invalid_json"),
    (400, "invalid_field"),
    (400, "unknown_field"),
    (400, "unknown_model"),
    (400, "too_many_messages"),
    (400, "message_too_long"),
    (400, "unsupported_parameter"),
    (400, "images_not_supported"),
    (400, "too_many_images"),
    (400, "image_too_large"),
    (413, "body_too_large"),
}
PNG = "data:image/png;base64,iVBORw0KGgo="


GEMMA = "@cf/google/gemma-4-26b-a4b-it"  # the vision model: the valid bodies carry an image for it


def responses_base(rng: random.Random) -> dict[str, Node]:
    model = rng.choice(ENV["AI_MODELS"].split(","))
    image: list[Node] = [{"type": "input_image", "image_url": PNG}] if model == GEMMA else []
    items: list[Node] = [
        {"role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hi"}, *image],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "hm"}],
        },
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "done", "annotations": []}],
        },
        {"role": "user", "content": "more"},
    ]
    body: dict[str, Node] = {
        "model": model,
        "input": items if rng.random() < 0.8 else "hi",
        "instructions": "be brief",
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
        "tool_choice": "auto",
        "max_output_tokens": 50,
        "temperature": 0.5,
        "top_p": 0.9,
        "reasoning": {"effort": "low"},
        "text": {"format": {"type": "text"}},
        "stream": rng.random() < 0.5,
        "store": False,
        "stop": ["x"],
    }
    return body


def ui_base(rng: random.Random) -> dict[str, Node]:
    model = rng.choice(ENV["AI_MODELS"].split(","))
    image: list[Node] = (
        [{"type": "file", "mediaType": "image/png", "url": PNG}] if model == GEMMA else []
    )
    assistant: Node = {
        "id": "a",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "hm"},
            {
                "type": "tool-f",
                "toolCallId": "c1",
                "state": "output-available",
                "input": {"x": 1},
                "output": {"y": 2},
            },
            {"type": "step-start"},
            {"type": "text", "text": "done"},
        ],
    }
    return {
        "id": "chat",
        "trigger": "submit-message",
        "messageId": "m",
        "model": model,
        "max_tokens": 50,
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "messages": [
            {"id": "s", "role": "system", "parts": [{"type": "text", "text": "brief"}]},
            {"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}, *image]},
            assistant,
            {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "more"}]},
        ],
    }


async def one_piece(body: bytes) -> AsyncIterator[bytes]:
    yield body


def problem(path: str, status: int, body: bytes) -> str | None:
    if status == 200:
        return None
    value = json.loads(body)
    if path == RESPONSES:
        error = value["error"]
        if set(error) != {"message", "type", "param", "code"}:
            return f"not the OpenAI error shape: {value!r:.300}"
        code = error["code"]
    else:
        if set(value) != {"error", "message"}:
            return f"not the app's error shape: {value!r:.300}"
        code = value["error"]
    return (
        None if (status, code) in CLIENT_ERRORS else f"undocumented {status} {code}: {value!r:.300}"
    )


def test_hostile_bodies_get_documented_answers_in_their_doors_shape() -> None:
    async def run() -> list[str]:
        found = []
        for index in range(COUNT):
            rng = random.Random(f"doors:{index}")
            path = rng.choice((RESPONSES, UI_CHAT))
            tree: Node = responses_base(rng) if path == RESPONSES else ui_base(rng)
            if index % 10:  # every tenth as it is: the valid request itself
                for _ in range(rng.choice((1, 1, 2, 3))):
                    tree = mutate(rng, tree)
            raw = encode(tree, ascii_only=rng.random() < 0.5)
            request = WebRequest(
                method="POST",
                url="https://x" + path,
                path=path,
                headers={"content-type": "application/json"},
                body=one_piece(raw),
            )
            response = await handle(
                request, ENV.get, FakeModel(frames("a", "b")), TABLE, limiter=FakeLimiter()
            )
            body = response.body if isinstance(response.body, bytes) else b""
            if (trouble := problem(path, response.status, body)) is not None:
                found.append(f"#{index} {path} {raw[:300]!r}: {trouble}")
        return found

    found = asyncio.run(run())
    assert not found, f"{len(found)} of {COUNT} bodies got a wrong answer, first:\n" + "\n".join(
        found[:5]
    )
