"""What `js` does in a process that has just saved a Python memory snapshot (issue 31).

    python bench/probes/snapshot_save.py [PYODIDE_DIR]

Serves bench/workers/snapsave with the pinned workerd twice, as `workerd serve` (off) and as
`workerd serve --python-save-snapshot` (save: it saves, then serves from the same process),
and prints the Worker's checks side by side: each `ok VALUE` or `ERR MESSAGE`.
PYODIDE_DIR defaults to ../shared/workerd-pyodide."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from bare_workerd import ROOT, free_port

WORKER = ROOT / "bench" / "workers" / "snapsave"


def run(pyodide_dir: Path, save: bool) -> list[str]:
    port = free_port()
    d = pyodide_dir.resolve()
    with tempfile.TemporaryDirectory() as snap:
        extra = ["--python-save-snapshot", f"--python-snapshot-dir={snap}"] if save else []
        proc = subprocess.Popen(
            [
                str(ROOT / "node_modules" / ".bin" / "workerd"),
                "serve",
                "--experimental",
                f"--pyodide-bundle-disk-cache-dir={d}/bundle",
                f"--pyodide-package-disk-cache-dir={d}/packages",
                f"--socket-addr=http=127.0.0.1:{port}",
                *extra,
                "config.capnp",
            ],
            cwd=WORKER,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    return httpx.get(f"http://127.0.0.1:{port}/", timeout=30).text.splitlines()
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
        finally:
            proc.terminate()
            proc.wait()


def main() -> None:
    pyodide_dir = (
        Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "workerd-pyodide"
    )
    off, save = run(pyodide_dir, False), run(pyodide_dir, True)
    for a, b in zip(off, save, strict=True):
        name, _, first = a.partition(" => ")
        print(f"{name}\n    off:  {first}\n    save: {b.partition(' => ')[2]}")


if __name__ == "__main__":
    main()
