"""Bodies for /v1/responses made from its input grammar, from a seed: the same seed, the same
bodies. Where tests/fuzz.py mutates whole requests, these stay close to the grammar and break it
one place at a time: items of every type and of none, content parts of the wrong kind for their
role (image parts where text is expected), roles that are numbers, ids with lone surrogates,
non-string types, item references to stored items that exist and that do not, and mixed string
and object items with previous_response_id, stored or not.

    body(seed=1, index=7, known=Known(...))   # bytes to POST to /v1/responses

`known` names responses and items the server holds, so that references and chains reach the
storage paths, not only the parser.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

PATH = "/v1/responses"
MODELS = ("@cf/google/gemma-4-26b-a4b-it", "@cf/meta/llama-3.1-8b-instruct-fast")
PNG_URL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="


@dataclass(frozen=True, slots=True, kw_only=True)
class Known:
    responses: tuple[str, ...]  # ids of stored responses
    items: tuple[str, ...]  # ids of their items (input and output)


HEX = "0123456789abcdef"


def _hex(rng: random.Random) -> str:
    return "".join(rng.choice(HEX) for _ in range(32))


def _junk(rng: random.Random) -> object:
    return rng.choice(
        [
            None,
            True,
            0,
            -1,
            7,
            1e300,
            -0.0,
            "",
            " ",
            "\ud800",
            "x\udfffy",
            "\x00",
            [],
            [1],
            {},
            {"type": "input_text"},
            "A" * rng.choice((1, 65, 5000)),
        ]
    )


def _text(rng: random.Random) -> object:
    if rng.random() < 0.85:
        return rng.choice(["[[pace:0]] hi", "[[pace:0]] é🌍", "[[pace:0]] " + "w" * 300, ""])
    return _junk(rng)


def _id(rng: random.Random, known: Known) -> object:
    roll = rng.random()
    if roll < 0.4 and known.items:
        return rng.choice(known.items)
    if roll < 0.5 and known.responses:
        return rng.choice(known.responses)  # a response's id where an item's is expected
    if roll < 0.7:
        prefix = rng.choice(["msg", "rs", "fc", "fco", "m"])
        return f"{prefix}_{_hex(rng)}_{rng.choice(['i0', '0', '12', 'i9'])}"
    return rng.choice(
        [
            "msg_\ud800",
            f"msg_{_hex(rng)}_i0\ud800",
            "\udc00" * 3,
            f"msg_{_hex(rng).upper()}_0",
            5,
            None,
            [],
            {"id": "x"},
            "msg_" + "a" * 5000,
        ]
    )


def _previous(rng: random.Random, known: Known) -> object:
    roll = rng.random()
    if roll < 0.5 and known.responses:
        return rng.choice(known.responses)
    if roll < 0.7:
        return "resp_" + _hex(rng)
    return rng.choice(
        ["resp_\ud800", "resp_" + "g" * 32, "resp_" + _hex(rng) + "\ud800", 5, [], {}, "", True]
    )


def _part(rng: random.Random, role: object) -> object:
    kinds = [
        "input_text",
        "output_text",
        "text",
        "refusal",
        "input_image",
        "reasoning_text",
        "summary_text",
        "input_file",
        5,
        None,
        ["input_text"],
        "\ud800",
    ]
    # Mostly what the role takes; often not (an image part where text is expected).
    if rng.random() < 0.6:
        kind: object = "output_text" if role == "assistant" else "input_text"
    else:
        kind = rng.choice(kinds)
    part: dict[str, object] = {"type": kind}
    if kind == "input_image" or rng.random() < 0.1:
        part["image_url"] = rng.choice([PNG_URL, "https://127.0.0.1/x.png", 5, None, "\ud800"])
    if kind != "input_image" or rng.random() < 0.2:
        part["text"] = _text(rng)
    if rng.random() < 0.05:
        part["file_id"] = _junk(rng)
    if rng.random() < 0.05:
        part[rng.choice(["annotations", "logprobs", "extra", "\ud800"])] = _junk(rng)
    return part


def _content(rng: random.Random, role: object) -> object:
    roll = rng.random()
    if roll < 0.35:
        return _text(rng)
    if roll < 0.9:
        return [_part(rng, role) for _ in range(rng.randint(0, 3))]
    return _junk(rng)


def _role(rng: random.Random) -> object:
    if rng.random() < 0.8:
        return rng.choice(["user", "user", "assistant", "system", "developer"])
    return rng.choice(["tool", "USER", "", 1, 3, -7, 1e300, None, True, [], "\ud800", "model"])


def _item(rng: random.Random, known: Known, calls: list[str]) -> object:
    kind = rng.choice(
        [
            "message",
            "message",
            "bare",
            "function_call",
            "function_call_output",
            "reasoning",
            "item_reference",
            "item_reference",
            "junk",
        ]
    )
    item: dict[str, object]
    if kind == "junk":
        return rng.choice([_junk(rng), {"type": _junk(rng)}, {"type": "web_search_call"}])
    if kind in ("message", "bare"):
        role = _role(rng)
        item = {"role": role, "content": _content(rng, role)}
        if kind == "message":
            item["type"] = "message"
    elif kind == "function_call":
        call_id = rng.choice(["call_1", "call_2", f"call_{rng.randrange(99)}"])
        calls.append(call_id)
        item = {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}
    elif kind == "function_call_output":
        call_id = rng.choice(calls) if calls and rng.random() < 0.7 else f"call_{rng.randrange(99)}"
        item = {"type": "function_call_output", "call_id": call_id, "output": _content(rng, "tool")}
    elif kind == "reasoning":
        item = {
            "type": "reasoning",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": _text(rng)}],
        }
    else:
        item = {"type": "item_reference", "id": _id(rng, known)}
    if rng.random() < 0.15:
        item["id"] = _id(rng, known)
    if rng.random() < 0.1:
        key = rng.choice(["type", "role", "call_id", "name", "arguments", "output", "status"])
        item[key] = _junk(rng)
    if rng.random() < 0.05:
        item[rng.choice(["extra", "\ud800", "Type"])] = _junk(rng)
    return item


def body(seed: int, index: int, known: Known) -> bytes:
    rng = random.Random(f"responses-{seed}-{index}")
    calls: list[str] = []
    value: dict[str, object] = {}
    if rng.random() < 0.9:
        value["model"] = rng.choice(MODELS) if rng.random() < 0.95 else _junk(rng)
    roll = rng.random()
    if roll < 0.15:
        value["input"] = _text(rng)
    elif roll < 0.95:
        items = [_item(rng, known, calls) for _ in range(rng.randint(1, 6))]
        if rng.random() < 0.3:  # mixed string and object items
            items.insert(rng.randrange(len(items) + 1), _text(rng))
        value["input"] = items
    else:
        value["input"] = _junk(rng)
    if rng.random() < 0.5:
        value["previous_response_id"] = _previous(rng, known)
    if rng.random() < 0.6:
        value["store"] = rng.choice([True, False, True, "yes", None, 1])
    if rng.random() < 0.2:
        value["stream"] = rng.choice([True, False])
    if rng.random() < 0.1:
        value["instructions"] = _content(rng, "system")
    value["max_output_tokens"] = 16
    return json.dumps(value, ensure_ascii=rng.random() < 0.9).encode("utf-8", "surrogatepass")
