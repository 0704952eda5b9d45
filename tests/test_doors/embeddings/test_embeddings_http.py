"""/v1/embeddings over HTTP on workerd, through its own Ai class and the built-in model: the
openai SDK (its default base64, and floats), LangChain's OpenAIEmbeddings, narrower widths,
/v1/models, and the 400s between chat and embedding models (issue 34)."""

from __future__ import annotations

import base64
import math
import struct

import httpx
import openai
import pytest
from conftest import Runtime
from conftest import builtin_vectors as expected
from langchain_openai import OpenAIEmbeddings
from pydantic import SecretStr

pytestmark = pytest.mark.runtime

BGE, BASE, GEMMA = "@cf/baai/bge-m3", "@cf/baai/bge-base-en-v1.5", "@cf/google/embeddinggemma-300m"
CHAT = "@cf/google/gemma-4-26b-a4b-it"
TEXTS = ["Hello, world!", 'quote " \\ édge 🌍']


def test_the_openai_sdk_default_base64_and_floats_are_the_models_vectors(
    client: openai.OpenAI, runtime: Runtime
) -> None:
    want = expected(TEXTS, 1024)
    default = client.embeddings.create(model=BGE, input=TEXTS)  # the SDK asks for base64
    assert runtime.last_call()["inputs"] == {"text": TEXTS}
    floats = client.embeddings.create(model=BGE, input=TEXTS, encoding_format="float")
    for answer in (default, floats):
        assert answer.model == BGE and answer.object == "list"
        assert [d.index for d in answer.data] == [0, 1]
        assert [d.embedding for d in answer.data] == want
        assert answer.usage.prompt_tokens == answer.usage.total_tokens > 0
    one = client.embeddings.create(model=BASE, input=TEXTS[0], encoding_format="float")
    assert [d.embedding for d in one.data] == expected(TEXTS[:1], 768)


def test_the_wire_of_base64_is_little_endian_float32(runtime: Runtime) -> None:
    body = {"model": BGE, "input": "x", "encoding_format": "base64"}
    answer = httpx.post(runtime.url + "/v1/embeddings", json=body, timeout=30).json()
    raw = base64.b64decode(answer["data"][0]["embedding"])
    assert len(raw) == 4 * 1024
    assert list(struct.unpack("<1024f", raw)) == expected(["x"], 1024)[0]


def test_a_narrower_width_of_a_matryoshka_model(client: openai.OpenAI) -> None:
    answer = client.embeddings.create(
        model=GEMMA, input="short", dimensions=256, encoding_format="float"
    )
    vector = answer.data[0].embedding
    head = expected(["short"], 768)[0][:256]
    norm = math.sqrt(sum(x * x for x in head))
    assert len(vector) == 256 and vector == pytest.approx([x / norm for x in head], rel=1e-12)
    with pytest.raises(openai.BadRequestError) as caught:
        client.embeddings.create(model=BGE, input="short", dimensions=256)
    assert caught.value.code == "unsupported_parameter" and caught.value.param == "dimensions"


def test_langchain_openai_embeddings(runtime: Runtime) -> None:
    # check_embedding_ctx_length=False: its default sends OpenAI's tiktoken ids (a 400 here).
    embeddings = OpenAIEmbeddings(
        base_url=runtime.url + "/v1",
        api_key=SecretStr("unused"),
        model=BGE,
        check_embedding_ctx_length=False,
        max_retries=0,
    )
    assert embeddings.embed_documents(TEXTS) == expected(TEXTS, 1024)
    assert embeddings.embed_query(TEXTS[1]) == expected(TEXTS[1:], 1024)[0]


def test_models_lists_embedding_models_and_each_door_refuses_the_other_kind(
    runtime: Runtime,
) -> None:
    with runtime.client() as http:
        listed = {m["id"]: m for m in http.get("/v1/models").json()["data"]}
        assert listed[BGE]["capabilities"] == {
            "task": "embeddings",
            "dimensions": 1024,
            "dimensions_allowed": [1024],
            "max_input_tokens": 8192,
        }
        assert listed[GEMMA]["capabilities"]["dimensions_allowed"] == [768, 512, 256, 128]
        assert "task" not in listed[CHAT]["capabilities"]
        assert http.get("/v1/models/" + GEMMA).json()["id"] == GEMMA
        page = http.get("/api/v1/models").json()["models"]
        assert BGE not in page and CHAT in page
        chat_here = http.post("/v1/embeddings", json={"model": CHAT, "input": "a"})
        here_on_chat = http.post(
            "/v1/chat/completions",
            json={"model": BGE, "messages": [{"role": "user", "content": "a"}]},
        )
        tokens = http.post("/v1/embeddings", json={"model": BGE, "input": [[1, 2]]})
    for response, param in ((chat_here, "model"), (here_on_chat, "model"), (tokens, "input[0]")):
        error = response.json()["error"]
        assert response.status_code == 400 and error["param"] == param, error
    assert chat_here.json()["error"]["code"] == here_on_chat.json()["error"]["code"]
    assert chat_here.json()["error"]["code"] == "wrong_model_type"


def test_a_failing_model_is_an_openai_shaped_error(client: openai.OpenAI) -> None:
    with pytest.raises(openai.RateLimitError):
        client.embeddings.create(model=BGE, input="[[error:3040]] busy")
    with pytest.raises(openai.InternalServerError):
        client.embeddings.create(model=BGE, input="[[fault:throw]] broken")
