"""POST /v1/embeddings: OpenAI's embeddings request over Workers AI embedding models.

The model is one of EMBEDDING_MODELS; it is opened as every door opens a model
(service.open_answer: keys, rate limits, the kill switch and fallbacks to other embedding
models apply the same way) with Workers AI's input, {"text": [...]}, and answers whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from doors.embeddings.embedding_vectors import ENCODINGS, FLOAT, embedding_list
from doors.openai_chat.openai_compat import openai_error
from doors.openai_chat.openai_params import unsupported
from streaming.relay import OneShot
from surface.errors import ApiError, invalid, json_shown, shown
from surface.routing import Api, Context, Route, parse_body
from surface.settings import Settings
from surface.web import WebResponse, json_response
from workers_ai import affinity, catalog
from workers_ai.service import open_answer

# Texts in one request: the models' own input schema (maxItems 100, each text minLength 1;
# developers.cloudflare.com/workers-ai/models/embeddinggemma-300m, read 2026-11).
MAX_INPUTS = 100
MAX_INPUT_CHARS = 65_536  # characters in one text (8,192 tokens, bge-m3's longest, at 8 a token)
FIELDS = ("model", "input", "encoding_format", "dimensions", "user")
# LangChain's OpenAIEmbeddings sends tiktoken ids unless told otherwise; they are OpenAI's
# tokens, which no Workers AI model reads.
TOKEN_ARRAYS = (
    "token arrays are not supported: send text (LangChain: "
    "OpenAIEmbeddings(check_embedding_ctx_length=False))"
)


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
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        raise invalid(field, TOKEN_ARRAYS)
    if not isinstance(value, str):
        raise invalid(field, f"must be a string, got {shown(value)}")
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


def parse_input(value: object) -> tuple[str, ...]:
    if value is None:
        raise invalid("input", "is required: a string or a list of strings")
    if not isinstance(value, list):
        return (_text("input", value),)
    if not value:
        raise invalid("input", "must hold at least one string")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise invalid("input", TOKEN_ARRAYS)
    if len(value) > MAX_INPUTS:
        raise ApiError(
            400,
            "too_many_inputs",
            f"input: {len(value)} texts, more than {MAX_INPUTS}; send them in several requests",
            param="input",
        )
    return tuple(_text(f"input[{i}]", v) for i, v in enumerate(value))


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
    opened = await open_answer(
        ctx.model,
        ctx.settings,
        request.model,
        {"text": list(request.texts)},
        session=affinity.key([ctx.request.headers.get(affinity.HEADER), request.user], first),
        key_id=ctx.key_id,
    )
    source = opened.source
    if not isinstance(source, OneShot):  # an embedding model answers whole; never seen
        source.cancel()
        raise ApiError(502, "upstream_error", "The embedding model streamed; it should not.")
    body = embedding_list(
        source.result,
        texts=request.texts,
        model=opened.model,
        width=request.width,
        encoding=request.encoding,
    )
    return json_response(200, body, usage=body["usage"])


EMBEDDINGS_API = Api(
    prefix="/v1/embeddings",
    routes={
        "/v1/embeddings": Route(
            methods={"POST": embeddings}, render_error=openai_error, metered=True
        ),
    },
    render_error=openai_error,
)
