import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from cases import CASES

from base.errors import ApiError
from base.settings import load
from checks.chat_request import ChatRequest, parse_chat
from surface.body import check_content_type, parse_json, read_body

SETTINGS = load({"AI_MODELS": "@cf/a/one,@cf/b/two"}.get)


async def chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def parse(ctype: str | None, raw: bytes, declared: str | None = None) -> ChatRequest:
    async def go() -> ChatRequest:
        check_content_type(ctype)
        body = await read_body(chunks(raw[:10], raw[10:]), declared, SETTINGS.max_body_bytes)
        return parse_chat(parse_json(body), SETTINGS)

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("name", "ctype", "raw", "status", "code", "needle"), CASES, ids=[c[0] for c in CASES]
)
def test_each_bad_input(
    name: str, ctype: str | None, raw: bytes, status: int, code: str, needle: str
) -> None:
    with pytest.raises(ApiError) as info:
        parse(ctype, raw)
    assert (info.value.status, info.value.code) == (status, code)
    assert needle in info.value.message


def test_declared_length_over_limit_is_refused_before_reading() -> None:
    async def never() -> AsyncIterator[bytes]:
        raise AssertionError("body was read")
        yield b""

    with pytest.raises(ApiError) as info:
        asyncio.run(read_body(never(), "999999", 100))
    assert info.value.status == 413


def test_small_declared_length_is_not_trusted() -> None:
    with pytest.raises(ApiError) as info:
        asyncio.run(read_body(chunks(b"x" * 80, b"x" * 80), "5", 100))
    assert info.value.code == "body_too_large"


def test_valid_request_defaults_and_inputs() -> None:
    request = parse(
        "Application/JSON; charset=utf-8",
        b'{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}',
    )
    assert request == ChatRequest(
        model="@cf/a/one",
        messages=({"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}),
        max_tokens=1024,
        temperature=None,
    )
    assert request.ai_inputs() == {
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        "stream": True,
        "max_tokens": 1024,
    }


def test_valid_request_with_every_field() -> None:
    request = parse(
        "application/json",
        b'{"messages":[{"role":"user","content":"hi"}],"model":"@cf/b/two","max_tokens":4096,"temperature":0,"reasoning_effort":"low"}',
    )
    assert request.ai_inputs() == {
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "max_tokens": 4096,
        "temperature": 0.0,
        "reasoning_effort": "low",
    }
    assert request.model == "@cf/b/two"


def test_empty_assistant_turn_is_allowed() -> None:
    request = parse(
        "application/json",
        b'{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":""},{"role":"user","content":"b"}]}',
    )
    assert len(request.messages) == 3


@pytest.mark.parametrize(
    ("value", "sent"), [("low", "low"), ("medium", "medium"), ("high", "high"), (None, None)]
)
def test_reasoning_effort_goes_inside_the_inputs(value: str | None, sent: str | None) -> None:
    raw = json.dumps(
        {"messages": [{"role": "user", "content": "hi"}], "reasoning_effort": value}
    ).encode()
    assert parse("application/json", raw).ai_inputs().get("reasoning_effort") == sent


def test_lone_surrogates_in_content_reach_the_model_as_replacement_characters() -> None:
    raw = b'{"messages":[{"role":"user","content":"a\\ud83d b \\ude00 c \\ud83d\\ude00"}]}'
    from base.text import well_formed_json

    sent = well_formed_json(
        parse("application/json", raw).ai_inputs()
    )  # as app.open_upstream sends it
    assert sent["messages"][0]["content"] == "a\ufffd b \ufffd c \U0001f600"
    json.dumps(sent, ensure_ascii=False).encode()  # what goes upstream is UTF-8


def test_what_goes_upstream_is_json_as_the_model_reads_it() -> None:
    from base.text import well_formed_json

    value = {"a\ud800": [2**63, True, 1.5, None, {"x": "\udfff"}]}
    assert well_formed_json(value) == {"a\ufffd": [2**63, True, 1.5, None, {"x": "\ufffd"}]}
    assert isinstance(well_formed_json(True), bool)
