"""/v1/embeddings on the host: the request parser, the encoder's exact bytes (float and
base64), narrower widths, the route over a fake model with the other doors' policies."""

from __future__ import annotations

import base64
import gc
import json
import math
import random
import struct
import weakref
from array import array
from dataclasses import dataclass, field
from typing import Any

import pytest
from fakes import FakeLimiter
from host_app import call, request, whole

from base import catalog
from base.errors import ApiError
from base.settings import SettingsError, load
from doors.embeddings.embedding_vectors import (
    PIECE_BYTES,
    Part,
    answer_pieces,
    narrowed,
    part,
    usage,
    vectors,
)
from doors.embeddings.embeddings_api import (
    MAX_INPUT_CHARS,
    MAX_INPUT_TOKENS,
    MAX_INPUTS,
    parse_embeddings,
    parse_input,
)
from doors.embeddings.token_ids import TableError, TokenTable, table
from streaming.relay import OneShot
from surface.web import Pieces, WebResponse, json_response
from workers_ai import fallback
from workers_ai.service import RunOptions, UpstreamFailure

SETTINGS = load({"AI_MODELS": "m1"}.get)
BGE, GEMMA = "@cf/baai/bge-m3", "@cf/google/embeddinggemma-300m"
JSON = {"content_type": "application/json"}


def refused(body: dict[str, Any]) -> ApiError:
    with pytest.raises(ApiError) as caught:
        parse_embeddings(body, SETTINGS)
    return caught.value


def test_defaults_and_the_allow_list() -> None:
    assert SETTINGS.embedding_models == (BGE, "@cf/baai/bge-base-en-v1.5", GEMMA)
    request = parse_embeddings({"input": "hi"}, SETTINGS)
    assert (request.model, request.texts, request.encoding, request.width) == (
        BGE,
        ("hi",),
        "float",
        None,
    )
    mine = load({"AI_MODELS": "m1", "EMBEDDING_MODELS": " e1 , e2,e1"}.get)
    assert mine.embedding_models == ("e1", "e2")
    with pytest.raises(SettingsError, match=r"EMBEDDING_MODELS=.*'m1' is in AI_MODELS"):
        load({"AI_MODELS": "m1", "EMBEDDING_MODELS": "m1"}.get)


@pytest.mark.parametrize(
    ("body", "status", "code", "param", "says"),
    [
        ({}, 400, "invalid_field", "input", "input: is required"),
        ({"input": []}, 400, "invalid_field", "input", "at least one"),
        ({"input": ""}, 400, "invalid_field", "input", "must not be empty"),
        ({"input": ["a", 3]}, 400, "invalid_field", "input[1]", "must be a string"),
        ({"input": [9906, 100256]}, 400, "invalid_field", "input[1]", "100256 is not a cl100k"),
        ({"input": [[1, 2], [3, -1]]}, 400, "invalid_field", "input[1][1]", "-1 is not a"),
        ({"input": [[1, 100277]]}, 400, "invalid_field", "input[0][1]", "(0-100276)"),
        ({"input": [[1, True]]}, 400, "invalid_field", "input[0][1]", "true is not a"),
        ({"input": [1, 2.5]}, 400, "invalid_field", "input[1]", "2.5 is not a"),
        ({"input": [1, "a"]}, 400, "invalid_field", "input[1]", '"a" is not a'),
        ({"input": ["a", [1, "2"]]}, 400, "invalid_field", "input[1][1]", '"2" is not a'),
        ({"input": [[[1]]]}, 400, "invalid_field", "input[0][0]", "[1] is not a"),
        ({"input": [[]]}, 400, "invalid_field", "input[0]", "must not be empty"),
        ({"input": [True]}, 400, "invalid_field", "input[0]", "true is not a"),
        ({"input": ["a", 3]}, 400, "invalid_field", "input[1]", "a list of token ids, got"),
        ({"input": [1] * 8193}, 400, "input_too_long", "input", "8193 token ids"),
        ({"input": [[1], [1] * 8193]}, 400, "input_too_long", "input[1]", "more than 8192"),
        ({"input": [[1]] * (MAX_INPUTS + 1)}, 400, "too_many_inputs", "input", "2049 texts"),
        ({"input": ["a"] * (MAX_INPUTS + 1)}, 400, "too_many_inputs", "input", "2049 texts"),
        (
            {"input": [[1] * 8000] * 37 + [[1] * 4001]},
            400,
            "max_tokens_per_request",
            "input",
            "300001 tokens in all, more than 300000",
        ),
        (
            {"input": ["x" * 40_000] * 30 + ["x" * 4]},
            400,
            "max_tokens_per_request",
            "input",
            "300001 tokens in all",
        ),
        (  # ids count as the text they decode to (58040 is 128 spaces): issue 47
            {"input": [[58040] * 512] * 512},
            400,
            "max_tokens_per_request",
            "input",
            "over 311296 tokens once decoded, at input[18], more than 300000",
        ),
        ({"input": "x" * (MAX_INPUT_CHARS + 1)}, 400, "input_too_long", "input", "split"),
        ({"input": "a", "model": "m1"}, 400, "wrong_model_type", "model", "is a chat model"),
        ({"input": "a", "model": "@cf/x"}, 400, "unknown_model", "model", "choose one of"),
        ({"input": "a", "encoding_format": "hex"}, 400, "invalid_field", "encoding_format", "hex"),
        ({"input": "a", "dimensions": 512}, 400, "unsupported_parameter", "dimensions", "1024"),
        ({"input": "a", "dimensions": 0}, 400, "invalid_field", "dimensions", "positive"),
        (
            {"input": "a", "model": GEMMA, "dimensions": 300},
            400,
            "unsupported_parameter",
            "dimensions",
            "768 or 512 or 256 or 128",
        ),
        (
            {"input": "a", "extra": 1},
            400,
            "unsupported_parameter",
            "extra",
            "it takes model, input",
        ),
    ],
)
def test_every_refusal_names_its_field(
    body: dict[str, Any], status: int, code: str, param: str, says: str
) -> None:
    error = refused(body)
    assert (error.status, error.code, error.param) == (status, code, param)
    assert says in error.message, error.message


def test_token_ids_are_the_texts_they_encode() -> None:
    """OpenAI's two shapes of token input: one list of ids (one text), a list of lists (one
    text each), and strings beside them; the ids are cl100k_base's ("Hello, world!" is
    9906, 11, 1917, 0: test_token_ids.py checks the table against tiktoken)."""
    hello = [9906, 11, 1917, 0]
    assert parse_embeddings({"input": hello}, SETTINGS).texts == ("Hello, world!",)
    assert parse_input([hello, [9906], "as text"]) == ("Hello, world!", "Hello", "as text")
    assert parse_input([[100257]]) == ("<|endoftext|>",)
    assert parse_input([hello] * MAX_INPUTS) == ("Hello, world!",) * MAX_INPUTS
    assert len(parse_input([[1] * 8000] * 37 + [[1] * 4000])) == 38  # 300,000 ids in all
    assert parse_input([0] * MAX_INPUT_TOKENS) == ("!" * MAX_INPUT_TOKENS,)


def test_a_decoded_text_is_checked_as_a_text_is() -> None:
    """8,192 ids of a long token make more characters than one text may hold."""
    loaded = table()
    long = next(t for t in range(loaded.count) if len(loaded.token(t)) > 8)
    assert len(parse_input([[long] * (MAX_INPUT_CHARS // len(loaded.token(long)))])[0]) > 0
    with pytest.raises(ApiError) as caught:
        parse_input([[1], [long] * MAX_INPUT_TOKENS])
    error = caught.value
    assert (error.status, error.code, error.param) == (400, "input_too_long", "input[1]")
    assert "characters, more than 65536" in error.message, error.message


def test_a_split_character_becomes_the_replacement_character() -> None:
    # "🌍" is the tokens 9468, 234, 235 in cl100k_base: its bytes cut after the first token.
    assert parse_input([[9468, 234, 235], [9468], [234, 235]]) == ("🌍", "\ufffd", "\ufffd\ufffd")


def test_no_table_is_a_500_and_text_needs_none() -> None:
    def missing() -> TokenTable:
        raise TableError("cl100k_base.bin is missing")

    assert parse_input(["text"], missing) == ("text",)
    with pytest.raises(ApiError) as caught:
        parse_input([[1]], missing)
    assert (caught.value.status, caught.value.code) == (500, "server_misconfigured")


def test_dimensions_the_model_has() -> None:
    assert parse_embeddings({"input": "a", "dimensions": 1024}, SETTINGS).width is None
    assert (
        parse_embeddings({"input": "a", "model": GEMMA, "dimensions": 256}, SETTINGS).width == 256
    )


RESULT = {"shape": [2, 2], "data": [[0.5, -0.25], [1, 0.0]], "pooling": "cls"}


def answer(parts: list[Part], *, model: str = "e", encoding: str = "float") -> bytes:
    return b"".join(answer_pieces(parts, model=model, encoding=encoding))


def test_float_body_exact_bytes() -> None:
    assert answer([part(RESULT, ("hi", "there"))]) == (
        b'{"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25]},'
        b' {"object": "embedding", "index": 1, "embedding": [1.0, 0.0]}], "model": "e",'
        b' "usage": {"prompt_tokens": 3, "total_tokens": 3}}'
    )


def test_base64_is_little_endian_float32() -> None:
    parts = [part(RESULT, ("hi", "there"), encoding="base64")]
    body = json.loads(answer(parts, encoding="base64"))
    first = body["data"][0]["embedding"]
    assert first == "AAAAPwAAgL4="  # 0.5 = 00 00 00 3f, -0.25 = 00 00 80 be
    assert base64.b64decode(first) == b"\x00\x00\x00\x3f\x00\x00\x80\xbe"
    assert struct.unpack("<2f", base64.b64decode(body["data"][1]["embedding"])) == (1.0, 0.0)


def test_the_models_own_usage_wins() -> None:
    result = {**RESULT, "usage": {"prompt_tokens": 9}}
    parts = [part(result, ("a", "b"))]
    assert usage(parts) == {"prompt_tokens": 9, "total_tokens": 9}
    assert json.loads(answer(parts))["usage"] == {"prompt_tokens": 9, "total_tokens": 9}


def test_a_narrower_vector_is_a_unit_vector_again() -> None:
    assert narrowed([3.0, 4.0, 12.0], 2) == [0.6, 0.8]
    assert narrowed([3.0, 4.0], 2) == [3.0, 4.0]
    parts = [part({"data": [[3.0, 4.0, 12.0]]}, ("a",), width=2)]
    assert json.loads(answer(parts))["data"][0]["embedding"] == [0.6, 0.8]


@pytest.mark.parametrize(
    "result",
    [
        None,
        {"data": [[0.1]]},
        {"data": [[0.1], [0.1, 0.2]]},
        {"data": [[0.1], ["x"]]},
        {"data": [[0.1], [math.inf]]},
        {"data": [[0.1], [True]]},
        {"data": [[0.1], [10**400]]},
        {"data": [[], []]},
        {"data": [array("d", [0.1]), [0.1, 0.2]]},
    ],
)
def test_an_unusable_result_is_a_502(result: object) -> None:
    with pytest.raises(ApiError) as caught:
        vectors(result, 2)
    assert (caught.value.status, caught.value.code) == (502, "upstream_error")


def test_a_float32_overflow_is_a_502_before_any_piece() -> None:
    with pytest.raises(ApiError, match="float32"):
        part({"data": [[1e300]]}, ("a",), encoding="base64")
    # float32's largest, rounded up past it by the cast, as struct.pack refuses it
    with pytest.raises(ApiError, match="float32"):
        part({"data": [[3.4028236e38]]}, ("a",), encoding="base64")
    assert part({"data": [[1e300]]}, ("a",)).vectors[0].tolist() == [1e300]  # as a JSON number


def test_vectors_of_two_widths_fail_before_any_piece() -> None:
    parts = [part({"data": [[0.5]]}, ("a",)), part({"data": [[0.5, 0.5]]}, ("b",))]
    with pytest.raises(ApiError, match="different widths"):
        answer_pieces(parts, model="e", encoding="float")  # not when the first piece is read


# What the answer was before it was written in pieces: the whole list, json.dumps'd at once,
# numbers packed by struct.pack (src/doors/embeddings before 2026-11-29). The pieces must be
# these bytes exactly.
def reference(
    data: list[list[float]], *, model: str, width: int | None, encoding: str, tokens: int
) -> bytes:
    out: list[dict[str, object]] = []
    for vector in data:
        if width is not None:
            vector = narrowed(vector, width)  # type: ignore[assignment]
        if encoding == "base64":
            packed = struct.pack("<%df" % len(vector), *vector)
            embedding: object = base64.b64encode(packed).decode("ascii")
        else:
            embedding = [float(x) for x in vector]
        out.append({"object": "embedding", "index": len(out), "embedding": embedding})
    value = {
        "object": "list",
        "data": out,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
    try:
        return json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return json.dumps(value).encode()


def numbers(seed: int, count: int, width: int, *, single: bool) -> list[list[float]]:
    """Vectors of doubles, or of doubles that are float32 values (what a model's tensor
    holds), with a few ints, zeros of both signs, tiny and large numbers among them."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        row: list[float] = [rng.uniform(-1, 1) for _ in range(width)]
        row[0], row[-1] = -0.0, 1e-45 if single else 5e-324
        if width > 4:
            row[1], row[2] = 0, 3  # ints, as JSON.parse hands whole numbers
        if single:
            row = [struct.unpack("<f", struct.pack("<f", x))[0] for x in row]
        out.append(row)
    return out


@pytest.mark.parametrize("encoding", ["float", "base64"])
@pytest.mark.parametrize("width", [None, 3, 64])
@pytest.mark.parametrize("single", [True, False])
def test_the_pieces_are_the_whole_answers_bytes(
    encoding: str, width: int | None, single: bool
) -> None:
    data = numbers(7, 250, 1024 if width != 3 else 8, single=single)
    calls = [data[i : i + 100] for i in range(0, len(data), 100)]
    texts = [tuple(f"t{i}" for i in range(len(c))) for c in calls]
    parts = [
        part({"data": c}, t, width=width, encoding=encoding)
        for c, t in zip(calls, texts, strict=True)
    ]
    tokens = usage(parts)["prompt_tokens"]
    pieces = list(answer_pieces(parts, model="@cf/baai/bge-m3", encoding=encoding))
    expected = reference(
        data, model="@cf/baai/bge-m3", width=width, encoding=encoding, tokens=tokens
    )
    got = b"".join(pieces)
    assert got == expected, next(
        f"first difference at byte {i}: {got[i - 40 : i + 40]!r} != {expected[i - 40 : i + 40]!r}"
        for i in range(min(len(got), len(expected)) + 1)
        if got[i : i + 1] != expected[i : i + 1]
    )
    # each piece a vector or more, none much past PIECE_BYTES
    assert len(pieces) >= len(expected) // (PIECE_BYTES + 25_000)
    assert all(len(p) < PIECE_BYTES + 25_000 for p in pieces), [len(p) for p in pieces]


def test_float32_numbers_are_kept_as_float32_and_others_as_doubles() -> None:
    single = part({"data": numbers(1, 2, 16, single=True)}, ("a", "b"))
    double = part({"data": numbers(1, 2, 16, single=False)}, ("a", "b"))
    b64 = part({"data": numbers(1, 2, 16, single=False)}, ("a", "b"), encoding="base64")
    assert [v.typecode for v in single.vectors] == ["f", "f"]
    assert [v.typecode for v in double.vectors] == ["d", "d"]
    assert [v.typecode for v in b64.vectors] == ["f", "f"]
    assert single.vectors[0].tolist() == numbers(1, 2, 16, single=True)[0]


@pytest.mark.parametrize("model", ["e-\u00e9\u4e16", "e-\udc80"])
def test_the_model_name_is_written_as_json_response_writes_it(model: str) -> None:
    parts = [part(RESULT, ("hi", "there"))]
    value = json.loads(answer(parts))
    value["model"] = model
    body = json_response(200, value).body
    assert answer(parts, model=model) == body


def test_each_part_is_let_go_once_it_is_written() -> None:
    parts = [part({"data": [[0.5] * 2048] * 40}, tuple("a" * 40)) for _ in range(3)]
    first = weakref.ref(parts[0].vectors[0])
    pieces = answer_pieces(parts, model="e", encoding="float")
    del parts
    assert first() is not None
    sent = 0
    while sent < 40 * 10_240 + PIECE_BYTES:  # 40 vectors of 10 KB, and a piece of the next part
        sent += len(next(pieces))
    gc.collect()
    assert first() is None, "the first call's vectors are still held"
    assert b"".join(pieces).endswith(b'"total_tokens": 120}}')


@dataclass
class OneShotModel:
    """A ChatModel whose every call answers whole, as an embedding model does."""

    result: object
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    fails: dict[str, Exception] = field(default_factory=dict)

    async def stream(
        self,
        model: str,
        inputs: dict[str, Any],
        *,
        timeout: float = 60.0,
        options: RunOptions | None = None,
    ) -> OneShot:
        self.calls.append((model, inputs))
        if model in self.fails:
            raise self.fails[model]
        return OneShot(result=self.result)

    async def drain(self, source: object, relay: object) -> None:
        raise AssertionError("an embedding is never drained")


def post(
    body: dict[str, Any], env: dict[str, str], model: OneShotModel, **headers: str
) -> WebResponse:
    raw = json.dumps(body).encode()
    req = request("POST", "/v1/embeddings", raw, **JSON, **headers)
    return call(req, env, model, FakeLimiter())  # type: ignore[arg-type]


def test_the_route_opens_the_model_as_every_door_does() -> None:
    model = OneShotModel(RESULT)
    response = post({"input": ["hi", "there"], "model": GEMMA}, {"AI_MODELS": "m1"}, model)
    assert response.status == 200 and isinstance(response.body, Pieces)
    assert json.loads(whole(response))["model"] == GEMMA
    assert model.calls == [(GEMMA, {"text": ["hi", "there"]})]
    assert response.usage == {"prompt_tokens": 3, "total_tokens": 3}


def test_kill_switch_keys_and_a_busy_model_fall_back_to_embedding_models_only() -> None:
    model = OneShotModel(RESULT)
    off = post({"input": "a"}, {"AI_CHAT_DISABLED": "1"}, model)
    assert off.status == 503 and model.calls == []
    keyed = post({"input": "a"}, {"API_KEYS": "sk-alpha"}, model)
    assert keyed.status == 401 and model.calls == []
    busy = UpstreamFailure("3040: Capacity temporarily exceeded, please try again.")
    env = {"AI_MODELS": "m1", "AI_FALLBACK_MODELS": "@cf/meta/x," + GEMMA}
    model = OneShotModel({"data": [[1.0, 0.0]]}, fails={BGE: busy})
    response = post({"input": "a"}, env, model)
    assert response.status == 200 and json.loads(whole(response))["model"] == GEMMA
    assert [m for m, _ in model.calls] == [BGE, GEMMA]


def test_an_embedding_model_on_the_chat_doors_is_a_400() -> None:
    for path, body in [
        ("/v1/chat/completions", {"model": BGE, "messages": [{"role": "user", "content": "a"}]}),
        ("/api/v1/chat", {"model": BGE, "messages": [{"role": "user", "content": "a"}]}),
        ("/v1/completions", {"model": BGE, "prompt": "a"}),
    ]:
        response = call(
            request("POST", path, json.dumps(body).encode(), **JSON), {"AI_MODELS": "m1"}
        )
        assert response.status == 400 and isinstance(response.body, bytes), path
        assert b"wrong_model_type" in response.body and b"/v1/embeddings" in response.body, path


def test_embedding_fallbacks_with_the_live_catalog_loaded() -> None:
    """The live catalog lists the chat models alone: an embedding fallback is still taken."""
    sent = {"text": ["a"]}
    catalog.loaded([{"name": "m1", "properties": []}], now=0.0, every=3600.0)
    try:
        assert catalog.info(GEMMA).listed is False
        assert fallback.inputs_for(GEMMA, sent, BGE) == sent
        assert fallback.inputs_for("m1", sent, BGE) is None
        assert fallback.inputs_for(BGE, {"messages": []}, "m1") is None
    finally:
        catalog.reset()
