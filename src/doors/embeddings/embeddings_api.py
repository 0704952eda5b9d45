"""POST /v1/embeddings: OpenAI's embeddings request over Workers AI embedding models.

The model is one of EMBEDDING_MODELS; it is opened as every door opens a model
(service.open_answer: keys, rate limits, the kill switch and fallbacks to other embedding
models apply the same way) with Workers AI's input, {"text": [...]}, and answers whole. A
request takes up to 2,048 texts, as OpenAI's does; the model takes 100 a call, so they are sent
in batches (embedding_batches.py) and the answers joined in order.
An input of token ids (one list of ints, or a list of them: what LangChain's OpenAIEmbeddings
sends by default) is OpenAI's cl100k_base tokens, decoded back to text (token_ids.py) and then
embedded exactly as that text.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from base import catalog
from base.errors import ApiError, invalid, json_shown, shown
from base.settings import Settings
from common.openai_params import unsupported
from common.openai_request import openai_error
from doors.embeddings import embedding_batches, embedding_load, token_ids
from doors.embeddings.embedding_vectors import ENCODINGS, FLOAT, answer_pieces, usage
from surface.routing import Api, Context, Route, parse_body
from surface.web import WebResponse, pieces_response
from workers_ai import affinity, budget

# Texts in one request, and tokens in all of them: OpenAI's limits (2,048 inputs, 300,000 tokens
# summed; LangChain's OpenAIEmbeddings sends up to 1,000 texts and 300,000 tokens by default).
# The model takes 100 a call: embedding_batches.py splits them.
MAX_INPUTS = 2048
MAX_REQUEST_TOKENS = 300_000
MAX_INPUT_CHARS = 65_536  # characters in one text (8,192 tokens, bge-m3's longest, at 8 a token)
FIELDS = ("model", "input", "encoding_format", "dimensions", "user")
# Ids in one token array: OpenAI's limit for one input (LangChain cuts at 8,191).
MAX_INPUT_TOKENS = 8192
TableLoader = Callable[[], token_ids.TokenTable]


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddingRequest:
    model: str
    texts: tuple[str, ...]
    encoding: str = FLOAT
    width: int | None = None  # the asked `dimensions`, when narrower than the model's own
    user: str | None = None


def parse_model(value: object, settings: Settings) -> str:
    if value is None:
        return settings.embedding_models[0]
    if not isinstance(value, str):
        raise invalid("model", "must be a string")
    if value in settings.embedding_models:
        return value
    allowed = ", ".join(settings.embedding_models)
    if value in settings.models:
        raise ApiError(
            400,
            "wrong_model_type",
            f"model: {shown(value)} is a chat model; /v1/embeddings takes one of {allowed}",
            param="model",
        )
    raise ApiError(
        400,
        "unknown_model",
        f"model: {shown(value)} is not available; choose one of {allowed}",
        param="model",
    )


def _text(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise invalid(field, f"must be a string or a list of token ids, got {shown(value)}")
    if not value:
        raise invalid(field, "must not be empty")
    if len(value) > MAX_INPUT_CHARS:
        raise ApiError(
            400,
            "input_too_long",
            f"{field}: {len(value)} characters, more than {MAX_INPUT_CHARS}; split the text",
            param=field,
        )
    return value


def _decoded(field: str, ids: list[object], table: TableLoader) -> str:
    """The text of one array of cl100k_base ids, checked as a text is."""
    if not ids:
        raise invalid(field, "must not be empty")
    if len(ids) > MAX_INPUT_TOKENS:
        raise ApiError(
            400,
            "input_too_long",
            f"{field}: {len(ids)} token ids, more than {MAX_INPUT_TOKENS}; split the text",
            param=field,
        )
    try:
        loaded = table()
    except token_ids.TableError:
        raise ApiError(
            500, "server_misconfigured", "The token table is not deployed; send text."
        ) from None
    try:
        text = loaded.decode(ids)
    except token_ids.UnknownToken as bad:
        where = f"{field}[{bad.position}]"
        raise invalid(
            where,
            f"{json_shown(bad.value)} is not a cl100k_base token id (0-{loaded.count - 1})",
        ) from None
    return _text(field, text)


def _one(field: str, value: object, table: TableLoader) -> str:
    if isinstance(value, list):
        return _decoded(field, value, table)
    return _text(field, value)


def _tokens(value: object) -> int:
    """What one input counts against MAX_REQUEST_TOKENS: its ids, or a text's estimate (as usage
    estimates it); anything else fails its own check."""
    if isinstance(value, list):
        return len(value)
    if isinstance(value, str):
        return max(1, math.ceil(len(value) / budget.CHARS_PER_TOKEN))
    return 0


def parse_input(value: object, table: TableLoader = token_ids.table) -> tuple[str, ...]:
    """The texts: `input` as a string, a list of strings, a list of token ids (one text) or a
    list of lists of token ids, each list decoded with `table`."""
    if value is None:
        raise invalid("input", "is required: a string, a list of strings or of token ids")
    if not isinstance(value, list):
        return (_text("input", value),)
    if not value:
        raise invalid("input", "must hold at least one string or token id")
    if not isinstance(value[0], str | list):  # one text as token ids: [9906, 11, 1917, 0]
        return (_decoded("input", value, table),)
    if len(value) > MAX_INPUTS:
        raise ApiError(
            400,
            "too_many_inputs",
            f"input: {len(value)} texts, more than {MAX_INPUTS}; send them in several requests",
            param="input",
        )
    tokens = sum(_tokens(v) for v in value)  # before any decoding: counting is cheap
    if tokens > MAX_REQUEST_TOKENS:
        raise _too_many_tokens(f"{tokens} tokens in all")
    # An id decodes to up to 114 characters: what counts is the text the model gets, each text
    # counted once decoded, so the decoding stops at the input that passes the cap.
    texts = []
    counted = 0
    for i, v in enumerate(value):
        text = _one(f"input[{i}]", v, table)
        counted += max(_tokens(v), _tokens(text))
        if counted > MAX_REQUEST_TOKENS:
            raise _too_many_tokens(f"over {counted} tokens once decoded, at input[{i}]")
        texts.append(text)
    return tuple(texts)


def _too_many_tokens(what: str) -> ApiError:
    return ApiError(
        400,
        "max_tokens_per_request",
        f"input: {what}, more than {MAX_REQUEST_TOKENS} (text counts {budget.CHARS_PER_TOKEN}"
        " characters a token; token ids count as the text they decode to, and at least one"
        " each); send fewer inputs",
        param="input",
    )


def parse_dimensions(value: object, model: str) -> int | None:
    """None (the model's width), the model's own width, or a narrower one it was trained for."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise invalid("dimensions", "must be a positive integer")
    facts = catalog.embedder(model)
    if facts is None:
        raise unsupported("dimensions", f"not supported for {model}, whose width is not known here")
    widths = (facts.width, *facts.narrower)
    if value not in widths:
        said = " or ".join(str(w) for w in widths)
        raise unsupported("dimensions", f"{model} makes vectors of {said}, not {value}")
    return None if value == facts.width else value


def parse_embeddings(body: dict[str, Any], settings: Settings) -> EmbeddingRequest:
    for key in body:
        if key not in FIELDS:
            raise unsupported(key, f"not supported by /v1/embeddings; it takes {', '.join(FIELDS)}")
    model = parse_model(body.get("model"), settings)
    encoding = body.get("encoding_format")
    if encoding is not None and encoding not in ENCODINGS:
        raise invalid("encoding_format", f'must be "float" or "base64", got {json_shown(encoding)}')
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise invalid("user", "must be a string")
    return EmbeddingRequest(
        model=model,
        texts=parse_input(body.get("input")),
        encoding=encoding or FLOAT,
        width=parse_dimensions(body.get("dimensions"), model),
        user=user,
    )


async def embeddings(ctx: Context) -> WebResponse:
    request = parse_embeddings(await parse_body(ctx), ctx.settings)
    first = [{"role": "user", "content": request.texts[0]}]
    release = embedding_load.hold(len(request.texts))
    try:
        model, parts = await embedding_batches.embed(
            ctx.model,
            ctx.settings,
            request.model,
            request.texts,
            session=affinity.key([ctx.request.headers.get(affinity.HEADER), request.user], first),
            key_id=ctx.key_id,
            width=request.width,
            encoding=request.encoding,
        )
        pieces = answer_pieces(parts, model=model, encoding=request.encoding)
    except BaseException:
        release()
        raise
    body = embedding_load.released_after(pieces, release)
    return pieces_response(200, body, usage=usage(parts))


EMBEDDINGS_API = Api(
    prefix="/v1/embeddings",
    routes={
        "/v1/embeddings": Route(
            methods={"POST": embeddings}, render_error=openai_error, metered=True
        ),
    },
    render_error=openai_error,
)
