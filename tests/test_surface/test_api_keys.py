import pytest

from surface.api_keys import Keys, bearer, rate_key


def test_keys_are_comma_separated_and_blanks_ignored() -> None:
    keys = Keys.parse(" sk-one , ,sk-two,")
    assert len(keys.digests) == 2
    assert keys.match("sk-one") and keys.match("sk-two")
    assert not keys.match("sk-one ") and not keys.match("sk-on") and not keys.match("")


@pytest.mark.parametrize("raw", [None, "", " , ,"])
def test_no_keys_is_falsy(raw: str | None) -> None:
    assert not Keys.parse(raw)


def test_a_key_never_shows_in_repr_or_str() -> None:
    keys = Keys.parse("sk-secret-value")
    assert "sk-secret-value" not in repr(keys) and "sk-secret-value" not in str(keys)


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer sk-1", "sk-1"),
        ("bearer   sk-1  ", "sk-1"),
        ("Basic c2stMQ==", None),
        ("Bearer", None),
        ("Bearer ", None),
        ("sk-1", None),
    ],
)
def test_bearer(header: str, token: str | None) -> None:
    assert bearer({"authorization": header}) == token


def test_no_authorization_header() -> None:
    assert bearer({}) is None


def test_the_rate_key_of_a_key_does_not_contain_it() -> None:
    assert rate_key("sk-secret") == rate_key("sk-secret") != rate_key("sk-secret2")
    assert "sk-secret" not in rate_key("sk-secret") and rate_key("sk-secret").startswith("key:")
