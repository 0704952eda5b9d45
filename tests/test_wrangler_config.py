"""The pinned wrangler validates wrangler.toml offline; every environment must bind AI."""

import os
import re
import shutil
import subprocess
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WRANGLER = ROOT / "node_modules" / ".bin" / "wrangler"

pytestmark = pytest.mark.skipif(not WRANGLER.exists(), reason="npm ci has not installed wrangler")


def environments(config: Path) -> list[str | None]:
    data = tomllib.loads(config.read_text())
    return [None, *data.get("env", {})]


def dry_run(project: Path, env: str | None, outdir: Path) -> str:
    command = [str(WRANGLER), "deploy", "--dry-run", "--outdir", str(outdir)]
    if env is not None:
        command += ["--env", env]
    result = subprocess.run(
        command,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "WRANGLER_SEND_METRICS": "false", "CI": "true", "NO_COLOR": "1"},
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return output


AI_LINE = re.compile(r"^\s*env\.AI\s+AI\s*$", re.MULTILINE)


def missing_ai(project: Path, tmp: Path) -> list[str]:
    envs = environments(project / "wrangler.toml")
    with ThreadPoolExecutor(max_workers=len(envs)) as pool:
        outputs = list(pool.map(lambda e: dry_run(project, e, tmp / str(e)), envs))
    return [str(env or "top level") for env, out in zip(envs, outputs) if not AI_LINE.search(out)]


def test_every_environment_lists_the_ai_binding(tmp_path: Path) -> None:
    envs = environments(ROOT / "wrangler.toml")
    assert {"staging", "production"} <= set(e for e in envs if e)
    assert missing_ai(ROOT, tmp_path) == []


def test_an_environment_without_ai_is_caught(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("src", "public"):
        shutil.copytree(ROOT / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
    config = (ROOT / "wrangler.toml").read_text() + '\n[env.preview]\nname = "ai-chat-preview"\n'
    (project / "wrangler.toml").write_text(config)
    (project / "node_modules").symlink_to(ROOT / "node_modules")
    assert missing_ai(project, tmp_path / "out") == ["preview"]


def env_blocks(config: Path) -> dict[str, dict[str, object]]:
    data = tomllib.loads(config.read_text())
    return {"top level": data, **{name: block for name, block in data.get("env", {}).items()}}


def test_every_environment_turns_on_observability_and_names_itself() -> None:
    blocks = env_blocks(ROOT / "wrangler.toml")
    observability = {name: block.get("observability") for name, block in blocks.items()}
    expected = {"enabled": True, "head_sampling_rate": 1}
    assert observability == {name: expected for name in blocks}
    environment = {name: block.get("vars", {}).get("ENVIRONMENT") for name, block in blocks.items()}  # type: ignore[attr-defined]
    assert environment == {"top level": "development", "staging": "staging", "production": "production"}


def test_the_dry_run_accepts_the_observability_settings(tmp_path: Path) -> None:
    envs = environments(ROOT / "wrangler.toml")
    with ThreadPoolExecutor(max_workers=len(envs)) as pool:
        outputs = list(pool.map(lambda e: dry_run(ROOT, e, tmp_path / str(e)), envs))
    for env, output in zip(envs, outputs):
        # wrangler accepts an unknown or misspelt key with only a warning: fail on that warning.
        assert "Unexpected fields" not in output and "Processing wrangler.toml configuration" not in output, (env, output)


def test_a_misspelt_observability_key_is_caught(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("src", "public"):
        shutil.copytree(ROOT / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
    config = (ROOT / "wrangler.toml").read_text().replace("head_sampling_rate = 1", "head_sampling_rat = 1", 1)
    (project / "wrangler.toml").write_text(config)
    (project / "node_modules").symlink_to(ROOT / "node_modules")
    assert 'Unexpected fields found in observability field: "head_sampling_rat"' in dry_run(project, None, tmp_path / "out")
