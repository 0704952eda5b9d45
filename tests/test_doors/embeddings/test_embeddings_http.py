"""/v1/embeddings over HTTP on workerd, through its own Ai class and the built-in model: the
openai SDK (its default base64, and floats), LangChain's OpenAIEmbeddings (by default, token ids),
token ids from the openai SDK, narrower widths, /v1/models, and the 400s between chat and
embedding models (issue 34)."""

from __future__ import annotations

import base64
import math
import struct

import httpx
import openai
import pytest
import tiktoken
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


def test_langchain_openai_embeddings_by_default_sends_token_ids(
    runtime: Runtime, cl100k: tiktoken.Encoding
) -> None:
    """LangChain's default (check_embedding_ctx_length=True): tiktoken's cl100k_base ids, which
    the Worker decodes back to the very texts, so the vectors are the texts' own."""
    embeddings = OpenAIEmbeddings(
        base_url=runtime.url + "/v1", api_key=SecretStr("unused"), model=BGE, max_retries=0
    )
    assert embeddings.embed_documents(TEXTS) == expected(TEXTS, 1024)
    assert runtime.last_call()["inputs"] == {"text": TEXTS}
    assert embeddings.embed_query(TEXTS[1]) == expected(TEXTS[1:], 1024)[0]
    assert runtime.last_call()["inputs"] == {"text": TEXTS[1:]}
    as_text = OpenAIEmbeddings(
        base_url=runtime.url + "/v1",
        api_key=SecretStr("unused"),
        model=BGE,
        check_embedding_ctx_length=False,  # the other way: texts, no tiktoken
        max_retries=0,
    )
    assert as_text.embed_documents(TEXTS) == expected(TEXTS, 1024)


def test_langchain_averages_the_chunks_of_a_text_longer_than_8191_tokens(
    runtime: Runtime, cl100k: tiktoken.Encoding
) -> None:
    long = "The quick brown fox jumps over the lazy dog. " * 1000  # 10,001 tokens
    ids = cl100k.encode_ordinary(long)
    chunks = [cl100k.decode(ids[j : j + 8191]) for j in range(0, len(ids), 8191)]
    assert len(chunks) == 2 and "".join(chunks) == long
    embeddings = OpenAIEmbeddings(
        base_url=runtime.url + "/v1", api_key=SecretStr("unused"), model=BGE, max_retries=0
    )
    [vector] = embeddings.embed_documents([long])
    assert runtime.last_call()["inputs"] == {"text": chunks}
    # LangChain's own mean, weighted by each chunk's tokens, then scaled to length 1
    weights = [len(ids[j : j + 8191]) for j in range(0, len(ids), 8191)]
    parts = expected(chunks, 1024)
    mean = [
        sum(x * w for x, w in zip(xs, weights, strict=True)) / sum(weights)
        for xs in zip(*parts, strict=True)
    ]
    norm = math.sqrt(sum(x * x for x in mean))
    assert vector == pytest.approx([x / norm for x in mean], rel=1e-12)


def test_the_openai_sdk_with_token_ids(
    client: openai.OpenAI, runtime: Runtime, cl100k: tiktoken.Encoding
) -> None:
    ids = [cl100k.encode_ordinary(t) for t in TEXTS]
    many = client.embeddings.create(model=BGE, input=ids, encoding_format="float")
    assert runtime.last_call()["inputs"] == {"text": TEXTS}
    assert [d.embedding for d in many.data] == expected(TEXTS, 1024)
    one = client.embeddings.create(model=BGE, input=ids[1])  # one text: a flat list, base64
    assert runtime.last_call()["inputs"] == {"text": TEXTS[1:]}
    assert [d.embedding for d in one.data] == expected(TEXTS[1:], 1024)
    with pytest.raises(openai.BadRequestError) as caught:
        client.embeddings.create(model=BGE, input=[ids[0], [*ids[1][:2], 100256]])
    error = caught.value
    assert (error.code, error.param) == ("invalid_field", "input[1][2]"), error.body
    assert "100256 is not a cl100k_base token id (0-100276)" in str(error.body), error.body


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
        tokens = http.post("/v1/embeddings", json={"model": BGE, "input": [[1, -2]]})
    for response, param in ((chat_here, "model"), (here_on_chat, "model"), (tokens, "input[0][1]")):
        error = response.json()["error"]
        assert response.status_code == 400 and error["param"] == param, error
    assert chat_here.json()["error"]["code"] == here_on_chat.json()["error"]["code"]
    assert chat_here.json()["error"]["code"] == "wrong_model_type"


def test_a_failing_model_is_an_openai_shaped_error(client: openai.OpenAI) -> None:
    with pytest.raises(openai.RateLimitError):
        client.embeddings.create(model=BGE, input="[[error:3040]] busy")
    with pytest.raises(openai.InternalServerError):
        client.embeddings.create(model=BGE, input="[[fault:throw]] broken")
