"""A bench Worker folder served by the pinned workerd itself (no miniflare), with a given
Pyodide bundle folder: what the stack and fatal-error probes start."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(worker: Path, pyodide_dir: Path, port: int) -> subprocess.Popen[str]:
    """`workerd serve` of worker/config.capnp on 127.0.0.1:port, its output piped."""
    d = pyodide_dir.resolve()
    return subprocess.Popen(
        [
            str(ROOT / "node_modules" / ".bin" / "workerd"),
            "serve",
            "--experimental",
            f"--pyodide-bundle-disk-cache-dir={d}/bundle",
            f"--pyodide-package-disk-cache-dir={d}/packages",
            f"--socket-addr=http=127.0.0.1:{port}",
            "config.capnp",
        ],
        cwd=worker,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
