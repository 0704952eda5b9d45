from surface.rate_limit import RETRY_AFTER_SECONDS, address_key, rate_limited


def test_the_address_is_cf_connecting_ip() -> None:
    assert address_key({"cf-connecting-ip": "203.0.113.7"}) == "ip:203.0.113.7"


def test_without_an_address_all_share_one_bucket() -> None:
    assert address_key({}) == address_key({"x-forwarded-for": "1.2.3.4"}) == "ip:unknown"


def test_rate_limited_is_429_with_retry_after() -> None:
    error = rate_limited()
    assert (error.status, error.code) == (429, "rate_limited")
    assert error.headers == (("retry-after", str(RETRY_AFTER_SECONDS)),)
