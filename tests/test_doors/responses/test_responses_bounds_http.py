"""What one /v1/responses request expands to is bounded before it is built, on workerd through
its own Ai class and the RESPONSES Durable Object (issue 46): 2,000 item references to one
large stored item (a reasoning item, a long user message) and a 100-deep previous_response_id
chain are each a 4xx naming the field, the model is never called, the isolate's Wasm memory
stays where it was, and the request's log line names the budget it hit."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from conftest import Runtime

pytestmark = pytest.mark.runtime

GEMMA = "@cf/google/gemma-4-26b-a4b-it"  # a 256,000-token window
SMALLER = "@cf/meta/llama-3.1-8b-instruct-fast"  # 128,000 tokens, does not reason
REASONS = "@cf/openai/gpt-oss-20b"
LARGE = 200_000  # characters of the one large stored item
# Wasm memory never shrinks, so any growth a request causes stays visible; an expansion built
# whole grew it by hundreds of MB (issue 46). The bound leaves room for ordinary allocation.
GROWTH_BOUND = 16 * 1024 * 1024


def post(http: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    return http.post("/v1/responses", json=body)


def stored(http: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    made = post(http, {"max_output_tokens": 8, **body})
    assert made.status_code == 200, made.text[:300]
    return made.json()  # type: ignore[no-any-return]


def wasm(rt: Runtime) -> int:
    return int(rt.stats()["wasm_memory_bytes"])


def request_line(rt: Runtime, request_id: str) -> dict[str, Any]:
    for line in reversed(list(rt.log)):
        if line.startswith('{"message":"request"') and request_id in line:
            return json.loads(line)  # type: ignore[no-any-return]
    raise AssertionError(f"no request line for {request_id} in {len(rt.log)} lines")


LARGE_ITEMS = {
    "reasoning": (
        {
            "type": "reasoning",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "r" * LARGE}],
        },
        "rs",
    ),
    "user message": ({"role": "user", "content": "[[pace:0]] " + "u" * LARGE}, "msg"),
}


@pytest.mark.parametrize("model", [SMALLER, REASONS])
@pytest.mark.parametrize("kind", LARGE_ITEMS)
def test_two_thousand_references_to_one_large_item_are_a_4xx_before_anything_is_built(
    runtime: Runtime, kind: str, model: str
) -> None:
    item, prefix = LARGE_ITEMS[kind]
    with runtime.client(timeout=60) as http:
        first = stored(
            http, {"model": GEMMA, "input": [item, {"role": "user", "content": "[[pace:0]] hi"}]}
        )
        ref = {"type": "item_reference", "id": f"{prefix}_{first['id'][5:]}_i0"}
        before, calls = wasm(runtime), len(runtime.calls())
        refused = post(http, {"model": model, "input": [ref] * 2000})
        grown = wasm(runtime) - before
    assert refused.status_code in (400, 413), refused.text[:300]
    error = refused.json()["error"]
    assert error["code"] in ("input_too_large", "context_length_exceeded"), error
    assert error["param"].startswith("input[") and error["message"].startswith(error["param"])
    assert len(runtime.calls()) == calls  # the model was never called
    assert grown < GROWTH_BOUND, f"Wasm memory grew by {grown} bytes"
    line = request_line(runtime, refused.headers["x-request-id"])
    assert line["budget"] in ("MAX_CONVERSATION_BYTES", "context_window"), line
    assert line["status"] == refused.status_code and "r" * 100 not in json.dumps(line)


def test_a_100_deep_chain_past_the_model_s_window_is_a_4xx_after_one_read(
    runtime: Runtime,
) -> None:
    """Built on the larger window; continued on the smaller one. Each link holds 6,000
    characters: 100 of them pass 128,000 tokens, not 256,000."""
    with runtime.client(timeout=60) as http:
        previous = None
        for n in range(100):
            body: dict[str, Any] = {
                "model": GEMMA,
                "input": f"[[pace:0]] link {n} " + "c" * 6000,
                "max_output_tokens": 4,
            }
            if previous is not None:
                body["previous_response_id"] = previous
            made = post(http, body)
            assert made.status_code == 200, (n, made.text[:300])
            previous = made.json()["id"]
        before, calls = wasm(runtime), len(runtime.calls())
        refused = post(
            http, {"model": SMALLER, "input": "[[pace:0]] next", "previous_response_id": previous}
        )
        grown, called = wasm(runtime) - before, len(runtime.calls()) - calls
        # The same chain still continues on the model whose window it fits.
        fits = post(
            http,
            {
                "model": GEMMA,
                "input": "[[pace:0]] next",
                "previous_response_id": previous,
                "store": False,
            },
        )
    assert refused.status_code == 400, refused.text[:300]
    error = refused.json()["error"]
    assert (error["code"], error["param"]) == ("context_length_exceeded", "previous_response_id")
    assert called == 0
    assert grown < GROWTH_BOUND, f"Wasm memory grew by {grown} bytes"
    assert request_line(runtime, refused.headers["x-request-id"])["budget"] == "context_window"
    assert fits.status_code == 200, fits.text[:300]
    sent = runtime.last_call()["inputs"]["messages"]
    assert len(sent) == 201 and sent[0]["content"].startswith("[[pace:0]] link 0 ")
    assert [m["content"].split(" ")[2] for m in sent[:-1:2]] == [str(n) for n in range(100)]
