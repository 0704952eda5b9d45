"""A Pyodide fatal error ends the workerd process on this release (abortIsolate(), as Cloudflare
replaces such an isolate): the launcher says so, miniflare starts workerd again, the launcher says
that too, and the Worker answers again. Run on a copy of the project whose Worker has one more
route that calls Pyodide's own fatal error path (as workerd's python-abort-isolate-on-fatal test
does): the real Worker has no way to die on purpose."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import httpx
import pytest
from conftest import ROOT, Runtime, start_runtime

pytestmark = pytest.mark.runtime

TRIGGER = """    if path == "/__fatal":
        from _pyodide_core import trigger_fatal_error  # type: ignore[import-not-found]

        trigger_fatal_error()
"""


def dying_copy(tmp: Path) -> Path:
    for name in ("src", "local", "public"):
        shutil.copytree(ROOT / name, tmp / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "wrangler.toml", tmp / "wrangler.toml")
    (tmp / "node_modules").symlink_to(ROOT / "node_modules")
    entry = tmp / "src" / "entry.py"
    anchor = "    path = urlsplit(url).path\n"
    text = entry.read_text()
    assert anchor in text, "src/entry.py no longer reads the path where this test expects"
    entry.write_text(text.replace(anchor, anchor + TRIGGER, 1))
    return tmp


def wait_for_line(rt: Runtime, needle: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in list(rt.log):
            if needle in line:
                return line
        time.sleep(0.2)
    raise AssertionError(
        f"no line with {needle!r} in {timeout:g} s; last lines:\n" + "".join(rt.log[-20:])
    )


def test_a_pyodide_fatal_error_restarts_workerd_and_says_so(tmp_path: Path) -> None:
    rt = start_runtime(root=dying_copy(tmp_path), capture_stderr=True)
    try:
        assert httpx.get(rt.url + "/api/v1/health", timeout=30).status_code == 200
        with pytest.raises(httpx.HTTPError):  # the process ends under the request
            httpx.get(rt.url + "/__fatal", timeout=30)
        said = wait_for_line(rt, "Pyodide fatal error", 30)
        assert '"level":"error"' in said and '"fatal_errors":1' in said, said
        wait_for_line(rt, '"message":"workerd restarted"', 120)
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(rt.url + "/api/v1/health", timeout=10)
                if health.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the Worker did not answer again after the restart"
            time.sleep(0.5)
        assert health.json()["runtime"]["pyodide"] == "314.0.4", health.text
    finally:
        rt.stop()
