"""Owned conversations on workerd (issue 34), through the real Durable Objects: each owner (two
API keys, two owner tokens) lists its own, newest first and by pages, and gets 404 on every
route of another's, as for an id that does not exist; a conversation made by nobody is listed
nowhere; a delete unlists; no log line holds a token or a key. An index that fails (OWNERS bound
to a class that answers none of its calls) loses no conversation and no turn, and the list says
503."""

from __future__ import annotations

import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ROOT, Runtime, start_runtime

pytestmark = pytest.mark.runtime

BASE = "/api/v1/conversations"
KEYS = ("owner-test-key-one-" + secrets.token_hex(8), "owner-test-key-two-" + secrets.token_hex(8))
TOKENS = (secrets.token_hex(16), secrets.token_hex(16))
# The page's own requests (no key needed with API_KEYS set): what a browser sets on a
# same-origin fetch.
PAGE = {"sec-fetch-site": "same-origin"}


@pytest.fixture(scope="module")
def rt() -> Iterator[Runtime]:
    runtime = start_runtime(vars={"API_KEYS": ",".join(KEYS)}, capture_stderr=True)
    yield runtime
    runtime.stop()


def as_key(n: int) -> dict[str, str]:
    return {"authorization": f"Bearer {KEYS[n]}"}


def as_token(n: int) -> dict[str, str]:
    return {**PAGE, "x-owner-token": TOKENS[n]}


def create(rt: Runtime, who: dict[str, str], **body: Any) -> str:
    response = httpx.post(rt.url + BASE, headers=who, json=body or None, timeout=10)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def turn(rt: Runtime, who: dict[str, str], id: str, content: str) -> httpx.Response:
    return httpx.post(
        f"{rt.url}{BASE}/{id}/messages", headers=who, json={"content": content}, timeout=30
    )


def listing(rt: Runtime, who: dict[str, str], query: str = "") -> dict[str, Any]:
    response = httpx.get(rt.url + BASE + query, headers=who, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def ids(rt: Runtime, who: dict[str, str]) -> list[str]:
    return [c["id"] for c in listing(rt, who, "?limit=100")["data"]]


def routes(rt: Runtime, id: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    return [
        ("GET", f"{BASE}/{id}", None),
        ("POST", f"{BASE}/{id}/messages", {"content": "let me in"}),
        ("GET", f"{BASE}/{id}/stream", None),
        ("POST", f"{BASE}/{id}/stop", None),
        ("DELETE", f"{BASE}/{id}", None),
    ]


def refusals(rt: Runtime, who: dict[str, str], id: str) -> list[tuple[int, str]]:
    out = []
    for method, path, body in routes(rt, id):
        response = httpx.request(method, rt.url + path, headers=who, json=body, timeout=10)
        out.append((response.status_code, response.text))
    return out


@pytest.mark.parametrize(
    "owners", [(as_key(0), as_key(1)), (as_token(0), as_token(1))], ids=["keys", "tokens"]
)
def test_each_owner_lists_its_own_and_another_gets_404_everywhere(
    rt: Runtime, owners: tuple[dict[str, str], dict[str, str]]
) -> None:
    mine, theirs = owners
    first = create(rt, mine)
    second = create(rt, mine, messages=[{"role": "user", "content": "  a  history\nto fork "}])
    assert turn(rt, mine, first, "what is a durable object?").status_code == 200
    page = listing(rt, mine)
    assert [c["id"] for c in page["data"]][:2] == [first, second]  # the latest turn first
    titles = {c["id"]: c["title"] for c in page["data"]}
    assert titles[first] == "what is a durable object?" and titles[second] == "a history to fork"
    entry = page["data"][0]
    # A timestamp of this run (not one of 1970's or a stale store), not a bound on its speed.
    assert entry["updated_at"] >= entry["created_at"] > time.time() - 600
    assert first not in ids(rt, theirs) and second not in ids(rt, theirs)

    calls = len(rt.calls())
    unknown = refusals(rt, theirs, secrets.token_hex(16))
    assert refusals(rt, theirs, first) == unknown
    assert {status for status, _ in unknown} == {404}
    assert len(rt.calls()) == calls, "another owner's message reached the model"
    assert httpx.get(f"{rt.url}{BASE}/{first}", headers=mine).status_code == 200  # still there


def test_pages_newest_first(rt: Runtime) -> None:
    who = {**PAGE, "x-owner-token": secrets.token_hex(16)}
    made = [create(rt, who) for _ in range(5)]
    seen: list[str] = []
    query = "?limit=2"
    while True:
        page = listing(rt, who, query)
        assert len(page["data"]) <= 2
        seen += [c["id"] for c in page["data"]]
        if not page["has_more"]:
            break
        query = f"?limit=2&after={page['next_cursor']}"
    assert seen == made[::-1]


def test_nobody_s_conversation_is_listed_nowhere_and_open_to_its_id(rt: Runtime) -> None:
    nobody = create(rt, PAGE)
    for who in (as_key(0), as_key(1), as_token(0), as_token(1)):
        assert nobody not in ids(rt, who)
        assert httpx.get(f"{rt.url}{BASE}/{nobody}", headers=who).status_code == 200
    response = httpx.get(rt.url + BASE, headers=PAGE)
    assert response.status_code == 401 and response.json()["error"] == "owner_required"
    bad = httpx.get(rt.url + BASE, headers={**PAGE, "x-owner-token": "not-hex"})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_owner_token"


def test_a_turn_by_an_owner_does_not_list_nobody_s_conversation(rt: Runtime) -> None:
    """Issue 47: posting to an unowned conversation (its id is the capability) does not put it
    on the poster's list; the poster's own conversation does go there."""
    nobody = create(rt, PAGE)
    mine = create(rt, as_token(1))
    for who in (as_key(1), as_token(1)):
        answered = turn(rt, who, nobody, "[[pace:0]] passing by")
        assert answered.status_code == 200, answered.text
        assert "x-conversation-owned" not in answered.headers, answered.headers
        assert nobody not in ids(rt, who)
    assert turn(rt, as_token(1), mine, "[[pace:0]] mine").status_code == 200
    assert ids(rt, as_token(1))[0] == mine


def test_a_delete_unlists(rt: Runtime) -> None:
    id = create(rt, as_token(0))
    assert id in ids(rt, as_token(0))
    assert httpx.delete(f"{rt.url}{BASE}/{id}", headers=as_token(0)).status_code == 204
    assert id not in ids(rt, as_token(0))
    assert httpx.get(f"{rt.url}{BASE}/{id}", headers=as_token(0)).status_code == 404


def test_no_log_line_holds_a_token_or_a_key(rt: Runtime) -> None:
    """Last in the module: every line the runtime wrote (the Worker's, the objects', workerd's)."""
    time.sleep(0.5)
    lines = list(rt.log)
    assert len(lines) > 20
    leaked = [line for line in lines for secret in (*KEYS, *TOKENS) if secret in line]
    assert leaked == [], leaked[:3]
    assert any('"route":"/api/v1/conversations"' in line for line in lines)


def misbound_copy(tmp: Path) -> Path:
    """The project with OWNERS bound to StoredResponse, a real class that answers every index
    call 404: the Worker's own code meets a failing index, with no stub in it."""
    for name in ("src", "local", "public"):
        shutil.copytree(ROOT / name, tmp / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp / "node_modules").symlink_to(ROOT / "node_modules")
    toml = (ROOT / "wrangler.toml").read_text()
    anchor = 'name = "OWNERS"\nclass_name = "ConversationIndex"\n'
    assert toml.count(anchor) >= 1, "wrangler.toml no longer binds OWNERS where this test expects"
    (tmp / "wrangler.toml").write_text(
        toml.replace(anchor, 'name = "OWNERS"\nclass_name = "StoredResponse"\n', 1)
    )
    return tmp


def test_a_failing_index_loses_no_conversation_and_the_list_is_503(tmp_path: Path) -> None:
    broken = start_runtime(root=misbound_copy(tmp_path), capture_stderr=True)
    try:
        who = {**PAGE, "x-owner-token": TOKENS[0]}
        id = create(broken, who)
        answer = turn(broken, who, id, "[[pace:0]] still here?")
        assert answer.status_code == 200, answer.text
        assert answer.text.endswith("event: done\ndata: {}\n\n"), answer.text[-300:]
        got = httpx.get(f"{broken.url}{BASE}/{id}", headers=who, timeout=10)
        assert got.status_code == 200, got.text
        assert [m["role"] for m in got.json()["messages"]] == ["user", "assistant"]
        theirs = {**PAGE, "x-owner-token": TOKENS[1]}
        assert httpx.get(f"{broken.url}{BASE}/{id}", headers=theirs).status_code == 404
        listed = httpx.get(broken.url + BASE, headers=who, timeout=10)
        assert (listed.status_code, listed.json()) == (
            503,
            {
                "error": "index_unavailable",
                "message": "The list of conversations could not be read; try again.",
            },
        )
        assert httpx.delete(f"{broken.url}{BASE}/{id}", headers=who).status_code == 204
        time.sleep(0.5)
        lines = list(broken.log)
        for op in ("touch", "list", "remove"):
            said = [
                line for line in lines if f"conversation index: {op} failed: RuntimeError" in line
            ]
            assert said, f"no log line says the index's {op} failed; last lines: {lines[-10:]}"
        assert not [line for line in lines if TOKENS[0] in line or id in line]
    finally:
        broken.stop()
