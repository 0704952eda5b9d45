"""POST /v1/completions: OpenAI's legacy Completions over the chat relay.

The prompt goes to the model as Workers AI's own `prompt` input (the model's chat template
around it; fallback.py makes it one user message for a model that takes OpenAI's schema),
opened by service.open_answer and relayed by the relay every door uses: cancellation, pings,
the idle limit, stop strings, the kill switch, keys, rate limits and fallbacks apply as they
do to /v1/chat/completions. The sampling parameters are the chat door's (openai_params); what
only Completions has is read here: the prompt (a string, or a list of up to MAX_PROMPTS),
`echo: false`, no `suffix`, `best_of: 1`.

A list of prompts is answered as OpenAI does, one choice per prompt (`index` is the prompt's),
each prompt its own model call, made at the same time (service.answers_whole: when one fails,
the others are stopped and the request fails). Streamed, it is one prompt only: the relay
relays one model stream per response, and OpenAI's interleaved chunks of several would need
several upstreams merged into one body, a second streaming path.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from base.errors import invalid, json_shown
from checks.chat_request import parse_max_tokens, parse_model
from checks.stops import parse_stop
from common import answers, openai_params
from common.openai_events import Collector
from common.openai_request import openai_error, stream_options
from doors.completions.completion_events import TextCompletionEncoder, text_completion
from surface.routing import Api, Context, Route, parse_body
from surface.web import WebResponse, json_response
from workers_ai import affinity, service

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


# Prompts in one request: each is a model call of its own, all made at once.
MAX_PROMPTS = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class TextCompletionRequest:
    model: str
    prompts: tuple[str, ...]
    max_tokens: int
    options: tuple[tuple[str, Any], ...]
    stream: bool
    include_usage: bool
    stop: tuple[str, ...] = ()  # cut by the relay, never sent to the model
    user: str | None = None

    def ai_inputs(self, prompt: str) -> dict[str, Any]:
        inputs: dict[str, Any] = {
            "prompt": prompt,
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


TOKENS = "token arrays are not supported: send text"


def _one_prompt(value: object, field: str) -> str:
    if _token_array(value):
        raise invalid(field, TOKENS)
    if not isinstance(value, str):
        raise invalid(field, "must be a string")
    if not value:
        raise invalid(field, "must not be empty")
    return value


def parse_prompt(value: object) -> tuple[str, ...]:
    """A string, or a list of 1 to MAX_PROMPTS strings. OpenAI's token arrays (a list of
    integers, or a list of them) are refused: no model here takes token ids."""
    field = "prompt"
    if value is None:
        raise invalid(field, "is required: a string or a list of strings")
    if not isinstance(value, list):
        return (_one_prompt(value, field),)
    if _token_array(value):
        raise invalid(field, TOKENS)
    if not value:
        raise invalid(field, "must not be an empty list")
    if len(value) > MAX_PROMPTS:
        raise invalid(
            field,
            f"{len(value)} prompts, more than {MAX_PROMPTS}; send them in several requests",
        )
    return tuple(_one_prompt(v, f"{field}[{i}]") for i, v in enumerate(value))


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
    prompts = parse_prompt(body.get("prompt"))
    if stream is True and len(prompts) > 1:
        raise invalid(
            "prompt",
            f"a streamed completion takes one prompt, got {len(prompts)}; "
            "send them one by one, or without stream",
        )
    return TextCompletionRequest(
        model=model,
        prompts=prompts,
        max_tokens=parse_max_tokens("max_tokens", body.get("max_tokens"), ctx.settings),
        options=tuple(options.items()),
        stream=stream is True,
        include_usage=stream_options(body, stream is True),
        stop=parse_stop("stop", body.get("stop")),
        user=user if isinstance(user, str) else None,
    )


async def completions(ctx: Context) -> WebResponse:
    request = parse_text_completion(await parse_body(ctx), ctx)
    header = ctx.request.headers.get(affinity.HEADER)
    asked = service.Asked(
        model=request.model,
        calls=tuple(
            service.Call(
                inputs=request.ai_inputs(prompt),
                session=affinity.key([header, request.user], [{"role": "user", "content": prompt}]),
            )
            for prompt in request.prompts
        ),
        key_id=ctx.key_id,
        max_tokens=request.max_tokens,
        stops=request.stop,
    )
    id, created = "cmpl-" + os.urandom(12).hex(), int(time.time())
    if request.stream:
        usage = request.include_usage
        return await answers.streamed(
            ctx,
            asked,
            lambda model: TextCompletionEncoder(
                id=id, created=created, model=model, include_usage=usage
            ),
        )
    collectors = [Collector(id=id) for _ in asked.calls]
    answered = await answers.whole(ctx, asked, [service.named_by_answer(c) for c in collectors])
    summed = service.summed_usage(answered)
    body = text_completion(
        id=id,
        created=created,
        model=answered[0].model,  # the model of the first prompt's answer (a fallback, maybe)
        choices=[(c, a.finished) for c, a in zip(collectors, answered, strict=True)],
        usage=summed,
    )
    return json_response(200, body, usage=summed)


COMPLETIONS_API = Api(
    prefix="/v1/completions",
    routes={
        "/v1/completions": Route(
            methods={"POST": completions}, render_error=openai_error, metered=True
        ),
    },
    render_error=openai_error,
)
