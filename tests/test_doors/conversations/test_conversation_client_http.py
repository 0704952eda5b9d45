"""public/conversation-client.js against the Worker on workerd: a connection cut mid-answer is
resumed with Last-Event-ID, and the answer arrives whole, every event once."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from conftest import ROOT, Runtime, expected_tokens

pytestmark = pytest.mark.runtime


def test_a_cut_connection_is_resumed_and_nothing_is_missed_or_doubled(runtime: Runtime) -> None:
    content = "[[pace:30]] resume me please"
    node = shutil.which("node") or "node"
    run = subprocess.run(
        [node, "tests/js/conversation-resume.mjs", runtime.url, content, "400"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    answer = "".join(expected_tokens([{"role": "user", "content": content}]))
    result = out["result"]
    assert (result["outcome"], result["text"], result["stopReason"]) == (
        "complete",
        answer,
        "stop",
    ), result
    assert [o["url"].rsplit("/", 1)[-1] for o in out["opens"]] == ["messages", "stream"], out[
        "opens"
    ]
    resumed_from = out["opens"][1]["lastEventId"]
    assert resumed_from is not None and resumed_from.startswith("1:"), out["opens"]
    events = out["events"]
    assert events.count("content_block_delta") == len(
        expected_tokens([{"role": "user", "content": content}])
    )
    assert events[-2:] == ["message_stop", "done"] and events.count("done") == 1
    assert out["replay"] == answer  # a reload reads the whole answer back from storage
