import pytest
from fakes import merged

from streaming.think_tags import TEXT, THINKING, Part, ThinkTags


def run(pieces: list[str], *, thinking: bool) -> list[Part]:
    tags = ThinkTags(thinking=thinking)
    return merged([part for piece in pieces for part in tags.feed(piece)] + tags.flush())


# (model text, starts inside <think>?, parts)
CASES: list[tuple[str, bool, list[Part]]] = [
    ("plain answer", False, [(TEXT, "plain answer")]),
    ("  <think>\nhm</think>\n\nA", False, [(THINKING, "hm"), (TEXT, "A")]),
    ("<think>hm</think>", False, [(THINKING, "hm")]),
    ("hm\n</think>\n\nA </think> b", True, [(THINKING, "hm\n"), (TEXT, "A </think> b")]),
    ("<think>\nhm</think>A", True, [(THINKING, "hm"), (TEXT, "A")]),
    ("x <think> y", False, [(TEXT, "x <think> y")]),
    ("<thinking>", False, [(TEXT, "<thinking>")]),
    ("<thi", False, [(TEXT, "<thi")]),
    ("hm </thi", True, [(THINKING, "hm </thi")]),
    ("a < b </ c", True, [(THINKING, "a < b </ c")]),
    ("   ", False, [(TEXT, "   ")]),
    ("", True, []),
    ("\n\n", True, []),
]


@pytest.mark.parametrize(("text", "thinking", "expected"), CASES)
def test_every_split(text: str, thinking: bool, expected: list[Part]) -> None:
    assert run([text], thinking=thinking) == expected
    for a in range(len(text) + 1):
        assert run([text[:a], text[a:]], thinking=thinking) == expected, a
        for b in range(a, len(text) + 1):
            assert run([text[:a], text[a:b], text[b:]], thinking=thinking) == expected, (a, b)


def test_idle_once_the_answer_has_begun() -> None:
    tags = ThinkTags(thinking=False)
    assert not tags.idle
    tags.feed("Hi")
    assert tags.idle
    tags = ThinkTags(thinking=True)
    tags.feed("hm</think>")
    assert not tags.idle  # whitespace after the tag is still to be trimmed
    tags.feed("\nA")
    assert tags.idle
