import asyncio
from collections.abc import AsyncIterator

import pytest
from fakes import FakeLimiter

from base.errors import ApiError
from surface.api_keys import rate_key
from surface.guard import KEY_ONLY, OPEN, PAGE_OR_KEY, Access, from_own_page, guard
from surface.web import WebRequest

URL = "https://chat.example.dev/api/v1/chat"
KEYS = {"API_KEYS": "sk-alpha,sk-beta"}
NO_KEYS: dict[str, str] = {}


async def no_body() -> AsyncIterator[bytes]:
    raise AssertionError("the guard read the body")
    yield b""  # pragma: no cover


def req(**headers: str) -> WebRequest:
    return WebRequest(method="POST", url=URL, path="/api/v1/chat", headers=headers, body=no_body())


def run(
    request: WebRequest,
    access: Access | None = PAGE_OR_KEY,
    env: dict[str, str] = KEYS,
    limiter: FakeLimiter | None = None,
    metered: bool = True,
) -> ApiError | None:
    return asyncio.run(
        guard(
            request, access=access, metered=metered, env=env.get, limiter=limiter or FakeLimiter()
        )
    )[0]


def test_the_valid_key_is_returned_once_checked_and_only_then() -> None:
    def key(request: WebRequest, access: Access | None) -> str | None:
        return asyncio.run(
            guard(request, access=access, metered=True, env=KEYS.get, limiter=FakeLimiter())
        )[1]

    assert key(req(authorization="Bearer sk-alpha"), PAGE_OR_KEY) == "sk-alpha"
    assert key(req(authorization="Bearer sk-wrong"), PAGE_OR_KEY) is None
    assert key(req(authorization="Bearer sk-alpha"), None) is None  # an open route checks none


def status(error: ApiError | None) -> tuple[int, str] | None:
    return None if error is None else (error.status, error.code)


@pytest.mark.parametrize(
    ("headers", "own"),
    [
        ({"sec-fetch-site": "same-origin"}, True),
        ({"origin": "https://chat.example.dev"}, True),
        ({"sec-fetch-site": "cross-site", "origin": "https://evil.example"}, False),
        ({"sec-fetch-site": "same-site", "origin": "https://sub.chat.example.dev"}, False),
        (
            {"referer": "https://chat.example.dev/"},
            False,
        ),  # a script can choose its Referer path; never trusted
        ({"origin": "null"}, False),
        ({"origin": "http://chat.example.dev"}, False),  # another scheme is another origin
        ({}, False),
    ],
)
def test_from_own_page(headers: dict[str, str], own: bool) -> None:
    assert from_own_page(req(**headers)) is own


def test_without_keys_everything_passes_and_counts_by_address() -> None:
    limiter = FakeLimiter()
    for access in (KEY_ONLY, PAGE_OR_KEY, OPEN):
        assert run(req(**{"cf-connecting-ip": "203.0.113.9"}), access, {}, limiter) is None
    # A token that no key list checks counts for nothing: it cannot pick its own bucket.
    assert (
        run(
            req(authorization="Bearer made-up", **{"cf-connecting-ip": "203.0.113.9"}),
            KEY_ONLY,
            {},
            limiter,
        )
        is None
    )
    assert limiter.keys == ["ip:203.0.113.9"] * 4


@pytest.mark.parametrize("access", [KEY_ONLY, PAGE_OR_KEY])
def test_a_valid_key_passes_and_counts_by_key(access: Access) -> None:
    limiter = FakeLimiter()
    assert (
        run(
            req(authorization="Bearer sk-beta", **{"cf-connecting-ip": "203.0.113.9"}),
            access,
            limiter=limiter,
        )
        is None
    )
    assert limiter.keys == [rate_key("sk-beta")]


def test_key_only_refuses_missing_and_wrong_keys_even_from_the_page() -> None:
    for headers in ({}, {"sec-fetch-site": "same-origin"}, {"authorization": "Bearer sk-gamma"}):
        assert status(run(req(**headers), KEY_ONLY)) == (401, "invalid_api_key")


def test_page_or_key_lets_the_page_in_without_a_key() -> None:
    limiter = FakeLimiter()
    assert (
        run(
            req(**{"sec-fetch-site": "same-origin", "cf-connecting-ip": "198.51.100.1"}),
            limiter=limiter,
        )
        is None
    )
    assert limiter.keys == ["ip:198.51.100.1"]
    assert status(run(req(origin="https://evil.example"))) == (401, "unauthorized")
    assert status(run(req(referer="https://chat.example.dev/"))) == (401, "unauthorized")
    # A wrong key is refused even from the page: a client that sends one means to use it.
    assert status(run(req(authorization="Bearer nope", **{"sec-fetch-site": "same-origin"}))) == (
        401,
        "unauthorized",
    )


def test_a_refusal_never_contains_a_key() -> None:
    for headers in ({"authorization": "Bearer sk-alph"}, {"authorization": "Bearer sk-alpha2"}, {}):
        error = run(req(**headers), KEY_ONLY)
        assert error is not None and ("sk-" not in error.message and "sk-" not in repr(error)), (
            error
        )
        assert error.headers == (("www-authenticate", "Bearer"),)


def test_open_routes_need_no_key() -> None:
    assert run(req(), OPEN, metered=False) is None


def test_over_the_limit_is_429_per_bucket() -> None:
    limiter = FakeLimiter(limit=2)
    a, b = {"cf-connecting-ip": "192.0.2.1"}, {"cf-connecting-ip": "192.0.2.2"}
    assert [status(run(req(**a), OPEN, limiter=limiter)) for _ in range(3)] == [
        None,
        None,
        (429, "rate_limited"),
    ]
    assert status(run(req(**b), OPEN, limiter=limiter)) is None


def test_unmetered_routes_never_ask_the_limiter() -> None:
    limiter = FakeLimiter(limit=0)
    assert (
        run(req(authorization="Bearer sk-alpha"), KEY_ONLY, limiter=limiter, metered=False) is None
    )
    assert limiter.keys == []


def test_a_missing_limiter_is_a_500_never_open() -> None:
    error, _ = asyncio.run(guard(req(), access=OPEN, metered=True, env=NO_KEYS.get, limiter=None))
    assert status(error) == (500, "server_misconfigured")
    assert asyncio.run(guard(req(), access=OPEN, metered=False, env=NO_KEYS.get, limiter=None)) == (
        None,
        None,
    )


def test_the_key_check_comes_before_the_limiter() -> None:
    limiter = FakeLimiter()
    assert status(run(req(), KEY_ONLY, limiter=limiter)) == (401, "invalid_api_key")
    assert limiter.keys == []


def test_reads_are_counted_on_their_own_limiter_per_key_or_address() -> None:
    model, reads = FakeLimiter(), FakeLimiter(limit=1)

    def read(**headers: str) -> ApiError | None:
        return asyncio.run(
            guard(
                req(**headers),
                access=PAGE_OR_KEY,
                metered=False,
                env=KEYS.get,
                limiter=model,
                key_limiter=model,
                reads=True,
                read_limiter=reads,
            )
        )[0]

    page = {"sec-fetch-site": "same-origin", "cf-connecting-ip": "192.0.2.7"}
    assert [status(read(**page)) for _ in range(2)] == [None, (429, "rate_limited")]
    assert status(read(authorization="Bearer sk-alpha")) is None
    assert reads.keys == ["ip:192.0.2.7", "ip:192.0.2.7", rate_key("sk-alpha")]
    assert model.keys == []  # a read never spends the model's budget
    assert status(read(authorization="Bearer nope")) == (401, "unauthorized")
    assert len(reads.keys) == 3  # the key check comes first


def test_a_missing_read_limiter_is_a_500_never_open() -> None:
    error, _ = asyncio.run(
        guard(req(), access=OPEN, metered=False, env=NO_KEYS.get, limiter=FakeLimiter(), reads=True)
    )
    assert status(error) == (500, "server_misconfigured")
