"""One version, in the three places that carry it."""

import json
import tomllib

from conftest import ROOT

from base.version import VERSION


def test_pyproject_package_json_and_the_worker_agree() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    package = json.loads((ROOT / "package.json").read_text())["version"]
    lock = json.loads((ROOT / "package-lock.json").read_text())["packages"][""]["version"]
    assert (pyproject, package, lock) == (VERSION, VERSION, VERSION)


def test_the_changelog_starts_with_this_version() -> None:
    headings = [
        line for line in (ROOT / "CHANGELOG.md").read_text().splitlines() if line.startswith("## ")
    ]
    assert headings and headings[0].startswith(f"## {VERSION} "), headings[:2]
