"""/api/v1/ui-chat over HTTP on workerd, through its own Ai class, read by the `ai` package
itself: DefaultChatTransport sends the turn as useChat does and readUIMessageStream builds
the message with the SDK's own parser (tests/js/read-ui-chat.mjs); plus the wire in bytes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from typing import Any

import httpx
import pytest
from conftest import (
    ROOT,
    Runtime,
    assert_stopped,
    expected_tokens,
    expected_usage,
    leave_mid_answer,
)

pytestmark = pytest.mark.runtime

NODE = shutil.which("node") or "node"
GEMMA = "@cf/google/gemma-4-26b-a4b-it"
GPT_OSS = "@cf/openai/gpt-oss-20b"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def user(text: str, id: str = "u1") -> dict[str, Any]:
    return {"id": id, "role": "user", "parts": [{"type": "text", "text": text}]}


def read(runtime: Runtime, messages: list[dict[str, Any]], **body: Any) -> dict[str, Any]:
    """One turn through the AI SDK: {"message", "chunks", "errors"}."""
    request = json.dumps({"messages": messages, "body": body})
    result = subprocess.run(
        [NODE, "tests/js/read-ui-chat.mjs", runtime.url, request],
        cwd=ROOT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )
    assert result.returncode == 0, f"the AI SDK failed:\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def ui_usage(messages: list[dict[str, str]], extra_out: int = 0) -> dict[str, int]:
    usage = expected_usage(messages)
    out = usage["completion_tokens"] + extra_out
    return {
        "inputTokens": usage["prompt_tokens"],
        "outputTokens": out,
        "totalTokens": usage["prompt_tokens"] + out,
    }


def test_text_as_the_ai_sdk_reads_it(runtime: Runtime) -> None:
    said = "[[pace:1]] hello ui"
    turn = read(runtime, [user(said)], model=GEMMA, max_tokens=200)
    tokens = expected_tokens([{"role": "user", "content": said}])
    assert turn["errors"] == []
    assert turn["chunks"] == [
        "start",
        "start-step",
        "text-start",
        *["text-delta"] * len(tokens),
        "text-end",
        "finish-step",
        "finish",
    ]
    message = turn["message"]
    assert message["role"] == "assistant" and message["id"].startswith("msg_")
    assert message["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "".join(tokens), "state": "done"},
    ]
    assert message["metadata"] == {
        "model": GEMMA,
        "usage": ui_usage([{"role": "user", "content": said}]),
    }
    assert runtime.last_call()["inputs"] == {
        "messages": [{"role": "user", "content": said}],
        "stream": True,
        "max_tokens": 200,
        # Nothing asked: AI_THINKING's default turns gemma-4's thinking off.
        "chat_template_kwargs": {"enable_thinking": False},
    }


def test_reasoning_then_text(runtime: Runtime) -> None:
    said = "[[pace:1]] [[think:3]] capital of France?"
    turn = read(runtime, [user(said)], model=GPT_OSS, reasoning_effort="low")
    parts = turn["message"]["parts"]
    assert [p["type"] for p in parts] == ["step-start", "reasoning", "text"], parts
    assert (parts[1]["text"], parts[1]["state"]) == ("Let me think", "done")
    assert parts[2]["text"] == "".join(expected_tokens([{"role": "user", "content": said}]))
    assert turn["message"]["metadata"]["usage"] == ui_usage(
        [{"role": "user", "content": said}], extra_out=3
    )
    assert runtime.last_call()["inputs"]["reasoning_effort"] == "low"


@pytest.mark.parametrize("model", [GEMMA, GPT_OSS])
def test_a_tool_call_then_its_result_then_the_answer(runtime: Runtime, model: str) -> None:
    """The browser runs the tool: the tool part comes back with its output, as useChat sends it."""
    said = "[[pace:0]] [[think:2]] [[tool:get_weather]] Paris"
    first = read(runtime, [user(said)], model=model, tools=[WEATHER])
    assert first["errors"] == [] and first["chunks"][-3:] == [
        "tool-input-available",
        "finish-step",
        "finish",
    ], first["chunks"]
    tool = first["message"]["parts"][-1]
    assert (tool["type"], tool["state"], tool["input"]) == (
        "tool-get_weather",
        "input-available",
        {"city": "Paris"},
    ), tool
    done = {**tool, "state": "output-available", "output": {"sky": "sunny"}}
    assistant = {**first["message"], "parts": [*first["message"]["parts"][:-1], done]}
    second = read(runtime, [user(said), assistant], model=model, tools=[WEATHER])
    # the same message, continued with a second step: as useChat shows it
    assert second["message"]["id"] == first["message"]["id"]
    parts = second["message"]["parts"]
    assert parts[: len(assistant["parts"])] == assistant["parts"] and parts[
        len(assistant["parts"])
    ] == {"type": "step-start"}, parts
    assert parts[-1]["text"] == f'The tool {tool["toolCallId"]} said: {{"sky":"sunny"}}.'
    sent = runtime.last_call()["inputs"]["messages"]
    call = {
        "id": tool["toolCallId"],
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
    }
    # gpt-oss reasons, so its thinking goes back; gemma's <think> text is not reasoning it takes back
    reasoning = {"reasoning": "Let me"} if model == GPT_OSS else {}
    assert sent[1:] == [
        {"role": "assistant", "content": "", "tool_calls": [call], **reasoning},
        {"role": "tool", "content": '{"sky":"sunny"}', "tool_call_id": tool["toolCallId"]},
    ], sent


def test_a_failure_mid_stream_reaches_the_sdks_on_error(runtime: Runtime) -> None:
    turn = read(runtime, [user("[[fault:midstream]] [[pace:0]] boom")], model=GEMMA)
    assert turn["errors"] == ["The model stream failed."]
    assert turn["chunks"][-2:] == ["text-end", "error"]


def test_the_wire_in_bytes(runtime: Runtime) -> None:
    said = "[[pace:0]] [[think:1]] hi"
    response = httpx.post(
        runtime.url + "/api/v1/ui-chat",
        timeout=30,
        json={
            "id": "c",
            "trigger": "submit-message",
            "messages": [user(said)],
            "model": GPT_OSS,
            "max_tokens": 3,
        },
    )
    assert response.status_code == 200 and response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    body = re.sub(rb'"messageId":"msg_[0-9a-f]{24}"', b'"messageId":"msg_X"', response.content)
    assert body == (
        b'data: {"type":"start","messageId":"msg_X"}\n\n'
        b'data: {"type":"start-step"}\n\n'
        b'data: {"type":"reasoning-start","id":"reasoning-0"}\n\n'
        b'data: {"type":"reasoning-delta","id":"reasoning-0","delta":"Let"}\n\n'
        b'data: {"type":"reasoning-end","id":"reasoning-0"}\n\n'
        b'data: {"type":"text-start","id":"text-1"}\n\n'
        b'data: {"type":"text-delta","id":"text-1","delta":"You"}\n\n'
        b'data: {"type":"text-delta","id":"text-1","delta":" said:"}\n\n'
        b'data: {"type":"text-end","id":"text-1"}\n\n'
        b'data: {"type":"finish-step"}\n\n'
        b'data: {"type":"finish","finishReason":"length","messageMetadata":{"model":"@cf/openai/gpt-oss-20b",'
        b'"usage":{"inputTokens":6,"outputTokens":3,"totalTokens":9}}}\n\n'
        b"data: [DONE]\n\n"
    ), body


def test_a_client_that_leaves_stops_the_model(runtime: Runtime) -> None:
    body = {"messages": [user("[[pace:40]] [[tokens:200]] long answer please")], "model": GEMMA}
    leave_mid_answer(runtime, "/api/v1/ui-chat", body, b'"type":"text-delta"')
    call = runtime.wait_for(
        lambda c: c["clientClosedAt"] is not None or c["finishedAt"] is not None
    )
    assert_stopped(call)
