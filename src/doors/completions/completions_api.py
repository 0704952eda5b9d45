"""POST /v1/completions: OpenAI's legacy Completions over the chat relay.

The prompt goes to the model as Workers AI's own `prompt` input (the model's chat template
around it; fallback.py makes it one user message for a model that takes OpenAI's schema),
opened by service.open_answer and relayed by the relay every door uses: cancellation, pings,
the idle limit, stop strings, the kill switch, keys, rate limits and fallbacks apply as they
do to /v1/chat/completions. The sampling parameters are the chat door's (openai_params); what
only Completions has is read here: one prompt, `echo: false`, no `suffix`, `best_of: 1`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from checks.chat_request import parse_max_tokens, parse_model
from doors.completions.completion_events import TextCompletionEncoder, text_completion
from doors.openai_chat import openai_params
from doors.openai_chat.openai_compat import openai_error, stream_options
from doors.openai_chat.openai_events import Collector
from streaming.stop import parse_stop
from surface.errors import invalid, json_shown
from surface.routing import Api, Context, Route, parse_body
from surface.web import SSE_HEADERS, Relayed, WebResponse, json_response
from workers_ai import affinity
from workers_ai.service import answer_whole, new_relay, open_answer

# The chat door's parameters that mean the same here (checked by openai_params.read).
SHARED = (
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "repetition_penalty",
    "min_p",
    "n",
    "user",
)
OWN = ("model", "prompt", "stream", "stream_options", "max_tokens", "stop")
# Completions' own parameters, accepted only with the value that asks for nothing different.
NEUTRAL: dict[str, tuple[tuple[object, ...], str]] = {
    "echo": ((False,), "echo: only false (the prompt is not repeated in the answer)"),
    "best_of": ((1,), "best_of: only 1"),
    "suffix": (("",), "suffix: no model here does fill-in-the-middle"),
    "logprobs": ((), "logprobs: only null (no log probabilities)"),
    "logit_bias": (({},), "logit_bias: only {}"),
}
FIELDS = (*OWN, *SHARED, *NEUTRAL)


@dataclass(frozen=True, slots=True, kw_only=True)
class TextCompletionRequest:
    model: str
    prompt: str
    max_tokens: int
    options: tuple[tuple[str, Any], ...]
    stream: bool
    include_usage: bool
    stop: tuple[str, ...] = ()  # cut by the relay, never sent to the model
    user: str | None = None

    def ai_inputs(self) -> dict[str, Any]:
        inputs: dict[str, Any] = {
            "prompt": self.prompt,
            "stream": True,  # a whole answer is the stream drained: silence times out, not length
            "max_tokens": self.max_tokens,
        }
        inputs.update(self.options)
        return inputs


def _token_array(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    )


def parse_prompt(value: object) -> str:
    field = "prompt"
    if value is None:
        raise invalid(field, "is required: a string")
    if _token_array(value):
        raise invalid(field, "token arrays are not supported: send text")
    if isinstance(value, list):
        if len(value) != 1:
            raise invalid(
                field,
                f"this service takes one prompt per request, got {len(value)}; "
                "send them one by one",
            )
        value, field = value[0], "prompt[0]"
        if _token_array(value):
            raise invalid(field, "token arrays are not supported: send text")
    if not isinstance(value, str):
        raise invalid(field, "must be a string")
    if not value:
        raise invalid(field, "must not be empty")
    return value


def _neutral(key: str, value: object) -> None:
    allowed, said = NEUTRAL[key]
    if value is None or any(value == v and type(value) is type(v) for v in allowed):
        return
    raise openai_params.unsupported(key, f"this service accepts {said}, got {json_shown(value)}")


def parse_text_completion(body: dict[str, Any], ctx: Context) -> TextCompletionRequest:
    model = parse_model(body.get("model"), ctx.settings)
    options: dict[str, Any] = {}
    for key, value in body.items():
        if key in NEUTRAL:
            _neutral(key, value)
        elif key in SHARED:
            sent = openai_params.read(key, value, model)
            if sent is not None:
                options[key] = sent
        elif key not in OWN:
            raise openai_params.unsupported(
                key, f"not supported by /v1/completions; it takes {', '.join(FIELDS)}"
            )
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise invalid("stream", "must be a boolean")
    user = body.get("user")
    return TextCompletionRequest(
        model=model,
        prompt=parse_prompt(body.get("prompt")),
        max_tokens=parse_max_tokens("max_tokens", body.get("max_tokens"), ctx.settings),
        options=tuple(options.items()),
        stream=stream is True,
        include_usage=stream_options(body, stream is True),
        stop=parse_stop("stop", body.get("stop")),
        user=user if isinstance(user, str) else None,
    )


async def completions(ctx: Context) -> WebResponse:
    request = parse_text_completion(await parse_body(ctx), ctx)
    prompt = [{"role": "user", "content": request.prompt}]
    opened = await open_answer(
        ctx.model,
        ctx.settings,
        request.model,
        request.ai_inputs(),
        session=affinity.key([ctx.request.headers.get(affinity.HEADER), request.user], prompt),
        key_id=ctx.key_id,
    )
    source, model = opened.source, opened.model  # model: the one that answers (a fallback, maybe)
    id, created = "cmpl-" + os.urandom(12).hex(), int(time.time())
    if request.stream:
        encoder = TextCompletionEncoder(
            id=id, created=created, model=model, include_usage=request.include_usage
        )
        relay = new_relay(ctx.settings, encoder, request.max_tokens, model, request.stop)
        return WebResponse(
            status=200, headers=SSE_HEADERS, body=Relayed(source=source, relay=relay)
        )
    collector = Collector(id=id)
    relay = new_relay(ctx.settings, collector, request.max_tokens, model, request.stop)
    finished = await answer_whole(ctx.model, source, relay)
    body = text_completion(
        id=id, created=created, model=model, collector=collector, finished=finished
    )
    return json_response(200, body, usage=finished.usage)


COMPLETIONS_API = Api(
    prefix="/v1/completions",
    routes={
        "/v1/completions": Route(
            methods={"POST": completions}, render_error=openai_error, metered=True
        ),
    },
    render_error=openai_error,
)
