"""/v1/embeddings over HTTP on workerd, through its own Ai class and the built-in model: the
openai SDK (its default base64, and floats), LangChain's OpenAIEmbeddings (by default, token ids),
token ids from the openai SDK, narrower widths, /v1/models, and the 400s between chat and
embedding models (issue 34); the body written in pieces, byte for byte the whole answer, and
released when the client leaves (issue 46)."""

from __future__ import annotations

import base64
import json
import math
import struct
import threading
import time

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


def float_sum(values: list[float]) -> float:
    """sum() of floats as the Worker's Python (3.12 and later) adds them: Neumaier's
    compensated sum, where the host's 3.11 adds them plainly."""
    total = compensation = 0.0
    for x in values:
        t = total + x
        if abs(total) >= abs(x):
            compensation += (total - t) + x
        else:
            compensation += (x - t) + total
        total = t
    return total + compensation if compensation and math.isfinite(compensation) else total


def whole_answer(
    texts: list[str], width: int, dimensions: int | None, encoding: str, model: str
) -> bytes:
    """The answer as it was before it was written in pieces: the whole list json.dumps'd at
    once, numbers packed by struct.pack, tokens estimated per text (the model gives none)."""
    data: list[dict[str, object]] = []
    for vector in expected(texts, width):
        if dimensions is not None:
            head = vector[:dimensions]
            norm = math.sqrt(float_sum([x * x for x in head]))
            vector = [x / norm for x in head]
        embedding: object = vector
        if encoding == "base64":
            packed = struct.pack("<%df" % len(vector), *vector)
            embedding = base64.b64encode(packed).decode("ascii")
        data.append({"object": "embedding", "index": len(data), "embedding": embedding})
    tokens = sum(max(1, math.ceil(len(t) / 4)) for t in texts)
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    value = {"object": "list", "data": data, "model": model, "usage": usage}
    return json.dumps(value, ensure_ascii=False).encode()


@pytest.mark.parametrize(
    ("model", "width", "dimensions", "encoding"),
    [(BGE, 1024, None, "float"), (BGE, 1024, None, "base64"), (GEMMA, 768, 256, "float")],
)
def test_the_body_written_in_pieces_is_the_whole_answers_bytes(
    runtime: Runtime, model: str, width: int, dimensions: int | None, encoding: str
) -> None:
    """250 texts: three calls, vectors kept as float32 (the built-in model's are) or as doubles
    (a narrowed vector's are not float32), the body written in many pieces."""
    texts = [f"text {i} " + "wörd " * (i % 7) for i in range(250)]
    body: dict[str, object] = {"model": model, "input": texts, "encoding_format": encoding}
    if dimensions is not None:
        body["dimensions"] = dimensions
    answer = httpx.post(runtime.url + "/v1/embeddings", json=body, timeout=120)
    assert answer.status_code == 200, answer.text[:500]
    assert answer.headers["content-type"] == "application/json; charset=utf-8"
    got, want = answer.content, whole_answer(texts, width, dimensions, encoding, model)
    assert got == want, next(
        f"first difference at byte {i} of {len(want)}: {got[i - 40 : i + 40]!r}"
        f" != {want[i - 40 : i + 40]!r}"
        for i in range(min(len(got), len(want)) + 1)
        if got[i : i + 1] != want[i : i + 1]
    )


def test_a_client_that_leaves_mid_body_releases_the_pieces(runtime: Runtime) -> None:
    before = runtime.stats()
    texts = [f"text {i}" for i in range(400)]  # ~8 MB of JSON numbers
    with (
        httpx.Client(base_url=runtime.url, timeout=60) as http,
        http.stream("POST", "/v1/embeddings", json={"model": BGE, "input": texts}) as answer,
    ):
        assert answer.status_code == 200
        for _ in answer.iter_raw(65_536):
            break  # and the connection closes
    whole = httpx.post(runtime.url + "/v1/embeddings", json={"model": BGE, "input": texts[:3]})
    assert whole.status_code == 200 and len(whole.json()["data"]) == 3
    deadline = time.monotonic() + 30
    while (after := runtime.stats())["live"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert after["live"] == 0, after
    assert after["created"] - before["created"] == after["destroyed"] - before["destroyed"] > 0


def test_a_vector_with_something_but_numbers_is_a_502(runtime: Runtime) -> None:
    """The shell packs only vectors of finite numbers; any other comes to the core, which
    refuses it as it refuses it on the host."""
    texts = [f"text {i}" for i in range(150)]
    texts[120] = "[[fault:malformed]] one"
    answer = httpx.post(runtime.url + "/v1/embeddings", json={"model": BGE, "input": texts})
    assert answer.status_code == 502, answer.text[:300]
    error = answer.json()["error"]
    assert error["code"] == "upstream_error", error
    assert "something other than finite numbers" in error["message"], error


def test_past_4096_texts_under_way_a_request_is_told_to_retry(runtime: Runtime) -> None:
    """Two requests of 2,048 texts under way (each call of the built-in model takes 1 s):
    a third request, of one text, is a 503 with Retry-After; once they are done it answers."""
    answers: dict[str, httpx.Response] = {}

    def post(name: str) -> None:
        texts = [f"{name}{i} [[pace:1000]]" for i in range(2048)]
        body = {"model": BASE, "input": texts, "encoding_format": "base64"}
        answers[name] = httpx.post(runtime.url + "/v1/embeddings", json=body, timeout=300)

    first = max((c["id"] for c in runtime.calls()), default=0)
    threads = [threading.Thread(target=post, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        open_calls = [c for c in runtime.calls() if c["id"] > first and c["closedAt"] is None]
        if {str(c["inputs"]["text"][0])[0] for c in open_calls} == {"a", "b"}:
            break
        time.sleep(0.05)
    busy = httpx.post(runtime.url + "/v1/embeddings", json={"model": BASE, "input": "c"})
    for thread in threads:
        thread.join(timeout=300)
    assert busy.status_code == 503, busy.text[:300]
    assert busy.headers["retry-after"] == "1"
    error = busy.json()["error"]
    assert (error["code"], error["param"]) == ("embeddings_busy", "input"), error
    statuses = [answers[n].status_code for n in ("a", "b")]
    assert statuses == [200, 200], [answers[n].text[:300] for n in ("a", "b")]
    assert len(answers["a"].json()["data"]) == 2048
    again = httpx.post(runtime.url + "/v1/embeddings", json={"model": BASE, "input": "c"})
    assert again.status_code == 200, again.text[:300]
