"""Where a request's CPU goes, taken apart from inside: copies of src/ that answer "ok" at a
given point of the request (or skip one piece), each run as a Worker of its own beside the
real relay, requests interleaved one by one (bench/workerd.mjs --src NAME=DIR).

workerd's clocks do not move while code runs (a Spectre mitigation), so a profiler inside
the Worker sees no time pass; the CPU of the workerd process, read from the OS around each
request, is the only clock. A cut-off copy costs what the request costs up to that point.

    python bench/knockouts.py OUT_DIR [NAME ...]   # prints the --src arguments
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

# name -> (what it shows, [(file, text, replacement)]); each text must occur exactly once.
CUTS: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "at_entry": (
        "the Worker answers 'ok' as soon as fetch() is entered (the floor of any request)",
        [
            (
                "entry.py",
                "        raw = request.js_object\n",
                "        return Response('ok')\n        raw = request.js_object\n",
            )
        ],
    ),
    "after_body": (
        "+ request log, routing, settings, guard, rate limiter and the body read",
        [
            (
                "doors/chat/door.py",
                "    request = parse_chat(await parse_body(ctx), ctx.settings)\n",
                "    await parse_body(ctx)\n    return WebResponse(status=200, headers=SSE_HEADERS, body=b'ok')\n",
            )
        ],
    ),
    "after_parse": (
        "+ JSON parse and validation of the chat request",
        [
            (
                "doors/chat/door.py",
                "    request = parse_chat(await parse_body(ctx), ctx.settings)\n",
                "    request = parse_chat(await parse_body(ctx), ctx.settings)\n"
                "    return WebResponse(status=200, headers=SSE_HEADERS, body=b'ok')\n",
            )
        ],
    ),
    "after_run": (
        "+ env.AI.run() (the upstream is opened, then dropped)",
        [
            (
                "entry.py",
                '        response = response.with_headers((("x-request-id", record.request_id),))\n',
                "        return Response('ok')\n",
            )
        ],
    ),
    "upstream_direct": (
        "+ the response, with the upstream stream returned untouched (no relay)",
        [
            (
                "entry.py",
                "            body = RelayPipe(source.stream, relay, signal, ctx, on_end, window=window).stream",
                "            body = source.stream",
            )
        ],
    ),
}


def make(out: Path, name: str) -> Path:
    _, changes = CUTS[name]
    dst = out / name / "src"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(SRC, dst, ignore=shutil.ignore_patterns("__pycache__"))
    for file, text, replacement in changes:
        path = dst / file
        source = path.read_text()
        if source.count(text) != 1:
            raise SystemExit(
                f"knockout {name}: {file} has {source.count(text)} copies of {text!r}; update bench/knockouts.py"
            )
        path.write_text(source.replace(text, replacement))
    return dst


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    names = argv[1:] or list(CUTS)
    args = []
    for name in names:
        args += ["--src", f"cut_{name}={make(out, name)}"]
    print(" ".join(args))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
