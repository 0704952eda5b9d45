"""The request body on workerd: a client that leaves mid-upload is a quiet end, and a body sent
in many tiny chunks is still read against its limit."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from conftest import Runtime

pytestmark = pytest.mark.runtime


def raw_request(rt: Runtime, head: bytes) -> socket.socket:
    host, port = rt.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(head)
    return sock


def test_a_client_gone_mid_upload_is_a_quiet_end(runtime: Runtime) -> None:
    seen = len(runtime.log)
    sock = raw_request(
        runtime,
        b"POST /api/v1/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 5000\r\n\r\n" + b'{"messages": [{"role": "user", "content": "' + b"x" * 100,
    )
    time.sleep(0.2)
    sock.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any('"code":"client_gone"' in line for line in runtime.log[seen:]):
        time.sleep(0.05)
    lines = runtime.log[seen:]
    assert any('"code":"client_gone"' in line for line in lines), lines
    assert not any("Traceback" in line or "internal_error" in line for line in lines), lines


def workerd_cpu_seconds(rt: Runtime) -> float:
    """utime + stime of the launcher's workerd child, from /proc (Linux)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == rt.process.pid and "workerd" in (stat.parent / "cmdline").read_bytes().decode(errors="replace"):
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    pytest.skip("no workerd child process found in /proc")


def test_a_body_in_one_byte_chunks_costs_bytes_not_chunks(runtime: Runtime) -> None:
    """The issue's case: a ~60 KB body sent as ~60,000 one-byte chunks. On the old runtime that
    cost ~5 s of CPU (one JS-to-Python read per chunk); workerd hands the Worker what has
    arrived, so the reads follow the bytes, not the sender's chunking."""
    content = "[[pace:0]] " + "y" * 7_900
    body = json.dumps({"messages": [{"role": "user", "content": content}] * 7}).encode()
    assert 55_000 < len(body) < 65_536
    cpu_before = workerd_cpu_seconds(runtime)
    sock = raw_request(runtime, b"POST /api/v1/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    started = time.monotonic()
    for byte in body:
        sock.sendall(b"1\r\n%c\r\n" % byte)
    sock.sendall(b"0\r\n\r\n")
    received = b""
    while b"event: done" not in received and (data := sock.recv(65536)):
        received += data
    took = time.monotonic() - started
    sock.close()
    cpu = workerd_cpu_seconds(runtime) - cpu_before
    assert received.startswith(b"HTTP/1.1 200 "), received[:300]
    print(f"\n{len(body)} one-byte chunks: answered in {took:.2f} s, workerd CPU {cpu:.2f} s")
    assert cpu < 2.5, f"{cpu:.2f} s of workerd CPU for a {len(body)}-byte body in one-byte chunks"
