"""Hostile request bodies for both chat APIs, made from a seed: the same seed, the same bodies.

Most are valid requests mutated where they have structure (wrong types in every field, huge
and negative numbers, NaN and Infinity, duplicate and unknown keys, nesting up to 10,000
deep, long strings, lone surrogates, NUL); some are then damaged as bytes (invalid UTF-8, a
BOM, a cut, a flipped byte); the rest are raw byte or JSON-token soup. Each body is meant to
be POSTed with Content-Type: application/json to the path it comes with.

Plain Python and no harness: tests/test_doors/test_fuzz_host.py runs the bodies through app.handle; an
over-HTTP run POSTs the same bodies and checks each answer with problem().

    for path, body in bodies(seed=1, count=10_000): ...
    body_at(seed=1, index=4321)   # one body again, without the 4,320 before it
    body_for(RESPONSES, seed=1, index=7)   # a body for one door (every door: DOORS)

Images ride along wherever a door takes them (the vision model is the default): valid ones,
and base64 with a character that is not ASCII, empty ones, bytes of another type, https: URLs
to local addresses.
"""

from __future__ import annotations

import base64
import copy
import json
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Union

CHAT = "/api/v1/chat"
COMPLETIONS = "/v1/chat/completions"
RESPONSES = "/v1/responses"
UI_CHAT = "/api/v1/ui-chat"
# A durable conversation's message (the path's id is filled in by the sender) and a new
# conversation from a history.
MESSAGE = "/api/v1/conversations/{id}/messages"
HISTORY = "/api/v1/conversations"
DOORS = (CHAT, COMPLETIONS, RESPONSES, UI_CHAT, MESSAGE, HISTORY)
MODEL = "@cf/google/gemma-4-26b-a4b-it"  # the default allow-list's one model, a vision model
MAX_BYTES = 100_000  # past the 64 KiB body limit, and no more: a longer body tells nothing new

# What a client can get for a body, per API; anything else is a bug.
_COMMON = {
    (400, "invalid_json"),
    (400, "invalid_field"),
    (400, "unknown_field"),
    (400, "unknown_model"),
    (400, "too_many_messages"),
    (400, "message_too_long"),
    (400, "images_not_supported"),
    (400, "too_many_images"),
    (400, "image_too_large"),
    (413, "body_too_large"),
}
# A durable conversation's own answers: a turn still running, its bounds, its history too long
# for the model's window (many turns of long fuzz bodies).
_DURABLE = {
    (409, "turn_in_progress"),
    (413, "conversation_too_large"),
    (400, "context_length_exceeded"),
}
CLIENT_ERRORS = {
    CHAT: _COMMON,
    COMPLETIONS: _COMMON | {(400, "unsupported_parameter")},
    RESPONSES: _COMMON | {(400, "unsupported_parameter")},
    UI_CHAT: _COMMON,
    MESSAGE: _COMMON | _DURABLE,
    HISTORY: _COMMON | _DURABLE,
}
OPENAI_DOORS = (COMPLETIONS, RESPONSES)
# What a failing upstream adds (non-streamed /v1 answers; /api/v1/chat before streaming).
UPSTREAM_ERRORS = {(502, "upstream_error"), (502, "upstream_timeout"), (502, "upstream_incomplete")}
OPENAI_TYPES = {400: "invalid_request_error", 413: "invalid_request_error", 502: "server_error"}


@dataclass(frozen=True, slots=True)
class Raw:
    """JSON text written as is: NaN, a 5,000-digit number, an escape, 10,000 brackets."""

    text: str


@dataclass(frozen=True, slots=True)
class Pairs:
    """An object that may repeat a key."""

    items: list[tuple[str, Node]]


# A recursive alias: `|` cannot join the quoted "Node" at run time.
Node = Union[  # noqa: UP007
    None,
    bool,
    int,
    float,
    str,
    Raw,
    Pairs,
    list["Node"],
    dict[str, "Node"],
]


def bodies(seed: int, count: int) -> Iterator[tuple[str, bytes]]:
    for index in range(count):
        yield body_at(seed, index)


def body_at(seed: int, index: int) -> tuple[str, bytes]:
    rng = random.Random(f"{seed}:{index}")  # str seeds hash with SHA-512: same on every run
    path = rng.choice((CHAT, COMPLETIONS))
    roll = rng.random()
    if roll < 0.1:
        return path, soup(rng)
    tree: Node = chat_base(rng) if path == CHAT else completion_base(rng)
    if roll > 0.15:
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            tree = mutate(rng, tree)
    raw = encode(tree, ascii_only=rng.random() < 0.5)
    if rng.random() < 0.15:
        raw = damage(rng, raw)
    return path, raw[:MAX_BYTES]


def door_of(path: str) -> str:
    """The door a path is (a conversation's message path carries its id)."""
    if path.startswith(HISTORY + "/") and path.endswith("/messages"):
        return MESSAGE
    return path


def problem(
    path: str, status: int, headers: Mapping[str, str], body: bytes, *, upstream_fails: bool = False
) -> str | None:
    """What is wrong with an answer to a fuzz body, or None; headers with lower-case names."""
    path = door_of(path)
    if headers.get("x-content-type-options") != "nosniff":
        return "no X-Content-Type-Options: nosniff"
    if "Origin" not in headers.get("vary", ""):
        return "no Vary: Origin"
    if status == 201 and path == HISTORY:
        return None
    if status == 200:
        kind = headers.get("content-type", "")
        return (
            None
            if kind.startswith(("text/event-stream", "application/json"))
            else f"200 with {kind!r}"
        )
    if not headers.get("content-type", "").startswith("application/json"):
        return f"{status} error without a JSON content type"
    try:
        value = json.loads(body)
    except ValueError:
        return f"{status} error body is not JSON: {body[:200]!r}"
    if path in OPENAI_DOORS:
        error = value.get("error") if isinstance(value, dict) else None
        if not (isinstance(error, dict) and set(error) == {"message", "type", "param", "code"}):
            return f"not the OpenAI error shape: {value!r:.300}"
        code, message = error["code"], error["message"]
        if error["type"] != OPENAI_TYPES.get(status):
            return f"{status} with type {error['type']!r}"
        if not (error["param"] is None or isinstance(error["param"], str)):
            return f"param is {error['param']!r:.100}"
    else:
        if not (isinstance(value, dict) and set(value) == {"error", "message"}):
            return f"not the app's error shape: {value!r:.300}"
        code, message = value["error"], value["message"]
    if not (isinstance(message, str) and message and len(message) <= 400):
        return f"message is {message!r:.300}"
    allowed = CLIENT_ERRORS[path] | (UPSTREAM_ERRORS if upstream_fails else set())
    if (status, code) not in allowed:
        return f"undocumented {status} {code}: {message}"
    return None


# --- valid requests ---------------------------------------------------------------------

WORDS = [
    "hi",
    "Tell me a joke",
    "é🌍 ünïcode",
    "",
    "  ",
    "line\nbreak",
    'quote " and \\',
    "{[json]}",
]


PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)
JPEG = b"\xff\xd8\xff\xe0" + bytes(24)


def image_url(rng: random.Random) -> str:
    """An image as a client may send it: mostly valid, else hostile in one way or another."""
    kind = rng.randrange(12)
    if kind < 5:
        data = rng.choice((PNG, JPEG))
        declared = "png" if data is PNG else rng.choice(("jpeg", "jpg"))
        return f"data:image/{declared};base64," + base64.b64encode(data).decode()
    if kind == 5:  # a character that is not ASCII in the base64 (issue 33: a 500 on every door)
        text = base64.b64encode(PNG).decode()
        at = rng.randrange(len(text))
        return "data:image/png;base64," + text[:at] + rng.choice("é🌍\u00a0\ufeff") + text[at:]
    if kind == 6:
        return "data:image/png;base64,"  # 0 bytes
    if kind == 7:
        return "data:image/png;base64," + base64.b64encode(JPEG).decode()  # not what it says
    if kind == 8:
        return rng.choice(
            (
                "https://127.0.0.1/a.png",
                "https://[::1]/a.png",
                "https://169.254.169.254/latest",
                "https://0x7f.1/a.png",
                "https://localhost/a.png",
            )
        )
    if kind == 9:
        return "https://example.com/cat.png"
    if kind == 10:
        return "data:image/webp;base64," + base64.b64encode(b"RIFF\0\0\0\0WEBPVP8 ").decode()
    return "data:image/png;base64," + "A" * rng.choice((3, 5, 101)) + "="  # bad padding


def user_content(rng: random.Random, text: str) -> Node:
    """Text, or (sometimes) text and an image, as the OpenAI shape has it."""
    if rng.random() < 0.25:
        return [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": image_url(rng)}},
        ]
    return text


def chat_base(rng: random.Random) -> dict[str, Node]:
    messages: list[Node] = [{"role": "system", "content": "be brief"}] if rng.random() < 0.3 else []
    for _ in range(rng.randrange(1, 4)):
        messages.append({"role": "user", "content": user_content(rng, rng.choice(WORDS[:3]))})
        messages.append({"role": "assistant", "content": rng.choice(WORDS)})
    messages.append({"role": "user", "content": user_content(rng, rng.choice(WORDS[:3]))})
    tree: dict[str, Node] = {"messages": messages}
    if rng.random() < 0.5:
        tree["model"] = MODEL
    if rng.random() < 0.5:
        tree["max_tokens"] = rng.randrange(1, 4097)
    if rng.random() < 0.5:
        tree["temperature"] = rng.choice((0, 0.7, 1, 2.5, 5))
    return tree


def completion_base(rng: random.Random) -> dict[str, Node]:
    def content() -> Node:
        text = rng.choice(WORDS[:3])
        if rng.random() < 0.3:
            return [{"type": "text", "text": part} for part in (text, " more")]
        return user_content(rng, text)

    messages: list[Node] = (
        [{"role": rng.choice(("system", "developer")), "content": "be brief"}]
        if rng.random() < 0.3
        else []
    )
    message: dict[str, Node] = {"role": "user", "content": content()}
    if rng.random() < 0.2:
        message["name"] = "ann"
    messages.append(message)
    tree: dict[str, Node] = {"model": MODEL, "messages": messages}
    stream = rng.random() < 0.5
    if stream or rng.random() < 0.3:
        tree["stream"] = stream
    if stream and rng.random() < 0.5:
        tree["stream_options"] = {"include_usage": rng.random() < 0.5}
    if rng.random() < 0.4:
        tree[rng.choice(("max_tokens", "max_completion_tokens"))] = rng.randrange(1, 4097)
    if rng.random() < 0.4:
        tree["temperature"] = rng.choice((0, 0.2, 1.0, 2))
    if rng.random() < 0.1:
        tree["n"] = 1
    if rng.random() < 0.1:
        tree["user"] = "user-1"
    if rng.random() < 0.1:  # unsupported, so refused: still structure worth mutating
        tree["tools"] = [
            {
                "type": "function",
                "function": {"name": "f", "parameters": {"type": "object", "properties": {}}},
            }
        ]
    return tree


def responses_base(rng: random.Random) -> dict[str, Node]:
    image: list[Node] = [{"type": "input_image", "image_url": image_url(rng)}]
    items: list[Node] = [
        {"role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hi"}, *image],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "hm"}],
        },
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "done", "annotations": []}],
        },
        {"role": "user", "content": "more"},
    ]
    return {
        "model": MODEL,
        "input": items if rng.random() < 0.8 else "hi",
        "instructions": "be brief",
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
        "tool_choice": "auto",
        "max_output_tokens": 50,
        "temperature": 0.5,
        "top_p": 0.9,
        "text": {"format": {"type": "text"}},
        "stream": rng.random() < 0.5,
        "store": False,
        "stop": ["x"],
    }


def ui_base(rng: random.Random) -> dict[str, Node]:
    image: list[Node] = [{"type": "file", "mediaType": "image/png", "url": image_url(rng)}]
    assistant: Node = {
        "id": "a",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "hm"},
            {
                "type": "tool-f",
                "toolCallId": "c1",
                "state": "output-available",
                "input": {"x": 1},
                "output": {"y": 2},
            },
            {"type": "step-start"},
            {"type": "text", "text": "done"},
        ],
    }
    return {
        "id": "chat",
        "trigger": "submit-message",
        "messageId": "m",
        "model": MODEL,
        "max_tokens": 50,
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "messages": [
            {"id": "s", "role": "system", "parts": [{"type": "text", "text": "brief"}]},
            {"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}, *image]},
            assistant,
            {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "more"}]},
        ],
    }


def message_base(rng: random.Random) -> dict[str, Node]:
    """A durable conversation's message: {"content", ...} with /api/v1/chat's options."""
    tree: dict[str, Node] = {"content": user_content(rng, rng.choice(WORDS[:3]))}
    if rng.random() < 0.5:
        tree["model"] = MODEL
    if rng.random() < 0.5:
        tree["max_tokens"] = rng.randrange(1, 4097)
    if rng.random() < 0.3:
        tree["stop"] = ["x", "end"]
    return tree


def history_base(rng: random.Random) -> dict[str, Node]:
    """A new conversation's history: {"messages", "model"?}."""
    tree = chat_base(rng)
    return {k: v for k, v in tree.items() if k in ("messages", "model")}


BASES = {
    CHAT: chat_base,
    COMPLETIONS: completion_base,
    RESPONSES: responses_base,
    UI_CHAT: ui_base,
    MESSAGE: message_base,
    HISTORY: history_base,
}


def body_for(door: str, seed: int, index: int) -> bytes:
    """One hostile body for `door`: its valid request mutated where it has structure, some
    damaged as bytes, some soup; every tenth left valid."""
    rng = random.Random(f"{door}:{seed}:{index}")
    roll = rng.random()
    if roll < 0.08:
        return soup(rng)
    tree: Node = BASES[door](rng)
    if index % 10:
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            tree = mutate(rng, tree)
    raw = encode(tree, ascii_only=rng.random() < 0.5)
    if index % 10 and rng.random() < 0.12:
        raw = damage(rng, raw)
    return raw[:MAX_BYTES]


# --- structure-aware mutations ------------------------------------------------------------


WRONG_TYPES: list[Node] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    "",
    "x",
    [],
    {},
    [1, "a"],
    {"a": 1},
    [None],
    {"": ""},
]
ODD_NUMBERS: list[Node] = [
    -(2**63),
    2**63,
    2**64 + 1,
    -1.5,
    -0.0,
    1e308,
    4096,
    4097,
    5.000001,
    1e-300,
]
HI: Node = {"role": "user", "content": "hi"}
ODD_MESSAGES: list[Node] = [HI, HI, HI, {"role": "user"}, {"content": "x"}, {}]


def hostile_value(rng: random.Random) -> Node:
    kind = rng.randrange(16)
    if kind == 15:  # an image where one may be, or not
        images: list[Node] = [
            image_url(rng),
            {"url": image_url(rng)},
            {"type": "image_url", "image_url": {"url": image_url(rng)}},
        ]
        return rng.choice(images)
    if kind == 0:
        # A copy: mutate() edits trees in place, and a shared node would grow from body to body.
        return copy.deepcopy(rng.choice(WRONG_TYPES))
    if kind == 1:  # a huge integer: past 1e308, past 4,300 digits
        digits = rng.choice((20, 101, 310, 400, 4301, 5000))
        return Raw(rng.choice(("", "-")) + "1" + "0" * (digits - 1))
    if kind == 2:
        return Raw(
            rng.choice(
                (
                    "NaN",
                    "Infinity",
                    "-Infinity",
                    "1e309",
                    "-1e309",
                    "1e-400",
                    "-0",
                    "1E+2",
                    "0." + "1" * 150,
                )
            )
        )
    if kind == 3:
        return rng.choice(ODD_NUMBERS)
    if kind == 4:
        return deep(rng)
    if kind == 5:
        return rng.choice('x é🌍\n\\"[{') * rng.choice((100, 8001, 20_000, 70_000))
    if kind == 6:  # lone surrogates, as JSON escapes and as Python text
        surrogates: list[Node] = [
            Raw('"\\ud800"'),
            Raw('"a\\udfffb"'),
            Raw('"\\ud83d"'),
            "\ud800",
            "x\udc00y",
        ]
        return rng.choice(surrogates)
    if kind == 7:
        nuls: list[Node] = [Raw('"\\u0000"'), "nul\x00here", Raw('"\x00"'), Raw('"\x1f"')]
        return rng.choice(nuls)
    if kind == 8:
        return rng.choice(
            ["user", "assistant", "system", "developer", "tool", "function", "USER", "user "]
        )
    if kind == 9:
        return rng.choice([MODEL, MODEL.upper(), "@cf/evil/x", "gpt-4o", "", MODEL + "\x00"])
    if kind == 10:
        return [hostile_value(rng) for _ in range(rng.randrange(4))]
    if kind == 11:
        return {weird_key(rng): hostile_value(rng) for _ in range(rng.randrange(3))}
    if kind == 12:
        return Pairs([(weird_key(rng), hostile_value(rng)) for _ in range(2)] * 2)
    if kind == 13:
        kinds: list[Node] = ["text", "image_url", "", None]
        texts: list[Node] = ["t", 5, None]
        return [{"type": rng.choice(kinds), "text": rng.choice(texts)}]
    return copy.deepcopy(rng.choice(ODD_MESSAGES))


def weird_key(rng: random.Random) -> str:
    return rng.choice(
        [
            "messages",
            "model",
            "stream",
            "tools",
            "top_p",
            "",
            "\ud800",
            "k" * 5000,
            "__proto__",
            "constructor",
            "role",
            "content",
            "name",
            "include_usage",
            "x\x00",
            "<script>alert(1)</script>",
        ]
    )


def deep(rng: random.Random) -> Raw:
    """Nesting as text: the encoder never recurses on it, however deep."""
    levels = rng.choice((31, 32, 33, 64, 1000, 3500, 6500, 10_000))
    shape = rng.randrange(5)
    if shape == 0:
        return Raw("[" * levels + "]" * levels)
    if shape == 1:
        return Raw('{"a":' * levels + "1" + "}" * levels)
    if shape == 2:
        return Raw('[{"a":' * (levels // 2) + "1" + "}]" * (levels // 2))
    if shape == 3:
        return Raw("[" * levels)  # never closed
    return Raw('["[{\\"' + "[" * levels + '", 1]')  # inside a string: not nesting at all


def mutate(rng: random.Random, tree: Node) -> Node:
    """One change at a random place in the tree (the tree itself may be replaced)."""
    places = list(walk(tree))
    container, key = rng.choice(places) if places else (None, None)
    if container is None or key is None:
        return hostile_value(rng) if rng.random() < 0.3 else tree
    action = rng.randrange(10)
    if isinstance(container, dict):
        assert isinstance(key, str)
        if action == 0:
            del container[key]
        elif action == 1:
            container[weird_key(rng)] = hostile_value(rng)
        elif action == 2:  # the same key twice: which one wins is the parser's choice
            return replace(tree, container, Pairs([*container.items(), (key, hostile_value(rng))]))
        elif action == 3:
            container[key] = [container[key]] if rng.random() < 0.5 else {"value": container[key]}
        else:
            container[key] = hostile_value(rng)
    elif isinstance(container, list):
        assert isinstance(key, int)
        if action == 0:
            del container[key]
        elif action == 1 and len(container) < 100:  # many messages: past the limit, or just many
            container.extend([container[key]] * rng.choice((10, 50, 60, 2000)))
        else:
            container[key] = hostile_value(rng)
    return tree


Place = tuple[dict[str, Node] | list[Node] | None, str | int | None]


def walk(tree: Node) -> Iterator[Place]:
    """Every (container, key) in the tree, without recursion; a repeated container once."""
    yield None, None
    stack: list[Node] = [tree]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            for key, child in node.items():
                yield node, key
                stack.append(child)
        elif isinstance(node, list):
            for index, child in enumerate(node):
                yield node, index
                stack.append(child)


def replace(tree: Node, old: object, new: Node) -> Node:
    if tree is old:
        return new
    stack: list[Node] = [tree]
    while stack:
        node = stack.pop()
        children: Iterator[tuple[str | int, Node]]
        if isinstance(node, dict):
            children = iter(list(node.items()))
        elif isinstance(node, list):
            children = iter(list(enumerate(node)))
        else:
            continue
        for key, child in children:
            if child is old:
                node[key] = new  # type: ignore[index]
                return tree
            stack.append(child)
    return tree


def encode(tree: Node, *, ascii_only: bool, limit: int = MAX_BYTES) -> bytes:
    """JSON text for the tree, without recursion; it stops soon after `limit` characters."""
    parts: list[str] = []
    size = 0
    stack: list[Node | Raw] = [tree]
    while stack and size <= limit:
        node = stack.pop()
        if isinstance(node, Raw):
            parts.append(node.text)
            size += len(node.text)
        elif isinstance(node, Pairs):
            stack.append(Raw("}"))
            for i, (key, value) in reversed(list(enumerate(node.items))):
                stack += [value, Raw(json.dumps(key, ensure_ascii=ascii_only) + ":")]
                if i:
                    stack.append(Raw(","))
            stack.append(Raw("{"))
        elif isinstance(node, dict):
            stack.append(Pairs(list(node.items())))
        elif isinstance(node, list):
            stack.append(Raw("]"))
            for i, value in reversed(list(enumerate(node))):
                stack.append(value)
                if i:
                    stack.append(Raw(","))
            stack.append(Raw("["))
        else:
            parts.append(json.dumps(node, ensure_ascii=ascii_only))
            size += len(parts[-1])
    # A lone surrogate in unescaped text has no UTF-8 form: it goes out as invalid UTF-8.
    return "".join(parts).encode("utf-8", "surrogatepass")


# --- bytes ----------------------------------------------------------------------------------

BAD_UTF8 = [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x82", b"\xf8\x88\x80\x80\x80", b"\x80"]


def damage(rng: random.Random, raw: bytes) -> bytes:
    at = rng.randrange(len(raw) + 1)
    kind = rng.randrange(8)
    if kind == 0:
        return raw[:at] + rng.choice(BAD_UTF8) + raw[at:]
    if kind == 1:
        return b"\xef\xbb\xbf" + raw
    if kind == 2:
        return raw[:at]
    if kind == 3:
        return raw[:at] + b"\x00" + raw[at:]
    if kind == 4 and raw:
        flipped = raw[min(at, len(raw) - 1)] ^ (1 << rng.randrange(8))
        return raw[:at] + bytes([flipped]) + raw[at + 1 :]
    if kind == 5:
        return raw + rng.choice((b"garbage", b"{}", b"\x00", b" " * 1000, b"]"))
    if kind == 6:
        return rng.choice((b"", b" ", b"\r\n\t ", b"null", b"[]", b'""', b"0", b"{}"))
    return b" \n" * rng.randrange(1000) + raw


TOKENS = [
    b"[",
    b"]",
    b"{",
    b"}",
    b",",
    b":",
    b'"',
    b'"k"',
    b"\\",
    b"\\u",
    b"\\ud800",
    b"1",
    b"-",
    b"e",
    b".",
    b"true",
    b"null",
    b"NaN",
    b" ",
    b"\n",
    b"\x00",
    b"\xff",
    b"\xc3\xa9",
]


def soup(rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return rng.randbytes(rng.randrange(2000))
    return b"".join(rng.choices(TOKENS, k=rng.randrange(5000)))
