"""GET /api/v1/health: answers with the kill switch on and the settings broken, names bindings only."""

from __future__ import annotations

import json

from health import health
from settings import Lookup


def env(**values: str) -> Lookup:
    return values.get


def test_healthy() -> None:
    response = health("GET", env(ENVIRONMENT="production"), ["RATE_LIMITER", "AI"])
    assert response.status == 200
    assert json.loads(response.body) == {  # type: ignore[arg-type]
        "status": "ok",
        "version": "0.2.0",
        "environment": "production",
        "kill_switch": "off",
        "settings": "ok",
        "bindings": ["AI", "RATE_LIMITER"],
        "catalog": "static",
    }
    assert ("cache-control", "no-store") in response.headers


def test_kill_switch_on_still_answers() -> None:
    body = json.loads(health("GET", env(AI_CHAT_DISABLED="1"), []).body)  # type: ignore[arg-type]
    assert (body["status"], body["kill_switch"], body["environment"]) == (
        "disabled",
        "on",
        "unknown",
    )


def test_broken_settings_are_reported_without_their_values() -> None:
    response = health("GET", env(AI_MODELS="a", AI_DEFAULT_MODEL="secret-looking-value"), ["AI"])
    body = json.loads(response.body)  # type: ignore[arg-type]
    assert (response.status, body["status"], body["settings"]) == (200, "misconfigured", "invalid")
    assert b"secret-looking-value" not in response.body  # type: ignore[operator]


def test_other_methods_are_405() -> None:
    for method in ("POST", "PUT", "DELETE"):
        response = health(method, env(), [])
        assert (response.status, json.loads(response.body)["error"]) == (405, "method_not_allowed")  # type: ignore[arg-type]
        assert ("allow", "GET, HEAD, OPTIONS") in response.headers


def test_head_is_get_without_the_body() -> None:
    get, head = (health(method, env(ENVIRONMENT="x"), ["AI"]) for method in ("GET", "HEAD"))
    assert isinstance(get.body, bytes)
    assert (head.status, head.body) == (200, b"")
    assert head.headers == get.headers


def test_options_is_204_with_allow() -> None:
    response = health("OPTIONS", env(), [])
    assert (response.status, response.body) == (204, b"")
    assert ("allow", "GET, HEAD, OPTIONS") in response.headers


def test_health_answers_carry_the_api_headers() -> None:
    for method in ("GET", "HEAD", "OPTIONS", "POST"):
        no_vars: dict[str, str] = {}
        response = health(method, no_vars.get, ["AI"])
        assert ("x-content-type-options", "nosniff") in response.headers, (method, response.headers)
        assert ("vary", "Origin") in response.headers, (method, response.headers)
