"""The README stays a newcomer's page, and no link in it or in docs/ points at nothing."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {
        slug(m.group(1)) for m in re.finditer(r"(?m)^#+ (.*)$", path.read_text(encoding="utf-8"))
    }


def test_the_readme_is_short() -> None:
    words = len((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert words <= 2000, (
        f"README.md has {words} words; the design and the reference belong in docs/"
    )


def test_every_relative_link_and_anchor_exists() -> None:
    broken = []
    for doc in DOCS:
        for link in re.findall(r"\]\(([^)\s]+)\)", doc.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", link):
                continue
            path, _, anchor = link.partition("#")
            target = (doc.parent / path).resolve() if path else doc
            if not target.exists():
                broken.append(f"{doc.name}: {link} (no such file)")
            elif anchor and target.suffix == ".md" and anchor not in anchors(target):
                broken.append(f"{doc.name}: {link} (no such heading)")
    assert broken == []
