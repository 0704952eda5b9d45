#!/usr/bin/env bash
# A copy of the offline Pyodide bundle (../shared/workerd-pyodide) with one more pyodide.asm.js
# replacement: scripts/pyodide-stack-fix.json, the fix of the Wasm stack pointer leak in
# callPyObjectKwargsPromising (issue 22; bench/notes/2026-11-24-pyodide-stack-leak.md).
#
#   scripts/patched-bundle.sh [OUT_DIR]      (default .cache/pyodide-patched)
#
# It runs ../shared/workerd-pyodide/build-bundle.sh with the extra replacement spliced into its
# step 3, and fails unless each old text occurs exactly once. WORKERD_GIT (a git dir of
# github.com/cloudflare/workerd with tag v1.20260426.1) is required, as by build-bundle.sh.
# Only the soak uses the result (WORKERD_PYODIDE_DIR=OUT); `make test` and CI use the shared
# bundle, because a fresh machine has no workerd clone.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(realpath -m "${1:-$ROOT/.cache/pyodide-patched}")
SHARED_BUILD=${SHARED_BUILD:-$ROOT/../shared/workerd-pyodide/build-bundle.sh}
FIX=$ROOT/scripts/pyodide-stack-fix.json
: "${WORKERD_GIT:?set WORKERD_GIT to a git dir of the workerd repository (tag v1.20260426.1)}"
mkdir -p "$OUT"

# build-bundle.sh applies workerd's list in Python (`for old, new in pairs`): ours is appended to
# that list, counted, and must match once.
python3 - "$SHARED_BUILD" "$OUT/build-bundle.sh" "$FIX" <<'PY'
import sys
src, dst, fix = sys.argv[1:4]
text = open(src).read()
anchor = "asm = open(src).read()\n"
assert text.count(anchor) == 1, "build-bundle.sh changed: its step 3 no longer reads pyodide.asm.js the expected way"
extra = (
    "import json\n"
    f"extra = json.load(open({fix!r}))\n"
    "asm = open(src).read()\n"
    "for old, new in extra:\n"
    "    assert asm.count(old) == 1, f'extra replacement matches {asm.count(old)}x: {old[:70]!r}'\n"
    "pairs += extra\n"
)
open(dst, "w").write(text.replace(anchor, extra))
PY
chmod +x "$OUT/build-bundle.sh"
# A free loopback port for its smoke test, not its fixed default.
PORT=${PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
PORT=$PORT "$OUT/build-bundle.sh" "$OUT"
grep -c 'x=HEAPU32\[c/4>>>0\];_free(c)' "$OUT/src/src/pyodide/0.28.2/generated/pyodide.asm.js" >/dev/null \
  || { echo "the fix is not in the built pyodide.asm.js" >&2; exit 1; }
echo "WORKERD_PYODIDE_DIR=$OUT"
