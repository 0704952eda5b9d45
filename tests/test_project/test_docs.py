"""The README stays a newcomer's page, no link in it or in docs/ points at nothing, and the
configuration table says what src/ and wrangler.toml really do."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from base import catalog, settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {
        slug(m.group(1)) for m in re.finditer(r"(?m)^#+ (.*)$", path.read_text(encoding="utf-8"))
    }


README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short() -> None:
    words = len(README.split())  # as `wc -w` counts
    assert words <= 900, (
        f"README.md has {words} words; the design and the reference belong in docs/"
    )


def test_the_readme_shows_the_page_and_the_first_steps_in_order() -> None:
    shot = re.search(r"!\[[^\]]+\]\((docs/[\w-]+\.png)\)", README)
    assert shot, "no screenshot in the README"
    png = (ROOT / shot.group(1)).read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000, shot.group(1)
    steps = [
        "make dev",
        "PORT=",
        "make test",
        "curl -N localhost:8787/api/v1/chat",
        "## Customize",
        "npx wrangler login",
        "make deploy ENV=staging",
        "make deploy ENV=production",
        "AI_CHAT_DISABLED",
    ]
    at = [README.find(step) for step in steps]
    assert -1 not in at, [s for s, i in zip(steps, at, strict=True) if i == -1]
    assert at == sorted(at), f"out of order: {sorted(zip(at, steps, strict=True))}"
    # A visitor on GitHub has none of these build machines' folders.
    for private in ("../shared", "WORKERD_PYODIDE_DIR", "workerd-pyodide"):
        assert private not in README, private


def table_rows(doc: Path, heading: str) -> dict[str, list[str]]:
    """The rows of the first table under `heading`, by their first cell's first `name`."""
    text = doc.read_text(encoding="utf-8").split(heading + "\n", 1)[1]
    rows: dict[str, list[str]] = {}
    for line in text.split("\n\n", 2)[1].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        name = re.match(r"`(\w+)`", cells[0])
        if name:
            rows[name.group(1)] = cells
    return rows


CONFIG = table_rows(ROOT / "docs" / "OPERATING.md", "## Configuration")


def test_the_configuration_table_says_what_wrangler_toml_ships() -> None:
    config = tomllib.loads((ROOT / "wrangler.toml").read_text(encoding="utf-8"))
    shipped: dict[str, str] = config["vars"]
    for name in ("staging", "production"):
        differ = {
            k
            for k in {*shipped, *config["env"][name]["vars"]}
            if shipped.get(k) != config["env"][name]["vars"].get(k)
        }
        assert differ <= {"ENVIRONMENT"}, f"[env.{name}.vars] differs from [vars]: {differ}"
    assert set(shipped) <= set(CONFIG), f"not in the table: {set(shipped) - set(CONFIG)}"
    for var, cells in CONFIG.items():
        cell = cells[2].replace("\\|", "|")  # a | in a table cell is escaped
        if var == "ENVIRONMENT":
            envs = [shipped[var]] + [
                config["env"][n]["vars"][var] for n in ("staging", "production")
            ]
            assert cell == ", ".join(f"`{e}`" for e in envs), cell
        elif var not in shipped:
            assert cell.startswith(("not set", "never")), f"{var}: {cell!r}, not in wrangler.toml"
        elif shipped[var] == "":
            assert cell == "empty", f"{var}: {cell!r}, shipped empty"
        else:
            assert cell == f"`{shipped[var]}`", f"{var}: {cell!r}, shipped {shipped[var]!r}"


def test_the_configuration_table_says_what_the_code_does_unset() -> None:
    unset = settings.load(lambda _: None)
    model = unset.models[0]
    number = {
        "AI_MAX_TOKENS_LIMIT": unset.max_tokens_limit,
        "MAX_MESSAGES": unset.max_messages,
        "MAX_MESSAGE_CHARS": unset.max_message_chars,
        "MAX_IMAGES": unset.max_images,
        "MAX_IMAGE_BYTES": unset.max_image_bytes,
        "STREAM_PING_SECONDS": unset.ping_after,
        "UPSTREAM_TIMEOUT_SECONDS": unset.give_up_after,
        "RESUME_GRACE_SECONDS": unset.resume_grace,
        "MAX_CONVERSATION_BYTES": unset.max_conversation_bytes,
        "BODY_TIMEOUT_SECONDS": settings.BODY_TIMEOUT_DEFAULT,
        "AI_CATALOG_REFRESH_SECONDS": catalog.REFRESH_SECONDS,
    }
    for var, value in number.items():
        assert CONFIG[var][1] == f"`{value:.15g}`", (
            f"{var}: {CONFIG[var][1]!r}, the code says {value}"
        )
    assert CONFIG["AI_MODELS"][1] == f"`{','.join(unset.models)}`"
    assert CONFIG["EMBEDDING_MODELS"][1] == f"`{','.join(unset.embedding_models)}`"
    assert unset.default_model == model and CONFIG["AI_DEFAULT_MODEL"][1] == "first of `AI_MODELS`"
    assert CONFIG["AI_MAX_TOKENS_DEFAULT"][1].startswith(f"`{unset.default_max_tokens}`")
    assert settings.load({"AI_MAX_TOKENS_LIMIT": "100"}.get).default_max_tokens == 100
    assert unset.fallback_models == () and CONFIG["AI_FALLBACK_MODELS"][1] == "empty (none)"
    assert unset.allowed_origins == () and CONFIG["CORS_ALLOWED_ORIGINS"][1] == "empty"
    body = re.search(r"\(([\d,]+) for gemma-4's 256k\)", CONFIG["MAX_BODY_BYTES"][1])
    assert body and int(body.group(1).replace(",", "")) == unset.max_body_bytes


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
