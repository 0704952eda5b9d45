"""POST /api/v1/conversations/{id}/branches on workerd: a client's versions kept beside the
conversation and given back by GET; and the fork that carries an answer's details."""

from __future__ import annotations

import pytest
from conftest import Runtime

pytestmark = pytest.mark.runtime

BASE = "/api/v1/conversations"


def test_branches_are_kept_given_back_and_bounded(runtime: Runtime) -> None:
    with runtime.client() as c:
        id = c.post(BASE).json()["id"]
        kept = {"version": 1, "server_length": 0, "messages": [{"id": "x", "alts": []}]}
        assert c.post(f"{BASE}/{id}/branches", json={"branches": kept}).json() == {"kept": True}
        assert c.get(f"{BASE}/{id}").json()["branches"] == kept
        bad = c.post(f"{BASE}/{id}/branches", json={"branches": [1]})
        assert bad.status_code == 400 and bad.json()["message"].startswith("branches:"), bad.text
        other = c.post(f"{BASE}/{id}/branches", json={"branches": None, "extra": 1})
        assert (other.status_code, other.json()["error"]) == (400, "unknown_field"), other.text
        big = c.post(f"{BASE}/{id}/branches", json={"branches": {"x": "y" * 1024 * 1024}})
        assert (big.status_code, big.json()["error"]) == (413, "branches_too_large"), big.text
        assert c.post(f"{BASE}/{id}/branches", json={"branches": None}).json() == {"kept": False}
        assert "branches" not in c.get(f"{BASE}/{id}").json()
        gone = c.post(f"{BASE}/{'0' * 32}/branches", json={"branches": None})
        assert gone.status_code == 404, gone.text


def test_a_fork_carries_its_answers_details_and_refuses_bad_ones(runtime: Runtime) -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    details = {"model": "@cf/google/gemma-4-26b-a4b-it", "stop_reason": "stop", "ms": 812}
    with runtime.client() as c:
        r = c.post(BASE, json={"messages": messages, "details": [None, details]})
        assert r.status_code == 201, r.text
        got = c.get(f"{BASE}/{r.json()['id']}").json()["messages"]
        assert got == [messages[0], {**messages[1], "details": details}]
        bad = c.post(BASE, json={"messages": messages, "details": [details]})
        assert bad.status_code == 400 and bad.json()["message"].startswith("details[0]:"), bad.text
