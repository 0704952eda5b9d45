import json

import pytest

from upstream import TEXT, UpstreamDecoder


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
    frame = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(frame).encode() + b"\n\n"


USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}

STREAMS: dict[str, tuple[bytes, list[str], dict[str, object]]] = {
    "native": (
        native("Hel") + native("lo ") + native("wörld 🌍") + native("", usage=USAGE) + b"data: [DONE]\n\n",
        ["Hel", "lo ", "wörld 🌍"],
        {"usage": USAGE, "finish_reason": None, "done": True},
    ),
    "openai": (
        b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n'
        + openai("Hi")
        + openai(" there")
        + openai(None, "length")
        + b"data: " + json.dumps({"choices": [], "usage": USAGE}).encode() + b"\n\n"
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
}


def check(name: str, chunks: list[bytes]) -> None:
    _, expected_texts, facts = STREAMS[name]
    texts, decoder, done = run(chunks)
    assert texts == expected_texts, chunks
    assert done is facts["done"]
    for key in ("usage", "finish_reason", "malformed"):
        if key in facts:
            assert getattr(decoder, key) == facts[key]


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
    assert decoder.malformed == 0 and done
    assert texts == ["a\ufffd"]


def test_usage_keeps_only_integer_counts() -> None:
    texts, decoder, _ = run([b'data: {"response":"","usage":{"prompt_tokens":1,"total_tokens":"x","extra":2,"completion_tokens":true}}\n\n'])
    assert texts == []
    assert decoder.usage == {"prompt_tokens": 1}


def decode(wire: bytes, *, opens_thinking: bool = False) -> tuple[list[tuple[str, str]], UpstreamDecoder]:
    decoder = UpstreamDecoder(opens_thinking=opens_thinking)
    parts = decoder.feed(wire).parts
    return parts + decoder.flush().parts, decoder


def data(frame: object) -> bytes:
    return b"data: " + json.dumps(frame).encode() + b"\n\n"


def usage_frame(prompt: int, completion: int) -> bytes:
    return data({"response": "", "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}})


@pytest.mark.parametrize(
    ("frames", "expected"),
    [
        ([usage_frame(0, 0)], {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}),
        ([usage_frame(0, 0), usage_frame(5, 2)], {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}),
        ([usage_frame(5, 2), usage_frame(0, 0)], {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}),
        ([usage_frame(5, 1), usage_frame(5, 2), usage_frame(5, 3)], {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}),
        ([usage_frame(5, 3), data({"choices": [], "usage": {"completion_tokens": 0}})], {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}),
    ],
    ids=["zero alone is kept", "real after zero", "zero never overwrites", "cumulative: latest, never summed", "partial zero"],
)
def test_usage_rules(frames: list[bytes], expected: dict[str, int]) -> None:
    _, decoder = decode(b"".join(frames))
    assert decoder.usage == expected


@pytest.mark.parametrize(
    ("raw", "mapped", "unknown"),
    [
        ("stop", "stop", None), ("eos", "stop", None), ("end_turn", "stop", None), ("length", "length", None),
        ("max_tokens", "length", None), ("model_length", "length", None), ("tool_calls", "tool_calls", None),
        ("function_call", "tool_calls", None), ("content_filter", "content_filter", None), ("weird", "stop", "weird"),
    ],
)
def test_finish_reasons_map_to_a_documented_set(raw: str, mapped: str, unknown: str | None) -> None:
    _, decoder = decode(data({"choices": [{"delta": {}, "finish_reason": raw}]}))
    assert (decoder.finish_reason, decoder.unknown_finish_reason) == (mapped, unknown)


def test_reasoning_fields_relayed_once_when_equal_and_both_when_not() -> None:
    same = data({"choices": [{"delta": {"reasoning_content": "a", "reasoning": "a", "content": None}}]})
    other = data({"choices": [{"delta": {"reasoning_content": "b", "reasoning": "c", "content": "d"}}]})
    parts, decoder = decode(same + other)
    assert parts == [("thinking", "a"), ("thinking", "b"), ("thinking", "c"), ("text", "d")]
    assert decoder.thinking_seen and decoder.text_seen


@pytest.mark.parametrize("at", range(0, 4))
def test_a_leading_bom_is_stripped_wherever_the_read_splits(at: int) -> None:
    wire = "\ufeffdata: {\"response\":\"a\"}\n\ndata: [DONE]\n\n".encode()
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
    import upstream

    assert upstream._ONE_PLAIN_FRAME.fullmatch(frame.decode()) is not None
    assert decode(frame)[0] == [("text", "a")]
