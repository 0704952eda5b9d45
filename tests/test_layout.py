"""The shell/core split that docs/DESIGN.md draws: only the shell modules touch JavaScript, and
every module of src/ is on the map."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
DESIGN = SRC.parent / "docs" / "DESIGN.md"
SHELL = {"entry", "bindings", "jsstream", "jsbody", "js_glue", "conversation_object"}
JS_MODULES = {"js", "pyodide", "pyodide_js", "workers"}


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_shell_touches_javascript() -> None:
    touching = {path.stem for path in SRC.glob("*.py") if imported(path) & JS_MODULES}
    assert touching == SHELL, (
        f"outside the shell: {touching - SHELL}; shell without JS: {SHELL - touching}"
    )


def test_every_module_is_on_the_design_map() -> None:
    text = DESIGN.read_text()
    missing = sorted(path.name for path in SRC.glob("*.py") if path.name not in text)
    assert not missing, f"not on docs/DESIGN.md's map: {missing}"
