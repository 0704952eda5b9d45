"""The layout docs/DESIGN.md draws: src/ is a handful of packages, only the shell (and the main
module, entry.py) touches JavaScript, package names shadow nothing a Python program imports, and
every module is on the map."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
DESIGN = SRC.parent / "docs" / "DESIGN.md"
JS_MODULES = {"js", "pyodide", "pyodide_js", "workers"}
# What the tests and tools import besides the standard library: src/ is first on sys.path.
DEPENDENCIES = {
    "httpx",
    "openai",
    "playwright",
    "pytest",
    "langchain_openai",
    "agents",
    "mypy",
    "tiktoken",
    "cryptography",
}


def modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_shell_touches_javascript() -> None:
    touching = {str(p.relative_to(SRC)) for p in modules() if imported(p) & JS_MODULES}
    outside = sorted(t for t in touching if not (t.startswith("shell/") or t == "entry.py"))
    assert not outside, f"JavaScript outside src/shell/: {outside}"


def test_src_is_a_handful_of_packages_of_modules_under_400_lines() -> None:
    root = sorted(p.name for p in SRC.glob("*.py"))
    packages = sorted(p.name for p in SRC.iterdir() if (p / "__init__.py").exists())
    assert len(root) <= 4 and "entry.py" in root, f"modules at the root of src/: {root}"
    assert len(packages) >= 4, f"packages in src/: {packages}"
    long = {
        str(p.relative_to(SRC)): n
        for p in modules()
        if (n := len(p.read_text().splitlines())) > 400
    }
    assert not long, f"modules over 400 lines: {long}"


def test_no_package_shadows_the_standard_library_or_a_dependency() -> None:
    names = {p.name for p in SRC.iterdir() if p.is_dir() and p.name != "__pycache__"}
    names |= {p.stem for p in SRC.glob("*.py")}
    shadowing = sorted(names & (set(sys.stdlib_module_names) | DEPENDENCIES))
    assert not shadowing, f"src/ names that shadow an import: {shadowing}"


# The floors of src/, bottom to top (docs/DESIGN.md draws them): a module imports from its own
# package and from floors below it, never from its own floor's other packages or from above;
# a door imports no other door (what doors share lives in common/).
FLOORS: tuple[frozenset[str], ...] = tuple(
    frozenset(names)
    for names in (
        {"base"},
        {"streaming"},
        {"checks"},
        {"workers_ai"},
        {"surface"},
        {"common"},
        {"doors"},
        {"routes", "shell"},
        {"entry"},
    )
)
FLOOR_OF = {name: i for i, floor in enumerate(FLOORS) for name in floor}


def imports_of(source: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def against_the_floors(relative: str, source: str) -> list[str]:
    """The imports of one module of src/ (its path relative to src/) that the floors forbid."""
    parts = Path(relative).with_suffix("").parts
    top = parts[0]
    wrong = []
    for name in imports_of(source):
        target = name.split(".")
        if target[0] not in FLOOR_OF or target[0] == top:
            if (
                top == "doors" == target[0]
                and len(parts) > 2
                and len(target) > 2
                and target[1] != parts[1]
            ):
                wrong.append(f"{relative}: {name} (another door)")
            continue
        if FLOOR_OF[target[0]] >= FLOOR_OF[top]:
            wrong.append(f"{relative}: {name} (floor {FLOOR_OF[target[0]]} from {FLOOR_OF[top]})")
    return wrong


def test_every_package_of_src_is_on_a_floor() -> None:
    tops = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    tops |= {p.stem for p in SRC.glob("*.py")}
    assert tops == set(FLOOR_OF), (
        f"not on a floor: {sorted(tops - set(FLOOR_OF))}; gone: {sorted(set(FLOOR_OF) - tops)}"
    )


def test_no_module_imports_against_the_floors() -> None:
    wrong = [
        w for p in modules() for w in against_the_floors(str(p.relative_to(SRC)), p.read_text())
    ]
    assert not wrong, "imports against the floors:\n" + "\n".join(wrong)


def test_the_floor_check_finds_an_import_upward_sideways_and_across_doors() -> None:
    cases = {
        ("base/settings.py", "from surface.web import json_response"): 1,
        ("streaming/relay.py", "import workers_ai.service"): 1,
        ("shell/bindings.py", "from routes import ROUTES"): 1,
        ("doors/ui_chat/ui_chat.py", "from doors.openai_chat.openai_compat import completions"): 1,
        ("doors/ui_chat/ui_chat.py", "from doors.ui_chat.ui_stream import HEADERS"): 0,
        ("surface/policy.py", "from workers_ai import service"): 0,
        ("entry.py", "from shell import bindings"): 0,
    }
    got = {case: len(against_the_floors(*case)) for case in cases}
    assert got == cases, f"forbidden imports found, per case: {got}"


def test_every_module_is_on_the_design_map() -> None:
    text = DESIGN.read_text()
    missing = [
        str(p.relative_to(SRC)) for p in modules() if p.name != "__init__.py" and p.name not in text
    ]
    assert not missing, f"not on docs/DESIGN.md's map: {missing}"


def test_the_tests_mirror_the_packages() -> None:
    """tests/test_<package>/ for each package of src/ (tests/test_doors/<door>/ for each door),
    plus test_project/ and browser/; no test module at tests/ itself, none imports another."""
    tests = SRC.parent / "tests"
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    doors = {p.name for p in (SRC / "doors").iterdir() if (p / "__init__.py").exists()}
    allowed = {f"test_{p}" for p in packages} | {"test_project", "browser"}
    at_root = sorted(p.name for p in tests.glob("test_*.py"))
    assert not at_root, f"test modules at tests/ itself, not in a package's folder: {at_root}"
    misplaced, importing = [], []
    for path in sorted(tests.rglob("test_*.py")):
        parts = path.relative_to(tests).parts
        if parts[0] not in allowed or (
            parts[0] == "test_doors" and len(parts) == 3 and parts[1] not in doors
        ):
            misplaced.append("/".join(parts))
        if {n for n in imported(path) if n.startswith("test_")}:
            importing.append("/".join(parts))
    assert not misplaced, (
        f"test modules in no package's folder (allowed {sorted(allowed)}): {misplaced}"
    )
    assert not importing, f"test modules importing another test module: {importing}"
    missing = sorted(f"test_{p}" for p in packages if not (tests / f"test_{p}").is_dir())
    assert not missing, f"packages of src/ with no test folder: {missing}"


def test_every_http_test_module_is_marked_to_run_on_workerd() -> None:
    """A test_*_http.py module starts the Worker on workerd: marked runtime (or browser or
    wrangler), so the host tests (make test-fast) never start it."""
    tests = SRC.parent / "tests"
    marks = ("pytest.mark.runtime", "pytest.mark.browser", "pytest.mark.wrangler")
    unmarked = sorted(
        str(p.relative_to(tests))
        for p in tests.rglob("test_*_http.py")
        if not any(m in p.read_text() for m in marks)
    )
    assert not unmarked, f"test_*_http.py modules with no runtime mark: {unmarked}"
