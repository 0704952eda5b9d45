import json
import re
from pathlib import Path
from typing import Any

import pytest

from streaming import frames, plain_frames, upstream
from streaming.upstream import TEXT, Decoded, UpstreamDecoder


def run(chunks: list[bytes]) -> tuple[list[str], UpstreamDecoder, bool]:
    """The text parts only: these streams carry no reasoning, which is checked too."""
    decoder = UpstreamDecoder()
    texts: list[str] = []
    done = False
    for chunk in [*chunks, None]:
        out = decoder.flush() if chunk is None else decoder.feed(chunk)
        assert all(kind == TEXT for kind, _ in out.parts), out.parts
        texts += [text for _, text in out.parts]
        done = done or out.done
    return texts, decoder, done


def native(text: object, **extra: object) -> bytes:
    return b"data: " + json.dumps({"response": text, "p": "pad", **extra}).encode() + b"\n\n"


def openai(content: str | None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    frame = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(frame).encode() + b"\n\n"


USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}

STREAMS: dict[str, tuple[bytes, list[str], dict[str, object]]] = {
    "native": (
        native("Hel")
        + native("lo ")
        + native("wörld 🌍")
        + native("", usage=USAGE)
        + b"data: [DONE]\n\n",
        ["Hel", "lo ", "wörld 🌍"],
        {"usage": USAGE, "finish_reason": None, "done": True},
    ),
    "openai": (
        b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n'
        + openai("Hi")
        + openai(" there")
        + openai(None, "length")
        + b"data: "
        + json.dumps({"choices": [], "usage": USAGE}).encode()
        + b"\n\n"
        + b"data: [DONE]\n\n",
        ["Hi", " there"],
        {"usage": USAGE, "finish_reason": "length", "done": True},
    ),
    "crlf, comments, padding-only, missing and numeric values": (
        b": keep-alive\r\n\r\n"
        b'data: {"p":"xxxx"}\r\n\r\n'
        b'data: {"response":null}\r\n\r\n'
        b'data: {"response":42}\r\n\r\n'
        b'data: {"response":1.5}\r\n\r\n'
        b'event: message\r\nid: 3\r\ndata: {"response":"a"}\r\n\r\n'
        b"data: [DONE]\r\n\r\n",
        ["42", "1.5", "a"],
        {"usage": None, "finish_reason": None, "done": True},
    ),
    "bare CR line ends and multi-line data": (
        b'data: {"response":\rdata: "x\\ny"}\r\rdata:[DONE]\r\r',
        ["x\ny"],
        {"usage": None, "finish_reason": None, "done": True},
    ),
    "malformed frames are skipped and counted": (
        native("a") + b"data: {oops\n\n" + b"data: [1,2]\n\n" + native("b") + b"data: [DONE]\n\n",
        ["a", "b"],
        {"usage": None, "finish_reason": None, "done": True, "malformed": 2},
    ),
    "ends without [DONE]": (
        native("a") + native("b"),
        ["a", "b"],
        {"usage": None, "finish_reason": None, "done": False},
    ),
    "frame cut off by the end still counts": (
        native("a") + b'data: {"response":"b"}',
        ["a", "b"],
        {"done": False},
    ),
    "nothing after a multi-line [DONE] is read": (
        native("a") + b"event: end\ndata: [DONE]\n\n" + native("late") + b"data: [DONE]\n\n",
        ["a"],
        {"done": True},
    ),
    "escapes, controls and non-plain frames take the full JSON path": (
        b'data: {"response":"tab\\there \\"q\\" \\u00e9"}\n\n'
        b'data: {"p":"x","response":"reordered"}\n\n'
        b'data: {"response":"raw\x01control"}\n\n'
        b"data: [DONE]\n\n",
        ['tab\there "q" \u00e9', "reordered"],
        {"done": True, "malformed": 1},
    ),
    "nothing after [DONE] is read": (
        native("a") + b"data: [DONE]\n\n" + native("late"),
        ["a"],
        {"done": True},
    ),
    "CR, LF and CRLF mixed, in every pairing": (
        native("a").replace(b"\n\n", b"\r\r")
        + native("b").replace(b"\n\n", b"\r\n\r\n")
        + native("c").replace(b"\n\n", b"\n\r")
        + native("d").replace(b"\n\n", b"\r\n\r")
        + native("e").replace(b"\n\n", b"\r\r\n")
        + native("f")
        + b": comment\r"
        + b'data: {"response":\r\ndata: "g\\nh"}\n\r\n'
        + native("i").replace(b"\n\n", b"\n\r\n")
        + b"data: [DONE]\r\n\r",
        ["a", "b", "c", "d", "e", "f", "g\nh", "i"],
        {"done": True, "malformed": 0},
    ),
    "a long line, then CR line ends": (
        native("x" * 3000) + native("y").replace(b"\n\n", b"\r\r") + b"data: [DONE]\r\r",
        ["x" * 3000, "y"],
        {"done": True},
    ),
}


def check(name: str, chunks: list[bytes]) -> None:
    _, expected_texts, facts = STREAMS[name]
    texts, decoder, done = run(chunks)
    assert texts == expected_texts, chunks
    assert done is facts["done"]
    for key in ("usage", "finish_reason", "malformed"):
        if key in facts:
            assert getattr(decoder.frames, key) == facts[key]


@pytest.mark.parametrize("name", list(STREAMS))
def test_whole(name: str) -> None:
    check(name, [STREAMS[name][0]])


@pytest.mark.parametrize("name", list(STREAMS))
def test_every_single_split_point(name: str) -> None:
    wire = STREAMS[name][0]
    for at in range(len(wire) + 1):
        check(name, [wire[:at], wire[at:]])


@pytest.mark.parametrize("name", list(STREAMS))
def test_every_two_split_points(name: str) -> None:
    wire = STREAMS[name][0]
    step = max(1, len(wire) // 60)
    for a in range(0, len(wire) + 1, step):
        for b in range(a, len(wire) + 1, step):
            check(name, [wire[:a], wire[a:b], wire[b:]])


@pytest.mark.parametrize("name", list(STREAMS))
def test_byte_at_a_time(name: str) -> None:
    wire = STREAMS[name][0]
    check(name, [wire[i : i + 1] for i in range(len(wire))])


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    texts, decoder, done = run([b'data: {"response":"a\xff"}\n\ndata: [DONE]\n\n'])
    assert decoder.frames.malformed == 0 and done
    assert texts == ["a\ufffd"]


def test_usage_keeps_only_integer_counts() -> None:
    texts, decoder, _ = run(
        [
            b'data: {"response":"","usage":{"prompt_tokens":1,"total_tokens":"x","extra":2,"completion_tokens":true}}\n\n'
        ]
    )
    assert texts == []
    assert decoder.frames.usage == {"prompt_tokens": 1}


def decode(
    wire: bytes, *, opens_thinking: bool = False
) -> tuple[list[tuple[str, str]], UpstreamDecoder]:
    decoder = UpstreamDecoder(opens_thinking=opens_thinking)
    parts = decoder.feed(wire).parts
    return parts + decoder.flush().parts, decoder


def data(frame: object) -> bytes:
    return b"data: " + json.dumps(frame).encode() + b"\n\n"


def usage_frame(prompt: int, completion: int) -> bytes:
    return data(
        {
            "response": "",
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
    )


@pytest.mark.parametrize(
    ("frames", "expected"),
    [
        ([usage_frame(0, 0)], {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}),
        (
            [usage_frame(0, 0), usage_frame(5, 2)],
            {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        ),
        (
            [usage_frame(5, 2), usage_frame(0, 0)],
            {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        ),
        (
            [usage_frame(5, 1), usage_frame(5, 2), usage_frame(5, 3)],
            {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        ),
        (
            [usage_frame(5, 3), data({"choices": [], "usage": {"completion_tokens": 0}})],
            {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        ),
    ],
    ids=[
        "zero alone is kept",
        "real after zero",
        "zero never overwrites",
        "cumulative: latest, never summed",
        "partial zero",
    ],
)
def test_usage_rules(frames: list[bytes], expected: dict[str, int]) -> None:
    _, decoder = decode(b"".join(frames))
    assert decoder.frames.usage == expected


@pytest.mark.parametrize(
    ("raw", "mapped", "unknown"),
    [
        ("stop", "stop", None),
        ("eos", "stop", None),
        ("end_turn", "stop", None),
        ("length", "length", None),
        ("max_tokens", "length", None),
        ("model_length", "length", None),
        ("tool_calls", "tool_calls", None),
        ("function_call", "tool_calls", None),
        ("content_filter", "content_filter", None),
        ("weird", "stop", "weird"),
    ],
)
def test_finish_reasons_map_to_a_documented_set(raw: str, mapped: str, unknown: str | None) -> None:
    _, decoder = decode(data({"choices": [{"delta": {}, "finish_reason": raw}]}))
    assert (decoder.frames.finish_reason, decoder.frames.unknown_finish_reason) == (mapped, unknown)


def test_reasoning_fields_relayed_once_when_equal_and_both_when_not() -> None:
    same = data(
        {"choices": [{"delta": {"reasoning_content": "a", "reasoning": "a", "content": None}}]}
    )
    other = data(
        {"choices": [{"delta": {"reasoning_content": "b", "reasoning": "c", "content": "d"}}]}
    )
    parts, decoder = decode(same + other)
    assert parts == [("thinking", "a"), ("thinking", "b"), ("thinking", "c"), ("text", "d")]
    assert decoder.frames.thinking_seen and decoder.frames.text_seen


@pytest.mark.parametrize("at", range(0, 4))
def test_a_leading_bom_is_stripped_wherever_the_read_splits(at: int) -> None:
    wire = '\ufeffdata: {"response":"a"}\n\ndata: [DONE]\n\n'.encode()
    decoder = UpstreamDecoder()
    parts = decoder.feed(wire[:at]).parts + decoder.feed(wire[at:]).parts
    assert parts == [("text", "a")] and decoder.done


def test_only_a_leading_bom_is_stripped() -> None:
    parts, _ = decode(b'data: {"response":"\xef\xbb\xbfx"}\n\n')
    assert parts == [("text", "\ufeffx")]


@pytest.mark.parametrize(
    "frame",
    [
        b'data: {"response":"a","tool_calls":[],"p":"xyz"}\n\n',
        b'data: {"response":"a","p":"xyz"}\n\n',
        b'data: {"response":"a","tool_calls":[]}\n\n',
        b'data: {"response":"a"}\n\n',
    ],
)
def test_fast_path_covers_the_real_native_frame(frame: bytes) -> None:
    assert plain_frames.fast(frame.decode()[6:-2]) == ("a", None, None)
    assert decode(frame)[0] == [("text", "a")]


# The OpenAI-chunk fast path (frames._PLAIN_CHUNK) against the JSON path it skips: each frame
# goes through a decoder as is and through one with the fast path matching nothing, fed the
# same reads; every outcome must be the same, and the frames marked fast must skip json.loads.
HEAD = (
    '{"id":"chatcmpl-local","object":"chat.completion.chunk","created":1767225600,'
    '"model":"@cf/openai/gpt-oss-20b","choices":[{"index":0,"delta":{'
)
TAIL = '},"logprobs":null,"finish_reason":null,"stop_reason":null}],"p":"abcdefg"}'
TAIL_2026 = (
    '},"logprobs":null,"finish_reason":null,"stop_reason":null,"token_ids":[1004]}],'
    '"usage":{"prompt_tokens":4,"completion_tokens":4,"total_tokens":8},"p":"abcdefghij"}'
)


def chunk(delta: str, tail: str = TAIL, head: str = HEAD) -> str:
    return head + delta + tail


CHUNKS: list[tuple[str, str, bool]] = [  # (name, payload, takes the fast path)
    # The shapes local/model.mjs streams.
    ("model.mjs first chunk", chunk('"role":"assistant","content":""'), True),
    ("model.mjs reasoning_content", chunk('"reasoning_content":"Let","content":null'), True),
    ("model.mjs reasoning", chunk('"reasoning":" me","content":null'), True),
    (
        "model.mjs both",
        chunk('"reasoning_content":" think","reasoning":" think","content":null'),
        True,
    ),
    ("model.mjs content", chunk('"content":" stream"'), True),
    (
        "model.mjs tool call start",
        chunk(
            '"tool_calls":[{"index":0,"id":"call_local_0","type":"function","function":{"name":"f","arguments":""}}],"content":null'
        ),
        False,
    ),
    (
        "model.mjs tool call piece",
        chunk('"tool_calls":[{"index":0,"function":{"arguments":"{\\"q\\":"}}],"content":null'),
        False,
    ),
    (
        "model.mjs finish, zero usage",
        chunk(
            "",
            '},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"p":"a"}',
        ),
        False,
    ),
    (
        "model.mjs cumulative usage",
        chunk(
            '"content":"x"',
            '},"logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6},"p":"a"}',
        ),
        True,
    ),
    # The late-2026 stream (local/model.mjs [[shape:2026]], field-2026-11-28.md): usage on every
    # delta, noise fields, heartbeats, a Google model's -external name.
    ("2026 content", chunk('"content":" edge"', TAIL_2026), True),
    ("2026 reasoning", chunk('"reasoning":"Let","content":null', TAIL_2026), True),
    (
        "2026 first chunk",
        chunk(
            '"role":"assistant","content":""',
            '},"logprobs":null,"finish_reason":null,"stop_reason":null,"token_ids":[]}],'
            '"usage":{"prompt_tokens":4,"completion_tokens":0,"total_tokens":4},"p":"abc",'
            '"prompt_token_ids":[1,2,3],"kv_transfer_params":null}',
        ),
        True,
    ),
    (
        "2026 heartbeat",
        HEAD.split('"choices"')[0]
        + '"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":9,"total_tokens":13}}',
        True,
    ),
    ("2026 zero usage", chunk('"content":"a"', TAIL_2026.replace('":4', '":0')), True),
    (
        "2026 google model",
        chunk('"content":"a"', TAIL_2026, HEAD.replace("openai/gpt-oss-20b", "google/g-external")),
        True,
    ),
    (
        "2026 usage with details",
        chunk(
            '"content":"a"',
            '},"finish_reason":null}],"usage":{"prompt_tokens":4,"completion_tokens":1,'
            '"total_tokens":5,"prompt_tokens_details":{"cached_tokens":2}}}',
        ),
        False,
    ),
    (
        "2026 usage keys in another order",
        chunk(
            '"content":"a"',
            '},"finish_reason":null}],"usage":{"completion_tokens":1,"prompt_tokens":4,"total_tokens":5}}',
        ),
        False,
    ),
    (
        "2026 usage of a float",
        chunk(
            '"content":"a"',
            '},"finish_reason":null}],"usage":{"prompt_tokens":4.0,"completion_tokens":1,"total_tokens":5}}',
        ),
        False,
    ),
    (
        "2026 token_ids of a string",
        chunk('"content":"a"', TAIL_2026.replace("[1004]", '["x"]')),
        False,
    ),
    (
        "2026 finish with usage",
        chunk("", TAIL_2026.replace('"finish_reason":null', '"finish_reason":"stop"')),
        False,
    ),
    # Optional keys the fixtures leave out, one at a time and all together.
    (
        "no stop_reason",
        chunk('"content":"a"', '},"logprobs":null,"finish_reason":null}],"p":"ab"}'),
        True,
    ),
    (
        "no p",
        chunk('"content":"a"', '},"logprobs":null,"finish_reason":null,"stop_reason":null}]}'),
        True,
    ),
    ("no logprobs", chunk('"content":"a"', '},"finish_reason":null}]}'), True),
    (
        "no created, no model",
        chunk(
            '"content":"a"',
            head='{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{',
        ),
        True,
    ),
    ("empty delta", chunk(""), True),
    # Values.
    ("unicode", chunk('"content":"wörld 🌍 \u2028 \x7f"'), True),
    ("empty strings", chunk('"reasoning_content":"","reasoning":"","content":""'), True),
    (
        "null everything",
        chunk('"role":null,"reasoning_content":null,"reasoning":null,"content":null'),
        True,
    ),
    (
        "null reasoning_content, reasoning set",
        chunk('"reasoning_content":null,"reasoning":"r"'),
        True,
    ),
    (
        "empty reasoning_content, reasoning set",
        chunk('"reasoning_content":"","reasoning":"r"'),
        True,
    ),
    (
        "reasoning equals reasoning_content",
        chunk('"reasoning":"same","reasoning_content":"same"'),
        True,
    ),
    (
        "reasoning differs, content first",
        chunk('"content":"c","reasoning":"b","reasoning_content":"a"'),
        True,
    ),
    (
        "JSON punctuation, no quote",
        chunk('"content":"a:null,b}]{,:[","reasoning_content":",,"'),
        True,
    ),
    ("key names as values", chunk('"role":"content","content":"reasoning_content"'), True),
    ("think tags in content", chunk('"content":"<think>hm</think>ok"'), True),
    ("a lone closing think tag", chunk('"content":"hm</think>ok"'), True),
    ("duplicate keys: the last wins", chunk('"content":"a","content":"b"'), True),
    (
        "duplicate keys: a last null wins",
        chunk('"reasoning_content":"a","content":"c","reasoning_content":null'),
        True,
    ),
    (
        "duplicate reasoning after equal one",
        chunk('"reasoning_content":"a","reasoning":"a","reasoning":"b"'),
        True,
    ),
    (
        "five pairs",
        chunk(
            '"role":"assistant","content":"a","content":"b","reasoning":"r","reasoning_content":"q"'
        ),
        False,
    ),
    # Escapes, and a '":"' that could fool a pair scanner: all take the JSON path.
    ("escaped quote", chunk('"content":"say \\"hi\\""'), False),
    ('escaped ":" in a value', chunk('"content":"a\\":\\"b"'), False),
    (
        "a value that reads as a second key",
        chunk('"content":"x\\",\\"reasoning_content\\":\\"y"'),
        False,
    ),
    (
        "a value that reads as the end of the delta",
        chunk('"content":"x\\"},\\"finish_reason\\":\\"stop"'),
        False,
    ),
    ("escaped newline", chunk('"reasoning_content":"a\\nb"'), False),
    ("unicode escape", chunk('"content":"\\u00e9\\ud83c\\udf0d"'), False),
    ("escaped slash and backslash", chunk('"content":"a\\/b\\\\c"'), False),
    ("raw control character (malformed)", chunk('"content":"a\x01b"'), False),
    (
        "escape in id",
        chunk('"content":"a"', head=HEAD.replace("chatcmpl-local", 'chat\\"cmpl')),
        False,
    ),
    (
        "escape in p",
        chunk('"content":"a"', '},"logprobs":null,"finish_reason":null}],"p":"a\\"b"}'),
        False,
    ),
    # Anything else in the frame.
    (
        "finish_reason set",
        chunk(
            '"content":"a"',
            '},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"p":"a"}',
        ),
        False,
    ),
    ("finish_reason length", chunk("", '},"logprobs":null,"finish_reason":"length"}]}'), False),
    ("unknown finish_reason", chunk("", '},"logprobs":null,"finish_reason":"weird"}]}'), False),
    (
        "stop_reason set",
        chunk(
            '"content":"a"',
            '},"logprobs":null,"finish_reason":null,"stop_reason":128001}],"p":"a"}',
        ),
        False,
    ),
    (
        "logprobs set",
        chunk('"content":"a"', '},"logprobs":{"content":[]},"finish_reason":null}]}'),
        False,
    ),
    (
        "usage",
        chunk(
            '"content":"a"',
            '},"finish_reason":null}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}',
        ),
        True,
    ),
    (
        "tool_calls",
        chunk('"content":null,"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]'),
        False,
    ),
    ("empty tool_calls", chunk('"content":"a","tool_calls":[]'), False),
    ("unknown delta key", chunk('"content":"a","refusal":null'), False),
    ("numeric content", chunk('"content":5'), False),
    ("object content", chunk('"content":{"a":1}'), False),
    (
        "unknown top-level key",
        chunk(
            '"content":"a"',
            '},"logprobs":null,"finish_reason":null}],"system_fingerprint":"fp","p":"a"}',
        ),
        False,
    ),
    (
        "top-level response",
        chunk('"content":"a"', '},"logprobs":null,"finish_reason":null}],"response":"b"}'),
        False,
    ),
    (
        "top-level keys in another order",
        '{"object":"chat.completion.chunk","id":"x","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}',
        False,
    ),
    (
        "choice keys in another order",
        chunk('"content":"a"', '},"finish_reason":null,"logprobs":null}]}'),
        False,
    ),
    (
        "second choice",
        chunk(
            '"content":"a"',
            '},"finish_reason":null},{"index":1,"delta":{"content":"b"},"finish_reason":null}]}',
        ),
        False,
    ),
    ("index 1", chunk('"content":"a"', head=HEAD.replace('"index":0', '"index":1')), False),
    ("a non-streamed object", chunk('"content":"a"', head=HEAD.replace(".chunk", "")), False),
    (
        "spaces, as json.dumps writes",
        '{"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": null}]}',
        False,
    ),
    (
        "created with a leading zero (malformed)",
        chunk('"content":"a"', head=HEAD.replace("1767225600", "01767225600")),
        False,
    ),
    (
        "created with other digits (malformed)",
        chunk('"content":"a"', head=HEAD.replace("1767225600", "1\u0661")),
        False,
    ),
    ("cut short (malformed)", chunk('"content":"a"')[:-1], False),
]


def fixture_chunks() -> list[tuple[str, str, bool]]:
    """Every OpenAI chunk in the fixtures; fast unless it carries usage with more than its three
    counts, a finish or tool calls."""
    found = []
    for path in sorted(
        (Path(__file__).resolve().parents[1] / "fixtures" / "workers_ai").glob("*.sse")
    ):
        lines = [line[6:] for line in path.read_text().splitlines() if line.startswith("data: {")]
        for n, payload in enumerate(lines):
            frame = json.loads(payload)
            choices = frame.get("choices")
            if frame.get("object") != "chat.completion.chunk" or not choices:
                continue
            usage = frame.get("usage")
            fast = (
                (
                    usage is None
                    or list(usage) == ["prompt_tokens", "completion_tokens", "total_tokens"]
                )
                and choices[0]["finish_reason"] is None
                and "tool_calls" not in choices[0]["delta"]
            )
            found.append((f"{path.stem} frame {n}", payload, fast))
    return found


ALL_CHUNKS = fixture_chunks() + CHUNKS
NEVER = re.compile(r"(?!)")


def outcome(
    reads: list[bytes], *, slow: bool, opens_thinking: bool = False
) -> tuple[dict[str, object], int]:
    """Each read's parts, tool calls and done, then the decoder's facts after flush(); and how
    often json.loads ran."""
    counts = {"loads": 0}
    loads = json.loads

    def counted_loads(*args: Any, **kwargs: Any) -> Any:
        counts["loads"] += 1
        return loads(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        if slow:
            patch.setattr(frames, "_PLAIN_CHUNK", NEVER)
            patch.setattr(upstream, "PLAIN_CHUNK_EVENT", NEVER)
        patch.setattr(json, "loads", counted_loads)  # the module frames calls it on
        decoder = UpstreamDecoder(opens_thinking=opens_thinking)
        results = [decoder.feed(read) for read in reads] + [decoder.flush()]
    facts = (
        "usage",
        "finish_reason",
        "unknown_finish_reason",
        "text_seen",
        "thinking_seen",
        "tool_calls_seen",
        "malformed",
        "done",
    )
    seen: dict[str, object] = {"reads": [(out.parts, out.tool_calls, out.done) for out in results]}
    seen.update({key: getattr(decoder.frames, key) for key in facts})
    return seen, counts["loads"]


@pytest.mark.parametrize("opens_thinking", [False, True], ids=["plain", "opens_thinking"])
@pytest.mark.parametrize(
    ("name", "payload", "fast"), ALL_CHUNKS, ids=[name for name, _, _ in ALL_CHUNKS]
)
def test_openai_fast_path_decodes_as_json_does(
    name: str, payload: str, fast: bool, opens_thinking: bool
) -> None:
    wire = f"data: {payload}\n\n".encode()
    before = b'data: {"response":"n"}\n\n'  # a native frame on its own fast path
    # Whole, split anywhere in two reads, after another frame and after it in the same read.
    splits = [[wire]] + [[wire[:at], wire[at:]] for at in range(1, len(wire))]
    for reads in [*splits, [before, wire], [before + wire]]:
        slow, _ = outcome(reads, slow=True, opens_thinking=opens_thinking)
        got, loads = outcome(reads, slow=False, opens_thinking=opens_thinking)
        assert got == slow, f"{name}: {payload!r} read as {reads!r}"
        if fast:
            assert loads == 0, f"{name} took the JSON path: {payload!r} read as {reads!r}"
        else:
            assert loads >= 1, f"{name} took the fast path: {payload!r}"


def test_openai_fast_path_covers_the_fixture_chunks() -> None:
    fixtures = fixture_chunks()
    assert sum(fast for _, _, fast in fixtures) == 12 and len(fixtures) == 21, [
        name for name, _, _ in fixtures
    ]


@pytest.mark.parametrize("opens_thinking", [False, True], ids=["plain", "opens_thinking"])
def test_openai_fast_path_keeps_state_across_a_stream(opens_thinking: bool) -> None:
    """All the chunks one after another, one read each and all in one read: think-tag state,
    *_seen, usage and finish carry over from frame to frame the same way on both paths."""
    wires = [f"data: {payload}\n\n".encode() for _, payload, _ in ALL_CHUNKS] + [
        b"data: [DONE]\n\n"
    ]
    for reads in (wires, [b"".join(wires)]):
        slow, slow_loads = outcome(reads, slow=True, opens_thinking=opens_thinking)
        got, loads = outcome(reads, slow=False, opens_thinking=opens_thinking)
        assert got == slow
        assert slow_loads - loads == sum(fast for _, _, fast in ALL_CHUNKS)


# The shapes that were superlinear (issue 22), decoded whole. How their time grows with their
# size is measured by bench/probes/decoder_linear.py --check (make bench), not bounded here in
# seconds: a clock bound measures the machine as much as the code (issue 44).


def test_one_long_line_in_small_reads_is_one_text_part() -> None:
    text = "x" * (1024 * 1024)
    wire = native(text) + b"data: [DONE]\n\n"
    decoder = UpstreamDecoder()
    parts = [
        part for i in range(0, len(wire), 1024) for part in decoder.feed(wire[i : i + 1024]).parts
    ]
    assert parts == [(TEXT, text)] and decoder.done


@pytest.mark.parametrize("end", [b"\r", b"\r\n", b"\n\r"])
def test_many_events_with_cr_line_ends_in_one_read_are_each_a_part(end: bytes) -> None:
    count = 8 * 1024
    wire = (b'data: {"response":"t"}' + end + end) * count + b"data: [DONE]" + end + end
    decoder = UpstreamDecoder()
    out = decoder.feed(wire)
    assert out.parts == [(TEXT, "t")] * count and decoder.done


@pytest.mark.parametrize(
    ("frames", "usage"),
    [
        # OpenAI's shape (Workers AI's, workers-ai-provider 3.1.13), then a trailing frame without it
        (
            [
                {
                    "usage": {
                        "prompt_tokens": 9,
                        "completion_tokens": 2,
                        "total_tokens": 11,
                        "prompt_tokens_details": {"cached_tokens": 6},
                    }
                },
                {
                    "response": "",
                    "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
                },
            ],
            {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11, "cached_tokens": 6},
        ),
        (
            [
                {
                    "response": "",
                    "usage": {
                        "prompt_tokens": 9,
                        "completion_tokens": 2,
                        "total_tokens": 11,
                        "cached_tokens": 0,
                    },
                }
            ],
            {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11, "cached_tokens": 0},
        ),
        (
            [
                {
                    "response": "",
                    "usage": {"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": True}},
                }
            ],
            {"prompt_tokens": 9},
        ),
        (
            [{"response": "", "usage": {"prompt_tokens": 9, "prompt_tokens_details": None}}],
            {"prompt_tokens": 9},
        ),
    ],
)
def test_cached_prompt_tokens_are_kept(frames: list[dict[str, Any]], usage: dict[str, int]) -> None:
    decoder = UpstreamDecoder()
    decoder.feed(
        b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in frames) + b"data: [DONE]\n\n"
    )
    assert decoder.frames.usage == usage


@pytest.mark.parametrize(
    ("frames", "usage"),
    [
        # OpenAI's shape (vLLM's for gpt-oss), then a trailing frame without it
        (
            [
                {
                    "usage": {
                        "prompt_tokens": 9,
                        "completion_tokens": 5,
                        "total_tokens": 14,
                        "completion_tokens_details": {"reasoning_tokens": 3},
                    }
                },
                {
                    "response": "",
                    "usage": {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14},
                },
            ],
            {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14, "reasoning_tokens": 3},
        ),
        (
            [{"response": "", "usage": {"prompt_tokens": 9, "reasoning_tokens": 0}}],
            {"prompt_tokens": 9, "reasoning_tokens": 0},
        ),
        (
            [
                {
                    "response": "",
                    "usage": {
                        "prompt_tokens": 9,
                        "completion_tokens_details": {"reasoning_tokens": -1},
                    },
                }
            ],
            {"prompt_tokens": 9},
        ),
        (
            [{"response": "", "usage": {"prompt_tokens": 9, "completion_tokens_details": None}}],
            {"prompt_tokens": 9},
        ),
    ],
)
def test_reasoning_tokens_are_kept(frames: list[dict[str, Any]], usage: dict[str, int]) -> None:
    decoder = UpstreamDecoder()
    decoder.feed(
        b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in frames) + b"data: [DONE]\n\n"
    )
    assert decoder.frames.usage == usage


# The batch path (UpstreamDecoder._plain_events) must decode exactly as the line path does,
# whatever precedes, follows or splits the plain frames it takes.
_BATCH_WIRE = (
    native("<thi")  # the think-tag scan first: no batch until it is done
    + native("nk>why</think>A")
    + b'data: {"response":" plain","tool_calls":[],"p":"abcdef"}\n\n'
    + b'data:{"response":" nospace"}\n\n'
    + b'data: {"response":""}\n\n'
    + b'data: {"response":" esc\\"aped"}\n\n'
    + b": a comment\n\n"
    + b'data: {"response":" after"}\n\n'
    + b'data: {"response":" crlf"}\r\n\r\n'
    + b'data: {"response":" two"}\ndata: {"response":" lines"}\n\n'
    + b'event: x\ndata: {"response":" named"}\n\n'
    + "".join(f'data: {{"response":" t{i}"}}\n\n' for i in range(30)).encode()
    + b'data: {"response":" \xc3\xa9t\xc3\xa9"}\n\n'
    + b'data: {"response":"","usage":{"prompt_tokens":3,"completion_tokens":40,"total_tokens":43}}\n\n'
    + b"data: [DONE]\n\n"
    + b'data: {"response":" never"}\n\n'
)


def _decoded(
    chunks: list[bytes], *, batch: bool
) -> tuple[list[tuple[str, str]], dict[str, object]]:
    decoder = UpstreamDecoder()
    if not batch:
        decoder._plain_events = lambda text, out: text  # type: ignore[method-assign]
    parts: list[tuple[str, str]] = []
    for chunk in chunks:
        parts.extend(decoder.feed(chunk).parts)
    parts.extend(decoder.flush().parts)
    frames = decoder.frames
    facts: dict[str, object] = {
        "done": frames.done,
        "usage": frames.usage,
        "malformed": frames.malformed,
        "text_seen": frames.text_seen,
        "thinking_seen": frames.thinking_seen,
    }
    return parts, facts


def test_the_batch_path_decodes_as_the_line_path_for_any_split() -> None:
    import random

    wire = _BATCH_WIRE
    expected = _decoded([wire], batch=False)
    assert any(text == " t29" for _, text in expected[0]), expected
    splits = [[wire]] + [[wire[:at], wire[at:]] for at in range(len(wire) + 1)]
    rng = random.Random(35)
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(wire)), rng.randint(2, 12)))
        splits.append([wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True)])
    for chunks in splits:
        got = _decoded(chunks, batch=True)
        assert got == expected, f"reads {[len(c) for c in chunks]}: {got} != {expected}"


def test_the_batch_path_takes_a_windowed_read_of_plain_frames() -> None:
    """A read of many plain frames goes through the batch path (not just the same result)."""
    decoder = UpstreamDecoder()
    decoder.feed(native("A"))  # past the think-tag scan
    taken: list[str] = []
    batch = decoder._plain_events

    def spy(text: str, out: Decoded) -> str:
        rest = batch(text, out)
        taken.append(text[: len(text) - len(rest)])
        return rest

    decoder._plain_events = spy  # type: ignore[method-assign]
    read = b"".join(
        b'data: {"response":" w%d","tool_calls":[],"p":"ab"}\n\n' % i for i in range(14)
    )
    out = decoder.feed(read)
    assert [t for _, t in out.parts] == [f" w{i}" for i in range(14)]
    assert taken == [read.decode()], taken


# The late-2026 stream (local/model.mjs [[shape:2026]]) on the batch path, against the JSON
# path, for any split: reasoning, heartbeats, usage on every delta, an escaped text (JSON path
# in the middle of a batch), the finish, the native tail, [DONE] and what follows it.
def _late_chunk(delta: str, n: int, extra: str = "") -> bytes:
    usage = f'"usage":{{"prompt_tokens":4,"completion_tokens":{n},"total_tokens":{4 + n}}}'
    return (
        "data: "
        + chunk(
            delta,
            f'}},"logprobs":null,"finish_reason":null,"stop_reason":null,'
            f'"token_ids":[{1000 + n}]}}],{usage},"p":"abc"{extra}}}',
        )
        + "\n\n"
    ).encode()


def _late_heartbeat(n: int) -> bytes:
    head = HEAD.split('"choices"')[0]
    usage = f'{{"prompt_tokens":4,"completion_tokens":{n},"total_tokens":{4 + n}}}'
    return f'data: {head}"choices":[],"usage":{usage}}}\n\n'.encode()


_LATE_WIRE = (
    _late_chunk(
        '"role":"assistant","content":""', 0, ',"prompt_token_ids":[1,2],"kv_transfer_params":null'
    )
    + b"".join(_late_chunk(f'"reasoning":" r{i}","content":null', i) for i in range(1, 4))
    + _late_heartbeat(3)
    + b"".join(_late_chunk(f'"content":" t{i}"', i) for i in range(4, 20))
    + _late_chunk('"content":" say \\"hi\\""', 20)
    + _late_heartbeat(20)
    + _late_chunk('"content":" <think>no</think> tag"', 21)
    + b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},'
    b'"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":21,"total_tokens":25}}\n\n'
    + b'data: {"response":"","usage":{"prompt_tokens":4,"completion_tokens":21,"total_tokens":25}}\n\n'
    + b"data: [DONE]\n\n"
    + _late_chunk('"content":" never"', 22)
)


@pytest.mark.parametrize("opens_thinking", [False, True], ids=["plain", "opens_thinking"])
def test_the_late_2026_stream_decodes_on_the_batch_path_as_json_does_for_any_split(
    opens_thinking: bool,
) -> None:
    import random

    wire = _LATE_WIRE
    expected, _ = outcome([wire], slow=True, opens_thinking=opens_thinking)
    texts = [text for reads in expected["reads"] for text in reads[0]]  # type: ignore[attr-defined]
    if not opens_thinking:  # else the text is thinking until its </think>
        assert ("thinking", " r3") in texts and ("text", " t19") in texts, texts
    assert expected["usage"] == {"prompt_tokens": 4, "completion_tokens": 21, "total_tokens": 25}
    splits = [[wire]] + [[wire[:at], wire[at:]] for at in range(1, len(wire))]
    rng = random.Random(42)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(wire)), rng.randint(2, 12)))
        splits.append([wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True)])
    # The JSON path's parts and facts are the same at every split (its own tests; checked over
    # every single split of this wire when this test was cut down): the batch path is held to
    # the whole stream's.
    want = [p for r in expected["reads"] for p in r[0]]  # type: ignore[attr-defined]
    facts = {k: v for k, v in expected.items() if k != "reads"}
    for reads in splits:
        got, _ = outcome(reads, slow=False, opens_thinking=opens_thinking)
        # The parts of each read may be grouped differently only where a read ends: compare
        # the parts in order, and every fact.
        flat = [p for r in got["reads"] for p in r[0]]  # type: ignore[attr-defined]
        assert flat == want, f"reads {[len(r) for r in reads]}: {flat} != {want}"
        assert {k: v for k, v in got.items() if k != "reads"} == facts, (
            f"reads {[len(r) for r in reads]}"
        )


def test_the_late_2026_stream_read_whole_takes_json_only_for_what_needs_it() -> None:
    """One windowed read of the whole stream: json.loads runs only for the escaped text, the
    finish and the native tail."""
    _, loads = outcome([_LATE_WIRE], slow=False)
    assert loads == 3, loads
