"""Every client example in examples/ against the local runtime: the exact answer, so they cannot rot."""

from __future__ import annotations

import math
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import tiktoken
from conftest import ROOT, THINKING_OFF, Runtime, expected_tokens, expected_wire
from conftest import builtin_vectors as expected

from base import settings

pytestmark = pytest.mark.runtime

PROMPT = 'Hi "there" \\ édge 🌍'
MESSAGES = [{"role": "user", "content": PROMPT}]
NODE = shutil.which("node") or "node"

EXAMPLES = {
    "openai_python.py": [sys.executable],
    "langchain_python.py": [sys.executable],
    "openai_js.mjs": [NODE],
    "vercel_ai_sdk.mjs": [NODE],
    "openai_responses.py": [sys.executable],
    "agents_sdk.py": [sys.executable],
    "ai_sdk_ui_chat.mjs": [NODE],
}


def run(rt: Runtime, command: list[str]) -> str:
    env = {**os.environ, "AI_CHAT_URL": rt.url, "PYTHONIOENCODING": "utf-8"}
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, encoding="utf-8", timeout=60
    )
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.mark.parametrize("name", EXAMPLES)
def test_sdk_example_prints_the_answer(runtime: Runtime, name: str) -> None:
    out = run(runtime, [*EXAMPLES[name], f"examples/{name}", PROMPT])
    assert out == "".join(expected_tokens(MESSAGES)) + "\n"
    call = runtime.last_call()
    assert (call["inputs"]["messages"], call["inputs"]["max_tokens"]) == (MESSAGES, 256)


SECOND_TURN = {
    "second_turn_openai.py": [sys.executable],
    "second_turn_openai.mjs": [NODE],
    "second_turn_ai_sdk.mjs": [NODE],
    "second_turn_langchain.py": [sys.executable],
}
# The SDKs that keep the reasoning and send it back (LangChain's ChatOpenAI keeps none).
SENDS_REASONING_BACK = {"second_turn_openai.py", "second_turn_openai.mjs", "second_turn_ai_sdk.mjs"}


@pytest.mark.parametrize("name", SECOND_TURN)
def test_a_second_turn_after_a_reasoning_answer(runtime: Runtime, name: str) -> None:
    first, follow_up = "[[pace:0]] [[think:3]] Capital of France?", "[[pace:0]] And of Spain?"
    out = run(runtime, [*SECOND_TURN[name], f"examples/{name}", first, follow_up])
    answer = "".join(expected_tokens([{"role": "user", "content": first}]))
    second = "".join(
        expected_tokens(
            [
                {"role": "user", "content": first},
                {"role": "assistant", "content": answer},
                {"role": "user", "content": follow_up},
            ]
        )
    )
    assert out == f"{answer}\n{second}\n"
    sent = runtime.last_call()["inputs"]["messages"]
    assert sent[0] == {"role": "user", "content": first} and sent[2] == {
        "role": "user",
        "content": follow_up,
    }
    assert sent[1]["content"] == answer
    if name in SENDS_REASONING_BACK:
        assert sent[1].get("reasoning") == "Let me think", sent[1]


def test_the_completions_example_prints_the_answer(runtime: Runtime) -> None:
    out = run(runtime, [sys.executable, "examples/openai_completions.py", PROMPT])
    assert out == "".join(expected_tokens(MESSAGES)) + "\n"
    call = runtime.last_call()
    assert call["inputs"] == {
        "prompt": PROMPT,
        "stream": True,
        "max_tokens": 256,
        **THINKING_OFF[call["model"]],
    }


def test_the_completions_example_sends_several_prompts_as_one_list(runtime: Runtime) -> None:
    prompts = [PROMPT, "Bonjour !"]
    before = len(runtime.calls())
    out = run(runtime, [sys.executable, "examples/openai_completions.py", *prompts])
    answers = ["".join(expected_tokens([{"role": "user", "content": p}])) for p in prompts]
    assert out == "".join(f"{i}: {a}\n" for i, a in enumerate(answers))
    assert sorted(c["inputs"]["prompt"] for c in runtime.calls()[before:]) == sorted(prompts)


def test_the_embeddings_example_prints_the_similarity(
    runtime: Runtime, cl100k: tiktoken.Encoding
) -> None:
    """LangChain's default path: tiktoken's ids (its table from the fixture's offline cache,
    through TIKTOKEN_CACHE_DIR), decoded by the Worker back to the very texts."""
    texts = ["a cat", PROMPT]
    out = run(runtime, [sys.executable, "examples/langchain_embeddings.py", *texts])
    first, second = expected(texts, 1024)
    cosine = sum(a * b for a, b in zip(first, second, strict=True)) / (
        math.sqrt(sum(a * a for a in first)) * math.sqrt(sum(b * b for b in second))
    )
    assert out == f"1024 dimensions; cosine similarity {cosine:.4f}\n"
    assert runtime.last_call()["inputs"] == {"text": texts}


def test_the_stored_responses_example_continues_reads_lists_and_deletes(
    runtime: Runtime,
) -> None:
    first, follow_up = "[[pace:0]] Capital of France?", "[[pace:0]] And of Spain?"
    out = run(runtime, [sys.executable, "examples/openai_stored_responses.py", first, follow_up])
    answer = "".join(expected_tokens([{"role": "user", "content": first}]))
    turns = [
        {"role": "user", "content": first},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": follow_up},
    ]
    assert out == (
        f"{answer}\n{''.join(expected_tokens(turns))}\n"
        "stored: completed, continued from the first: True\n"
        f"input item: message user: {follow_up}\n"
        "deleted: reading it again is 404\n"
    )
    assert runtime.last_call()["inputs"]["messages"] == turns  # turn one, from storage


OTHER_DOORS = {
    "openai_completions.py": [sys.executable],
    "langchain_embeddings.py": [sys.executable],
    "openai_stored_responses.py": [sys.executable],
}


def test_curl_example_prints_the_events(runtime: Runtime) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    out = run(runtime, ["sh", "examples/curl.sh", PROMPT])
    assert out.encode() == expected_wire(MESSAGES)


def test_open_webui_settings_point_at_routes_that_answer(runtime: Runtime) -> None:
    doc = (ROOT / "examples" / "open-webui.md").read_text()
    assert "http://127.0.0.1:8787/v1" in doc  # the local URL the page gives
    with runtime.client() as client:
        models = client.get("/v1/models").json()
        assert [m["id"] for m in models["data"]] == [
            "@cf/google/gemma-4-26b-a4b-it",
            "@cf/meta/llama-3.1-8b-instruct-fast",
            "@cf/openai/gpt-oss-20b",
            "@cf/zai-org/glm-4.7-flash",
            *settings.DEFAULT_EMBEDDING_MODELS,  # /v1/embeddings' models, listed after them
        ]
        body = {
            "model": models["data"][0]["id"],
            "messages": MESSAGES,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        response = client.post(
            "/v1/chat/completions", json=body, headers={"authorization": "Bearer unused"}
        )
    assert response.status_code == 200 and response.text.endswith("data: [DONE]\n\n")


def closed_port() -> int:
    """A local port nothing listens on: bound, then let go (connecting to it is refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("name", [*EXAMPLES, *SECOND_TURN, *OTHER_DOORS])
def test_without_a_server_an_example_says_what_to_do_in_one_line(
    name: str, cl100k: tiktoken.Encoding
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    command = [*{**EXAMPLES, **SECOND_TURN, **OTHER_DOORS}[name], f"examples/{name}", "Hello!"]
    env = {**os.environ, "AI_CHAT_URL": url, "PYTHONIOENCODING": "utf-8"}
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, encoding="utf-8", timeout=60
    )
    assert (result.returncode, result.stdout) == (1, ""), result
    assert result.stderr == (
        f"Cannot reach {url}: is `make dev` running? Set AI_CHAT_URL to the Worker's address.\n"
    ), result.stderr


def test_without_tiktokens_table_the_embeddings_example_says_what_to_do(tmp_path: Path) -> None:
    """LangChain's default path downloads tiktoken's table once; where it cannot (here: an
    empty cache and a proxy that refuses), the example says how to do without, in one line."""
    env = {
        **os.environ,
        "AI_CHAT_URL": f"http://127.0.0.1:{closed_port()}",
        "TIKTOKEN_CACHE_DIR": str(tmp_path),
        "HTTPS_PROXY": f"http://127.0.0.1:{closed_port()}",
        "https_proxy": f"http://127.0.0.1:{closed_port()}",
        "NO_PROXY": "",
        "no_proxy": "",
    }
    result = subprocess.run(
        [sys.executable, "examples/langchain_embeddings.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )
    assert (result.returncode, result.stdout) == (1, ""), result
    assert result.stderr == (
        "tiktoken could not download cl100k_base (ProxyError): without internet access,"
        " uncomment check_embedding_ctx_length=False above.\n"
    ), result.stderr
