from __future__ import annotations

import pytest

from base import page
from base.settings import SettingsError, load

PROMPT = "You are the shop's helper."


def test_unset_the_title_is_ai_chat_and_there_is_no_prompt_nor_suggestions() -> None:
    s = load(lambda _: None)
    assert (s.chat_title, s.system_prompt, s.chat_suggestions) == ("AI chat", "", ())


def test_the_owners_settings_are_read_trimmed_and_split() -> None:
    vars = {
        "CHAT_TITLE": " Shop chat ",
        "SYSTEM_PROMPT": f" {PROMPT}\n",
        "CHAT_SUGGESTIONS": "a | b||c ",
    }
    s = load(vars.get)
    assert (s.chat_title, s.system_prompt, s.chat_suggestions) == (
        "Shop chat",
        PROMPT,
        ("a", "b", "c"),
    )


@pytest.mark.parametrize(
    ("var", "value", "said"),
    [
        ("CHAT_TITLE", "x" * 81, "CHAT_TITLE='xxxx"),
        ("SYSTEM_PROMPT", "x" * 20_001, "at most 20000"),
        ("CHAT_SUGGESTIONS", "|".join("abcdefg"), "has 7; at most 6"),
        ("CHAT_SUGGESTIONS", "x" * 201, "longer than 200"),
    ],
)
def test_a_value_out_of_bounds_is_a_misconfiguration_naming_the_var(
    var: str, value: str, said: str
) -> None:
    with pytest.raises(SettingsError, match=var) as caught:
        load({var: value}.get)
    assert said in str(caught.value)


def test_the_prompt_goes_first_only_where_there_is_no_system_message() -> None:
    user = {"role": "user", "content": "hi"}
    own = {"role": "system", "content": "mine"}
    assert page.with_system_prompt({"messages": [user]}, PROMPT) == {
        "messages": [{"role": "system", "content": PROMPT}, user]
    }
    assert page.with_system_prompt({"messages": [own, user]}, PROMPT) == {"messages": [own, user]}
    assert page.with_system_prompt({"messages": [user]}, "") == {"messages": [user]}
    assert page.with_system_prompt({"text": ["x"]}, PROMPT) == {"text": ["x"]}
