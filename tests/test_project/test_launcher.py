"""local/launch.mjs as a user meets it: --help, and one JSON line (not a stack trace) when it cannot start."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess

import pytest
from conftest import ROOT

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(
    NODE is None or not (ROOT / "node_modules").exists(), reason="node or node_modules missing"
)


def launch(*args: str) -> subprocess.CompletedProcess[str]:
    assert NODE is not None
    return subprocess.run(
        [NODE, "local/launch.mjs", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result
    assert result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    line = json.loads(lines[0])
    assert (line["source"], line["level"]) == ("launcher", "error"), line
    assert set(line) == {"t", "source", "level", "message"}, line
    return str(line["message"])


def test_help_says_how_to_run_it() -> None:
    result = launch("--help")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("Usage: node local/launch.mjs [options]\n")
    for option in (
        "--env NAME",
        "--port N",
        "--pace MS",
        "--var NAME=VALUE",
        "--snapshot MODE",
        "-h, --help",
    ):
        assert option in result.stdout, option


def test_a_port_in_use_is_one_json_line_and_exit_1() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        message = one_error_line(launch("--port", str(port)))
    assert (
        message
        == f"port {port} is in use: stop what runs there or pick another with --port N (or PORT=N make dev)"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--port", "abc"), "--port wants a number from 0 to 65535, got abc"),
        (("--var", "novalue"), "--var wants NAME=VALUE, got novalue"),
        (("--snapshot", "maybe"), "--snapshot wants off, save, load or auto, got maybe"),
    ],
)
def test_bad_arguments_are_one_json_line(args: tuple[str, ...], message: str) -> None:
    assert one_error_line(launch(*args)) == message


def test_an_unknown_option_is_one_json_line() -> None:
    message = one_error_line(launch("--nope"))
    assert message.startswith("Unknown option '--nope'") and message.endswith("(see --help)"), (
        message
    )
