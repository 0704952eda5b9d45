"""GET /api/v1/health: answers with the kill switch on and the settings broken, names bindings only."""

from __future__ import annotations

import asyncio
import json

from fakes import FakeModel, no_body

from base.settings import Lookup
from routes import TABLE
from surface import policy
from surface.census import STATS_PATH
from surface.health import PATH, health
from surface.web import WebRequest, WebResponse


def env(**values: str) -> Lookup:
    return values.get


RUNTIME: dict[str, str | None] = {"python": "3.14.2", "pyodide": "314.0.4"}


def test_healthy() -> None:
    response = health(env(ENVIRONMENT="production"), ["RATE_LIMITER", "AI"], RUNTIME)
    assert response.status == 200
    assert json.loads(response.body) == {  # type: ignore[arg-type]
        "status": "ok",
        "version": "0.2.0",
        "environment": "production",
        "kill_switch": "off",
        "settings": "ok",
        "bindings": ["AI", "RATE_LIMITER"],
        "catalog": "static",
        "runtime": {"python": "3.14.2", "pyodide": "314.0.4"},
    }
    assert ("cache-control", "no-store") in response.headers


def test_kill_switch_on_still_answers() -> None:
    body = json.loads(health(env(AI_CHAT_DISABLED="1"), [], RUNTIME).body)  # type: ignore[arg-type]
    assert (body["status"], body["kill_switch"], body["environment"]) == (
        "disabled",
        "on",
        "unknown",
    )


def test_broken_settings_are_reported_without_their_values() -> None:
    response = health(env(AI_MODELS="a", AI_DEFAULT_MODEL="secret-looking-value"), ["AI"], RUNTIME)
    body = json.loads(response.body)  # type: ignore[arg-type]
    assert (response.status, body["status"], body["settings"]) == (200, "misconfigured", "invalid")
    assert b"secret-looking-value" not in response.body  # type: ignore[operator]


def test_a_bad_access_domain_or_budget_is_a_misconfiguration() -> None:
    for bad in (
        env(ACCESS_TEAM_DOMAIN="team", ACCESS_AUD="a"),
        env(OWNER_DAILY_TOKENS="lots"),
    ):
        body = json.loads(health(bad, ["AI"], RUNTIME).body)  # type: ignore[arg-type]
        assert (body["status"], body["settings"]) == ("misconfigured", "invalid"), body


class Shell:
    def binding_names(self) -> list[str]:
        return ["AI"]

    def runtime_stats(self) -> dict[str, object]:
        return {"live": 0}

    def runtime(self) -> dict[str, str | None]:
        return RUNTIME


def through_the_table(path: str, method: str = "GET", **values: str) -> WebResponse:
    """A request through policy.handle and the Worker's one route table, as the shell sends it."""
    request = WebRequest(
        method=method, url="https://w" + path, path=path, headers={}, body=no_body()
    )
    return asyncio.run(
        policy.handle(request, env(**values), FakeModel([]), TABLE, limiter=None, shell=Shell())
    )


def test_health_is_in_the_table_and_answers_before_the_kill_switch() -> None:
    response = through_the_table(PATH, AI_CHAT_DISABLED="1", API_KEYS="k1:" + "a" * 32)
    assert response.status == 200, response.body
    assert json.loads(response.body)["bindings"] == ["AI"]  # type: ignore[arg-type]


def test_the_local_stats_route_is_found_only_in_local_runs() -> None:
    hidden = through_the_table(STATS_PATH)
    assert (hidden.status, hidden.code) == (404, "not_found"), hidden.body
    shown = through_the_table(STATS_PATH, LOCAL_DEV_STATS="1")
    assert (shown.status, json.loads(shown.body)) == (200, {"live": 0}), shown.body  # type: ignore[arg-type]


def test_other_methods_are_405() -> None:
    for method in ("POST", "PUT", "DELETE"):
        response = through_the_table(PATH, method)
        assert (response.status, response.code) == (405, "method_not_allowed"), method
        assert ("allow", "GET, HEAD, OPTIONS") in response.headers


def test_head_is_get_without_the_body() -> None:
    get, head = (through_the_table(PATH, method, ENVIRONMENT="x") for method in ("GET", "HEAD"))
    assert isinstance(get.body, bytes) and get.body
    assert (head.status, head.body) == (200, b"")
    assert head.headers == get.headers


def test_options_is_204_with_allow() -> None:
    response = through_the_table(PATH, "OPTIONS")
    assert (response.status, response.body) == (204, b"")
    assert ("allow", "GET, HEAD, OPTIONS") in response.headers


def test_health_answers_carry_the_api_headers() -> None:
    for method in ("GET", "HEAD", "OPTIONS", "POST"):
        response = through_the_table(PATH, method)
        assert ("x-content-type-options", "nosniff") in response.headers, (method, response.headers)
        assert ("vary", "Origin") in response.headers, (method, response.headers)
        assert len(response.headers) == len(set(response.headers)), f"repeated: {response.headers}"
