"""The pinned wrangler validates wrangler.toml offline; every environment must bind AI and
the rate limiter (bindings are not inherited by [env.NAME] blocks)."""

import json
import os
import re
import shutil
import subprocess
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
WRANGLER = ROOT / "node_modules" / ".bin" / "wrangler"

pytestmark = [
    pytest.mark.wrangler,
    pytest.mark.skipif(not WRANGLER.exists(), reason="npm ci has not installed wrangler"),
]


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


# What the dry run prints for each binding, e.g. "env.RATE_LIMITER (20 requests/60s)   Rate Limit".
REQUIRED = {
    "AI": re.compile(r"^\s*env\.AI\s+AI\s*$", re.MULTILINE),
    "RATE_LIMITER": re.compile(
        r"^\s*env\.RATE_LIMITER \(\d+ requests/(10|60)s\)\s+Rate Limit\s*$", re.MULTILINE
    ),
    "KEY_RATE_LIMITER": re.compile(
        r"^\s*env\.KEY_RATE_LIMITER \(\d+ requests/(10|60)s\)\s+Rate Limit\s*$", re.MULTILINE
    ),
    "READ_RATE_LIMITER": re.compile(
        r"^\s*env\.READ_RATE_LIMITER \(\d+ requests/(10|60)s\)\s+Rate Limit\s*$", re.MULTILINE
    ),
    "CONVERSATIONS": re.compile(
        r"^\s*env\.CONVERSATIONS \(Conversation\)\s+Durable Object\s*$", re.MULTILINE
    ),
    "RESPONSES": re.compile(
        r"^\s*env\.RESPONSES \(StoredResponse\)\s+Durable Object\s*$", re.MULTILINE
    ),
    "OWNERS": re.compile(
        r"^\s*env\.OWNERS \(ConversationIndex\)\s+Durable Object\s*$", re.MULTILINE
    ),
    "BUDGETS": re.compile(r"^\s*env\.BUDGETS \(OwnerBudget\)\s+Durable Object\s*$", re.MULTILINE),
}


def per_environment(script: str, envs: list[str | None]) -> list[Any]:
    """Run a node script that reads wrangler's config for each of `envs` (its argv[1], as JSON)
    and prints one JSON array per environment; those arrays, in order."""
    result = subprocess.run(
        ["node", "--input-type=module", "-e", script, json.dumps(envs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "WRANGLER_SEND_METRICS": "false"},
    )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("[")]


def missing_bindings(project: Path, tmp: Path) -> list[str]:
    """'<environment>: <binding>' for every required binding an environment lacks."""
    envs = environments(project / "wrangler.toml")
    with ThreadPoolExecutor(max_workers=len(envs)) as pool:
        outputs = list(pool.map(lambda e: dry_run(project, e, tmp / str(e)), envs))
    return [
        f"{env or 'top level'}: {name}"
        for env, out in zip(envs, outputs, strict=False)
        for name, line in REQUIRED.items()
        if not line.search(out)
    ]


def test_every_environment_lists_the_ai_and_rate_limit_bindings(tmp_path: Path) -> None:
    envs = environments(ROOT / "wrangler.toml")
    assert {"staging", "production"} <= set(e for e in envs if e)
    assert missing_bindings(ROOT, tmp_path) == []


def project_with(tmp_path: Path, extra: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("src", "public"):
        shutil.copytree(ROOT / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
    (project / "wrangler.toml").write_text((ROOT / "wrangler.toml").read_text() + extra)
    (project / "node_modules").symlink_to(ROOT / "node_modules")
    return project


def test_an_environment_without_ai_or_rate_limit_is_caught(tmp_path: Path) -> None:
    preview = '\n[env.preview]\nname = "ai-chat-preview"\n'
    only_ai = '\n[env.lab]\nname = "ai-chat-lab"\n\n[env.lab.ai]\nbinding = "AI"\n'
    project = project_with(tmp_path, preview + only_ai)
    assert missing_bindings(project, tmp_path / "out") == [
        "preview: AI",
        "preview: RATE_LIMITER",
        "preview: KEY_RATE_LIMITER",
        "preview: READ_RATE_LIMITER",
        "preview: CONVERSATIONS",
        "preview: RESPONSES",
        "preview: OWNERS",
        "preview: BUDGETS",
        "lab: RATE_LIMITER",
        "lab: KEY_RATE_LIMITER",
        "lab: READ_RATE_LIMITER",
        "lab: CONVERSATIONS",
        "lab: RESPONSES",
        "lab: OWNERS",
        "lab: BUDGETS",
    ]


def test_every_environment_migrates_the_durable_object_classes_to_sqlite() -> None:
    """The Durable Object's [[migrations]] are per environment too: without them a deploy of
    that environment fails, and new_sqlite_classes is what gives the class its SQLite storage."""
    import tomllib

    config = tomllib.loads((ROOT / "wrangler.toml").read_text())
    blocks = {"top level": config, **{name: env for name, env in config.get("env", {}).items()}}
    for name, block in blocks.items():
        classes = [c for m in block.get("migrations", []) for c in m.get("new_sqlite_classes", [])]
        assert classes == ["Conversation", "StoredResponse", "ConversationIndex", "OwnerBudget"], (
            f"{name}: migrations {block.get('migrations')}"
        )


def test_no_environment_turns_on_the_local_stats_route() -> None:
    """LOCAL_DEV_STATS is set by local/launch.mjs only: wrangler's own reading of each
    environment (what a deploy uses) must not contain it."""
    script = (
        "import { unstable_getMiniflareWorkerOptions as o } from 'wrangler';"
        "for (const env of JSON.parse(process.argv[1])) {"
        " const b = o('wrangler.toml', env ?? undefined, {}).workerOptions.bindings ?? {};"
        " console.log(JSON.stringify([env, 'LOCAL_DEV_STATS' in b, 'AI_MODELS' in b])); }"
    )
    envs = environments(ROOT / "wrangler.toml")
    rows = per_environment(script, envs)
    assert rows == [[env, False, True] for env in envs], rows


def env_blocks(config: Path) -> dict[str, dict[str, object]]:
    data = tomllib.loads(config.read_text())
    return {"top level": data, **{name: block for name, block in data.get("env", {}).items()}}


def test_every_environment_turns_on_observability_and_names_itself() -> None:
    blocks = env_blocks(ROOT / "wrangler.toml")
    observability = {name: block.get("observability") for name, block in blocks.items()}
    expected = {"enabled": True, "head_sampling_rate": 1}
    assert observability == {name: expected for name in blocks}
    environment = {name: block.get("vars", {}).get("ENVIRONMENT") for name, block in blocks.items()}  # type: ignore[attr-defined]
    assert environment == {
        "top level": "development",
        "staging": "staging",
        "production": "production",
    }


def test_every_environment_sets_the_same_vars() -> None:
    """Vars are not inherited either: a var added at the top level only would silently take
    its code default in staging and production."""
    names = {
        name: sorted(block.get("vars", {}))  # type: ignore[call-overload]
        for name, block in env_blocks(ROOT / "wrangler.toml").items()
    }
    assert "BODY_TIMEOUT_SECONDS" in names["top level"]
    assert names == {name: names["top level"] for name in names}


def test_the_dry_run_accepts_the_observability_settings(tmp_path: Path) -> None:
    envs = environments(ROOT / "wrangler.toml")
    with ThreadPoolExecutor(max_workers=len(envs)) as pool:
        outputs = list(pool.map(lambda e: dry_run(ROOT, e, tmp_path / str(e)), envs))
    for env, output in zip(envs, outputs, strict=False):
        # wrangler accepts an unknown or misspelt key with only a warning: fail on that warning.
        assert (
            "Unexpected fields" not in output
            and "Processing wrangler.toml configuration" not in output
        ), (env, output)


def test_a_misspelt_observability_key_is_caught(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("src", "public"):
        shutil.copytree(ROOT / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
    config = (
        (ROOT / "wrangler.toml")
        .read_text()
        .replace("head_sampling_rate = 1", "head_sampling_rat = 1", 1)
    )
    (project / "wrangler.toml").write_text(config)
    (project / "node_modules").symlink_to(ROOT / "node_modules")
    assert 'Unexpected fields found in observability field: "head_sampling_rat"' in dry_run(
        project, None, tmp_path / "out"
    )


def test_the_deploy_command_finds_uv_and_goes_as_far_as_the_network_allows(tmp_path: Path) -> None:
    """`make deploy` runs pywrangler with the pinned uv on PATH (it used to stop at "Command not
    found: uv"). Offline it stops where pywrangler downloads CPython 3.13; online, --dry-run
    builds the bundle without deploying."""
    uv = ROOT / ".cache" / "bootstrap" / "bin" / "uv"
    if not uv.exists():
        pytest.skip("the pinned uv is installed by `make setup`")
    env = {
        **os.environ,
        "PATH": f"{uv.parent}:{os.environ['PATH']}",
        "WRANGLER_SEND_METRICS": "false",
        "CI": "true",
    }
    result = subprocess.run(
        [
            str(uv),
            "run",
            "--locked",
            "pywrangler",
            "deploy",
            "--dry-run",
            "--outdir",
            str(tmp_path / "out"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    output = result.stdout + result.stderr
    shutil.rmtree(ROOT / ".venv-workers", ignore_errors=True)
    assert "Command not found: uv" not in output, output[-2000:]
    if result.returncode != 0:
        assert "python-build-standalone" in output or "Failed to download" in output, output[-2000:]


def test_every_environment_runs_pyodide_314_and_a_deploy_keeps_dashboard_vars() -> None:
    """wrangler's own reading of each environment, what a deploy uses: the flags that select
    Pyodide 314 (no Wasm stack leak), and keep_vars, without which a deploy deletes every var set
    only in the dashboard (the kill switch AI_CHAT_DISABLED above all)."""
    script = (
        "import { unstable_readConfig as read } from 'wrangler';"
        "for (const env of JSON.parse(process.argv[1])) {"
        " const c = read({ config: 'wrangler.toml', env: env ?? undefined });"
        " console.log(JSON.stringify([env, c.keep_vars, c.compatibility_flags])); }"
    )
    envs = environments(ROOT / "wrangler.toml")
    rows = per_environment(script, envs)
    flags = [
        "python_workers",
        "python_workers_20260610",
        "enable_request_signal",
        "disable_python_no_global_handlers",
    ]
    assert rows == [[env, True, flags] for env in envs], rows
