"""POST /api/v1/ui-chat: the AI SDK's `useChat` default transport in, its UI message stream out.

The body is what DefaultChatTransport sends: ``{id, messages: UIMessage[], trigger,
messageId}`` plus whatever the app put in its ``body`` option; of those this route takes
``model``, ``max_tokens``, ``temperature``, ``reasoning_effort``, ``stop`` (as /api/v1/chat)
and ``tools`` (Chat Completions' function tools: the model may call them, the browser runs
them and sends the result back in the tool part). UIMessages become Chat Completions
messages the way the AI SDK's convertToModelMessages splits them: an assistant message's
text, reasoning and tool calls up to a ``step-start`` after a tool call, then a tool message
per call that has its output. The one conversation checker then checks them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from base import catalog
from base.errors import invalid, shown
from checks.chat_request import (
    parse_max_tokens,
    parse_model,
    parse_reasoning_effort,
    parse_temperature,
    reject_unknown,
)
from checks.messages import OPENAI, parse_conversation
from checks.stops import parse_stop
from common import answers
from common.openai_messages import parse_tools
from common.openai_request import CompletionRequest
from doors.ui_chat.ui_stream import HEADERS, UIMessageEncoder
from surface.guard import PAGE_OR_KEY
from surface.routing import Api, Context, Route, app_error, parse_body
from surface.web import WebResponse
from workers_ai import affinity
from workers_ai.service import Asked

PATH = "/api/v1/ui-chat"
FIELDS = (
    "id",
    "messages",
    "trigger",
    "messageId",
    "model",
    "max_tokens",
    "temperature",
    "reasoning_effort",
    "stop",
    "tools",
)
TRIGGERS = ("submit-message", "regenerate-message")
# Parts that only the page shows: nothing the model needs.
_UI_ONLY = ("source-url", "source-document", "step-start")
# As JSON.stringify writes it, which is what the AI SDK itself sends a model.
_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _tool_part(
    at: str, part: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
    """A tool part as (the assistant's tool call, its tool message or None); None when the
    call has no input yet (still streaming: the model would see half a call)."""
    kind = part["type"]
    name = part.get("toolName") if kind == "dynamic-tool" else kind[len("tool-") :]
    call_id = part.get("toolCallId")
    if not isinstance(call_id, str) or not call_id:
        raise invalid(f"{at}.toolCallId", "must be a non-empty string")
    if not isinstance(name, str) or not name:
        raise invalid(f"{at}.toolName", "must be a non-empty string")
    state = part.get("state")
    if state in ("input-streaming", None):
        return None
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": _json(part.get("input", {}))},
    }
    if state == "output-available":
        output = part.get("output")
        text = output if isinstance(output, str) else _json(output)
        return call, {"role": "tool", "tool_call_id": call_id, "content": text}
    if state == "output-error":
        return call, {
            "role": "tool",
            "tool_call_id": call_id,
            "content": str(part.get("errorText", "error")),
        }
    if state == "output-denied":
        return call, {
            "role": "tool",
            "tool_call_id": call_id,
            "content": "The user denied this tool call.",
        }
    return call, None


def _assistant(at: str, parts: list[Any], out: list[Any]) -> None:
    """One UI assistant message as the messages of its steps."""
    step: dict[str, Any] = {"role": "assistant", "content": "", "reasoning": ""}
    results: list[dict[str, Any]] = []

    def flush() -> None:
        nonlocal step, results
        if step["content"] or step["reasoning"] or step.get("tool_calls"):
            if not step["reasoning"]:
                del step["reasoning"]
            out.append(step)
            out.extend(results)
        step, results = {"role": "assistant", "content": "", "reasoning": ""}, []

    for j, part in enumerate(parts):
        where = f"{at}.parts[{j}]"
        kind = part.get("type")
        if kind == "step-start" and step.get("tool_calls"):
            flush()
        elif kind == "text":
            step["content"] += _text(where, part)
        elif kind == "reasoning":
            step["reasoning"] += _text(where, part)
        elif kind.startswith("tool-") or kind == "dynamic-tool":
            pair = _tool_part(where, part)
            if pair is not None and pair[1] is not None:  # a call without its result is left out
                step.setdefault("tool_calls", []).append(pair[0])
                results.append(pair[1])
        elif kind in _UI_ONLY or kind.startswith("data-") or kind == "file":
            continue
        else:
            raise invalid(f"{where}.type", f"{shown(kind)} parts are not supported")
    flush()


def _text(where: str, part: dict[str, Any]) -> str:
    text = part.get("text")
    if not isinstance(text, str):
        raise invalid(f"{where}.text", "must be a string")
    return text


def _user(at: str, role: str, parts: list[Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        where = f"{at}.parts[{j}]"
        kind = part.get("type")
        if kind == "text":
            content.append({"type": "text", "text": _text(where, part)})
        elif (
            kind == "file"
            and role == "user"
            and str(part.get("mediaType", "")).startswith("image/")
        ):
            content.append({"type": "image_url", "image_url": {"url": part.get("url")}})
        elif kind in _UI_ONLY or kind.startswith("data-"):
            continue
        else:
            allowed = "text and image file" if role == "user" else "text"
            raise invalid(
                f"{where}.type",
                f"{shown(kind)} parts are not supported here; {role} messages take {allowed} parts",
            )
    if any(p["type"] != "text" for p in content):
        return {"role": role, "content": content}
    return {"role": role, "content": "".join(p["text"] for p in content)}


def ui_messages(value: object) -> list[Any]:
    """Chat Completions messages from UIMessages (their shapes checked here, their content by
    the conversation checker)."""
    if not isinstance(value, list) or not value:
        raise invalid("messages", "must be a non-empty array of UI messages {id, role, parts}")
    out: list[Any] = []
    for i, message in enumerate(value):
        at = f"messages[{i}]"
        if not isinstance(message, dict):
            raise invalid(at, "must be a UI message {id, role, parts}")
        role, parts = message.get("role"), message.get("parts")
        if role not in ("system", "user", "assistant"):
            raise invalid(
                f"{at}.role", f"must be 'system', 'user' or 'assistant', got {shown(role)}"
            )
        if not isinstance(parts, list) or not all(
            isinstance(p, dict) and isinstance(p.get("type"), str) for p in parts
        ):
            raise invalid(
                f"{at}.parts", 'must be an array of parts, e.g. {"type": "text", "text": "..."}'
            )
        if role == "assistant":
            _assistant(at, parts, out)
        else:
            out.append(_user(at, role, parts))
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class UiChatRequest:
    completion: CompletionRequest  # what reaches the model: the same as the other doors'
    message_id: str | None  # the assistant message this answer continues (after a tool result)
    chat_id: str | None = None  # useChat's id of the chat: its session-affinity key


def continued(messages: object) -> str | None:
    """The id of a last assistant message: the client appends this answer's parts to it (after
    a tool result), and the AI SDK's own server answers with its id too."""
    last = messages[-1] if isinstance(messages, list) and messages else None
    id = last.get("id") if isinstance(last, dict) and last.get("role") == "assistant" else None
    return id if isinstance(id, str) and id else None


def parse_ui_chat(body: dict[str, Any], ctx: Context) -> UiChatRequest:
    reject_unknown(body, FIELDS)
    if body.get("trigger") not in (None, *TRIGGERS):
        raise invalid(
            "trigger",
            f"must be 'submit-message' or 'regenerate-message', got {shown(body['trigger'])}",
        )
    settings = ctx.settings
    model = parse_model(body.get("model"), settings)
    facts = catalog.info(model)
    conversation = parse_conversation(
        ui_messages(body.get("messages")), settings, dialect=OPENAI, model=model, facts=facts
    )
    options: dict[str, Any] = {}
    temperature = parse_temperature(body.get("temperature"))
    if temperature is not None:
        options["temperature"] = temperature
    effort = parse_reasoning_effort(body.get("reasoning_effort"))
    if effort is not None:
        options["reasoning_effort"] = effort
    tools = parse_tools(body.get("tools"))
    if tools:
        options["tools"] = list(tools)
    completion = CompletionRequest(
        model=model,
        messages=conversation.messages,
        max_tokens=parse_max_tokens("max_tokens", body.get("max_tokens"), settings),
        options=tuple(options.items()),
        stream=True,
        include_usage=False,
        stop=parse_stop("stop", body.get("stop")),
    )
    chat_id = body.get("id")
    return UiChatRequest(
        completion=completion,
        message_id=continued(body.get("messages")),
        chat_id=chat_id if isinstance(chat_id, str) else None,
    )


async def ui_chat(ctx: Context) -> WebResponse:
    parsed = parse_ui_chat(await parse_body(ctx), ctx)
    request = parsed.completion
    asked = Asked.one(
        model=request.model,
        inputs=request.ai_inputs(),
        session=affinity.key(
            [ctx.request.headers.get(affinity.HEADER), parsed.chat_id], request.messages
        ),
        key_id=ctx.key_id,
        max_tokens=request.max_tokens,
        stops=request.stop,
    )
    # Tool-call ids too: a continued message's steps must not reuse one.
    fresh = os.urandom(12).hex()
    message_id = parsed.message_id or "msg_" + fresh
    return await answers.streamed(
        ctx,
        asked,
        lambda model: UIMessageEncoder(message_id=message_id, model=model, call_prefix=fresh),
        headers=HEADERS,
    )


UI_CHAT_API = Api(
    prefix=PATH,
    routes={
        PATH: Route(
            methods={"POST": ui_chat},
            render_error=app_error,
            access=PAGE_OR_KEY,
            metered=True,
        )
    },
    render_error=app_error,
)
