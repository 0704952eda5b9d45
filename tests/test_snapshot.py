"""The dedicated memory snapshot a deploy takes of a Python Worker (compatibility date
2025-11-01): saved after the top-level imports, then served from. A JS object kept in a module
global fails the save ("Can't serialize top-level variable"), so saving is itself the check."""

from __future__ import annotations

import pytest
from conftest import expected_wire, start_runtime

pytestmark = pytest.mark.runtime


def test_a_chat_is_served_from_a_saved_snapshot() -> None:
    messages = [{"role": "user", "content": "[[pace:0]] from the snapshot"}]
    saved = start_runtime("--snapshot", "save")
    try:
        assert saved.ready["snapshot"] == "save"
        with saved.client() as client:
            assert client.post(
                "/api/v1/chat", json={"messages": messages}
            ).content == expected_wire(messages)
    finally:
        saved.stop()
    loaded = start_runtime("--snapshot", "load")
    try:
        assert loaded.ready["snapshot"] == "load"
        with loaded.client() as client:
            answer = client.post("/api/v1/chat", json={"messages": messages})
        assert answer.content == expected_wire(messages), answer.content[-300:]
        print(f"\nready: saving {saved.ready['ms']} ms, from the snapshot {loaded.ready['ms']} ms")
    finally:
        loaded.stop()
