"""The cl100k_base table (scripts/token-table.mjs, `make setup`) against tiktoken itself, loaded
offline from the same pinned js-tiktoken (conftest.cl100k): every token's bytes, whole texts,
characters cut between arrays, the special tokens, and every id that is not a token."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import tiktoken

from doors.embeddings.token_ids import (
    MAGIC,
    TABLE_FILE,
    TableError,
    TokenTable,
    UnknownToken,
    table,
)

TEXTS = [
    "Hello, world!",
    'quote " \\ édge 🌍',
    "日本語のテキストと한국어 텍스트",
    "  leading and trailing spaces  \n\n\ttabs\r\nCRLF",
    "def f(x):\n    return {'a': [1, 2, 3]}  # code",
    "emoji families 👩‍👩‍👧‍👦 and flags 🇫🇷, combining é (e + U+0301)",
    "\x00 control \x7f and U+FFFD \ufffd itself",
]
GAPS = [100256, *range(100261, 100276)]  # ids in cl100k_base's range that name no token


def test_every_token_is_tiktokens(cl100k: tiktoken.Encoding) -> None:
    loaded = table()
    assert loaded.count == cl100k.max_token_value + 1 == 100277
    differ = []
    for token_id in range(loaded.count):
        try:
            want = cl100k.decode_single_token_bytes(token_id)
        except KeyError:
            want = b""
        if loaded.token(token_id) != want:
            differ.append((token_id, loaded.token(token_id), want))
    assert not differ, f"{len(differ)} tokens differ from tiktoken's, first: {differ[:3]}"
    assert [t for t in range(loaded.count) if not loaded.token(t)] == GAPS


@pytest.mark.parametrize("text", TEXTS)
def test_a_text_comes_back_exactly(cl100k: tiktoken.Encoding, text: str) -> None:
    ids = cl100k.encode_ordinary(text)
    assert table().decode(list(ids)) == text


def test_hello_world_by_its_ids(cl100k: tiktoken.Encoding) -> None:
    assert cl100k.encode_ordinary("Hello, world!") == [9906, 11, 1917, 0]
    assert table().decode([9906, 11, 1917, 0]) == "Hello, world!"


def test_a_character_cut_between_arrays_is_replaced_as_tiktoken_does(
    cl100k: tiktoken.Encoding,
) -> None:
    ids = cl100k.encode_ordinary("a🌍b")
    assert len(ids) > 2, ids  # the emoji's four bytes are more than one token
    for cut in range(1, len(ids)):
        head, tail = ids[:cut], ids[cut:]
        assert table().decode(list(head)) == cl100k.decode(head)
        assert table().decode(list(tail)) == cl100k.decode(tail)
    assert "\ufffd" in table().decode(list(ids[:2]))


def test_the_special_tokens_are_their_text(cl100k: tiktoken.Encoding) -> None:
    for text in ("<|endoftext|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|endofprompt|>"):
        ids = cl100k.encode(text, allowed_special="all")
        assert len(ids) == 1 and table().decode(list(ids)) == text == cl100k.decode(ids)


@pytest.mark.parametrize(
    ("ids", "position", "value"),
    [
        ([9906, 100256], 1, 100256),
        ([100261], 0, 100261),
        ([100275], 0, 100275),
        ([1, 2, 100277], 2, 100277),
        ([-1], 0, -1),
        ([2**40], 0, 2**40),
        ([True], 0, True),
        ([1, 1.0], 1, 1.0),
        (["1"], 0, "1"),
        ([None], 0, None),
        ([[1]], 0, [1]),
    ],
)
def test_what_is_not_a_token_id(ids: list[object], position: int, value: object) -> None:
    with pytest.raises(UnknownToken) as caught:
        table().decode(ids)
    assert (caught.value.position, caught.value.value) == (position, value)
    assert type(caught.value.value) is type(value)


def test_a_missing_or_damaged_table(tmp_path: Path) -> None:
    with pytest.raises(TableError, match=r"missing.*make setup"):
        table(tmp_path / "cl100k_base.bin")
    blob = TABLE_FILE.read_bytes()
    assert blob[:8] == MAGIC
    for damaged, why in [
        (b"", "not a cl100k_base token table"),
        (b"gpt2\0\0\0\0" + blob[8:], "not a cl100k_base token table"),
        (blob[:16] + blob[16:1000], "cut short"),
        (blob[:-1], "do not match"),
        (blob + b"x", "do not match"),
        (MAGIC + struct.pack("<II", 0, 0), "cut short"),
    ]:
        with pytest.raises(TableError, match=why):
            TokenTable(damaged)


def test_the_table_is_read_once(tmp_path: Path) -> None:
    copy = tmp_path / "copy.bin"
    copy.write_bytes(TABLE_FILE.read_bytes())
    first = table(copy)
    copy.unlink()
    assert table(copy) is first and first.decode([9906]) == "Hello"
