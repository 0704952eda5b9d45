"""What every OpenAI door shares: the error shape, the completion request each one builds and
checks (chat, legacy completions, Responses, the AI SDK's door), and ``stream_options``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from base.errors import ApiError, clip, invalid
from surface.web import WebResponse, json_response

ERROR_TYPES = {403: "permission_error", 404: "not_found_error", 429: "rate_limit_error"}
# OpenAI's own 404 for a model id is an invalid request, not a missing route.
ERROR_TYPES_BY_CODE = {"model_not_found": "invalid_request_error"}


def openai_error(error: ApiError) -> WebResponse:
    kind = ERROR_TYPES_BY_CODE.get(error.code) or ERROR_TYPES.get(
        error.status, "server_error" if error.status >= 500 else "invalid_request_error"
    )
    body = {
        "error": {"message": error.message, "type": kind, "param": error.param, "code": error.code}
    }
    return json_response(error.status, body, error.headers, code=error.code)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletionRequest:
    """``options``: the passed parameters, as sent; ``json_mode``: asked for JSON output,
    which Workers AI does not stream, so the model is asked for the whole answer."""

    model: str
    messages: tuple[dict[str, Any], ...]
    max_tokens: int
    options: tuple[tuple[str, Any], ...]
    stream: bool
    include_usage: bool
    json_mode: bool = False
    stop: tuple[str, ...] = ()  # cut by the relay, never sent to the model
    # The client's own conversation keys, first wins: prompt_cache_key, user (affinity.py).
    cache_keys: tuple[str | None, ...] = ()

    def ai_inputs(self) -> dict[str, Any]:
        inputs: dict[str, Any] = {
            "messages": [dict(m) for m in self.messages],
            # Streamed from the model even for a client that wants the whole answer: then
            # silence times out, not length (the run() call itself is bounded by the idle limit).
            "stream": not self.json_mode,
            "max_tokens": self.max_tokens,
        }
        inputs.update(self.options)
        return inputs


def stream_options(body: dict[str, Any], stream: bool) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not stream:
        raise invalid("stream_options", "is only allowed when stream is true")
    if not isinstance(options, dict):
        raise invalid("stream_options", "must be an object")
    for key, value in options.items():
        if key not in ("include_usage", "include_obfuscation"):
            raise invalid(
                f"stream_options.{clip(key)}",
                "unknown field; supported: include_usage, include_obfuscation",
            )
        if value is not None and not isinstance(value, bool):
            raise invalid(f"stream_options.{clip(key)}", "must be a boolean")
    return options.get("include_usage") is True
