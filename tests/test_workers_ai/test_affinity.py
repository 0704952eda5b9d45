import asyncio
import json

from fakes import FakeLimiter, FakeModel, frames
from host_app import request

from routes import TABLE
from surface.policy import handle
from workers_ai.affinity import conversation_key, key

FIRST = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
SECOND = [*FIRST, {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "More?"}]


def test_every_turn_of_a_conversation_has_the_same_key() -> None:
    assert conversation_key(FIRST) == conversation_key(SECOND)
    assert conversation_key(FIRST).startswith("conv-") and len(conversation_key(FIRST)) == 5 + 32


def test_another_first_message_or_system_prompt_is_another_key() -> None:
    assert conversation_key([{"role": "user", "content": "Hi!"}]) != conversation_key(
        [{"role": "user", "content": "Hi"}]
    )
    assert conversation_key(FIRST) != conversation_key(FIRST[1:])


def test_the_clients_own_key_wins_and_is_sent_as_is() -> None:
    assert key([None, "", "  team-42/chat 7  "], FIRST) == "team-42/chat 7"
    assert key(["a"], FIRST) == "a"


def test_a_key_that_is_no_plain_header_value_is_digested() -> None:
    for odd in ("caf\u00e9", "a\nb", "x" * 257, "a\ud800"):
        sent = key([odd], FIRST)
        assert sent.startswith("key-") and len(sent) == 36 and sent == key([odd], SECOND), odd


def test_both_apis_send_the_key_as_a_run_option() -> None:
    seen = []
    nothing: dict[str, str] = {}
    for path, extra, headers in [
        ("/api/v1/chat", {}, {"x_session_affinity": "mine"}),
        ("/v1/chat/completions", {"prompt_cache_key": "pck", "user": "u1"}, {}),
        ("/v1/chat/completions", {"user": "u1"}, {}),
        ("/v1/chat/completions", {"user": "u1"}, {"x_session_affinity": "header"}),
        ("/api/v1/chat", {}, {}),
        ("/v1/chat/completions", {}, {}),
    ]:
        fake = FakeModel(frames("ok"))
        body = json.dumps({"messages": SECOND, **extra}).encode()
        req = request("POST", path, body, content_type="application/json", **headers)
        assert (
            asyncio.run(handle(req, nothing.get, fake, TABLE, limiter=FakeLimiter())).status == 200
        )
        options = fake.options[0]
        assert options is not None
        seen.append(options.binding_options()["extraHeaders"]["x-session-affinity"])
    own = conversation_key(SECOND)
    assert seen == ["mine", "pck", "u1", "header", own, own]
