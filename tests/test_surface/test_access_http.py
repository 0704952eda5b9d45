"""Cloudflare Access on workerd: real RS256 tokens, checked with WebCrypto against the keys of a
local certs server (standing in for <team>.cloudflareaccess.com). A valid token passes; each
broken one is 401 access_denied naming its check; a rotated key is fetched once; two people
never see each other's conversations or stored responses; API keys still work beside it."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from access_certs import AUD, CertsServer, Key, claims, token
from conftest import Runtime, start_runtime

pytestmark = pytest.mark.runtime

API_KEY = "access-test-key-" + secrets.token_hex(8)
ADA = "7335d417-61da-459d-899c-0a01c76a2f94"
BOB = "0c3f5a4e-2b1d-4e8f-9a6b-5d7c8e9f0a1b"


@pytest.fixture(scope="module")
def team() -> Iterator[CertsServer]:
    server = CertsServer([Key("k1")])
    yield server
    server.stop()


@pytest.fixture(scope="module")
def rt(team: CertsServer) -> Iterator[Runtime]:
    runtime = start_runtime(
        vars={"ACCESS_TEAM_DOMAIN": team.team, "ACCESS_AUD": AUD, "API_KEYS": API_KEY}
    )
    yield runtime
    runtime.stop()


def person(team: CertsServer, sub: str = ADA, email: str = "ada@example.com") -> dict[str, str]:
    raw = token(team.keys[0], claims(team.team, sub=sub, email=email))
    return {"cf-access-jwt-assertion": raw, "sec-fetch-site": "same-origin"}


def chat(rt: Runtime, headers: dict[str, str]) -> httpx.Response:
    body = {"messages": [{"role": "user", "content": "[[pace:0]] hi"}], "max_tokens": 3}
    return httpx.post(rt.url + "/api/v1/chat", headers=headers, json=body, timeout=30)


def test_a_valid_token_passes_and_health_needs_none(rt: Runtime, team: CertsServer) -> None:
    assert chat(rt, person(team)).status_code == 200
    listed = httpx.get(rt.url + "/api/v1/models", headers=person(team), timeout=10).json()
    assert listed["signed_in"] == {"email": "ada@example.com"} and "daily_tokens" not in listed
    usage = httpx.get(rt.url + "/api/v1/usage", headers=person(team), timeout=10).json()
    assert (usage["owner"], usage["signed_in"], usage["used"]) == (
        "access",
        {"email": "ada@example.com"},
        None,
    )
    openai = {
        "model": "@cf/google/gemma-4-26b-a4b-it",
        "messages": [{"role": "user", "content": "hi"}],
    }
    response = httpx.post(
        rt.url + "/v1/chat/completions", headers=person(team), json=openai, timeout=30
    )
    assert response.status_code == 200, response.text
    assert httpx.get(rt.url + "/api/v1/health").status_code == 200
    assert httpx.get(rt.url + "/").status_code == 200  # the page's files: Access guards them


def test_every_broken_token_is_401_access_denied(rt: Runtime, team: CertsServer) -> None:
    key = team.keys[0]
    now = int(time.time())
    cases: dict[str, tuple[str | None, str]] = {
        "missing header": (None, "header is missing"),
        "malformed": ("not-a-token", "not a JWT"),
        "expired": (token(key, claims(team.team, exp=now - 120)), "expired (exp)"),
        "not yet valid": (token(key, claims(team.team, nbf=now + 600)), "not valid yet (nbf)"),
        "wrong aud": (token(key, claims(team.team, aud=["someone-else"])), "aud"),
        "wrong iss": (token(key, claims("https://other.cloudflareaccess.com")), "iss"),
        "wrong key": (token(Key("k1"), claims(team.team)), "signature does not verify"),
        "alg none": (token(key, claims(team.team), alg="none"), "alg 'none'"),
        "HS256": (token(key, claims(team.team), alg="HS256"), "alg 'HS256'"),
    }
    calls = len(rt.calls())
    for name, (raw, says) in cases.items():
        headers = {"sec-fetch-site": "same-origin"}
        if raw is not None:
            headers["cf-access-jwt-assertion"] = raw
        for method, path in (("POST", "/api/v1/chat"), ("GET", "/v1/models")):
            body = {"messages": [{"role": "user", "content": "hi"}]} if method == "POST" else None
            response = httpx.request(method, rt.url + path, headers=headers, json=body, timeout=10)
            assert response.status_code == 401, (name, path, response.text)
            text = response.text
            assert "access_denied" in text and says in text, (name, path, text)
    assert len(rt.calls()) == calls, "a refused request reached the model"


def test_an_api_key_works_beside_access(rt: Runtime) -> None:
    response = httpx.get(
        rt.url + "/v1/models", headers={"authorization": f"Bearer {API_KEY}"}, timeout=10
    )
    assert response.status_code == 200, response.text
    wrong = httpx.get(rt.url + "/v1/models", headers={"authorization": "Bearer nope"}, timeout=10)
    assert wrong.status_code == 401 and "invalid_api_key" in wrong.text


def test_a_rotated_key_is_fetched_once(rt: Runtime, team: CertsServer) -> None:
    assert chat(rt, person(team)).status_code == 200
    before = team.fetches
    new = Key("k2")
    team.keys = [new, *team.keys]  # the new key signs from now on (person() uses keys[0])
    deadline = time.monotonic() + 120
    statuses = []
    while True:  # unknown kids are fetched at most once per REFETCH_SECONDS
        response = chat(rt, person(team))
        statuses.append(response.status_code)
        if response.status_code == 200 or time.monotonic() > deadline:
            break
        assert "kid is not one of the team's keys" in response.text, response.text
        time.sleep(0.5)
    assert statuses[-1] == 200, statuses
    assert chat(rt, person(team)).status_code == 200
    assert team.fetches == before + 1, (before, team.fetches)


def create(rt: Runtime, who: dict[str, str]) -> str:
    response = httpx.post(rt.url + "/api/v1/conversations", headers=who, timeout=10)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def listed(rt: Runtime, who: dict[str, str]) -> list[str]:
    response = httpx.get(rt.url + "/api/v1/conversations?limit=100", headers=who, timeout=10)
    assert response.status_code == 200, response.text
    return [c["id"] for c in response.json()["data"]]


def test_two_people_never_see_each_others_conversations(rt: Runtime, team: CertsServer) -> None:
    ada, bob = person(team, ADA), person(team, BOB, "bob@example.com")
    # Ada on another device: another owner token, the same identity.
    phone = {**person(team, ADA), "x-owner-token": secrets.token_hex(16)}
    mine = create(rt, ada)
    said = {"content": "[[pace:0]] hello"}
    turn = httpx.post(
        f"{rt.url}/api/v1/conversations/{mine}/messages", headers=ada, json=said, timeout=30
    )
    assert turn.status_code == 200, turn.text
    assert mine in listed(rt, phone)
    assert mine not in listed(rt, bob)
    for method, path, body in (
        ("GET", f"/api/v1/conversations/{mine}", None),
        ("POST", f"/api/v1/conversations/{mine}/messages", said),
        ("DELETE", f"/api/v1/conversations/{mine}", None),
    ):
        response = httpx.request(method, rt.url + path, headers=bob, json=body, timeout=10)
        assert response.status_code == 404, (method, path, response.text)
    assert httpx.get(f"{rt.url}/api/v1/conversations/{mine}", headers=phone).status_code == 200


def test_two_people_never_see_each_others_stored_responses(rt: Runtime, team: CertsServer) -> None:
    ada, bob = person(team, ADA), person(team, BOB, "bob@example.com")
    body: dict[str, Any] = {"model": "@cf/google/gemma-4-26b-a4b-it", "input": "[[pace:0]] hi"}
    made = httpx.post(rt.url + "/v1/responses", headers=ada, json=body, timeout=30)
    assert made.status_code == 200, made.text
    id = made.json()["id"]
    assert httpx.get(f"{rt.url}/v1/responses/{id}", headers=ada).status_code == 200
    assert httpx.get(f"{rt.url}/v1/responses/{id}", headers=bob).status_code == 404
    follow = {**body, "previous_response_id": id}
    assert (
        httpx.post(rt.url + "/v1/responses", headers=bob, json=follow, timeout=30).status_code
        == 404
    )
    assert httpx.delete(f"{rt.url}/v1/responses/{id}", headers=bob).status_code == 404
    assert httpx.get(f"{rt.url}/v1/responses/{id}", headers=ada).status_code == 200
