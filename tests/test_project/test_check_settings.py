"""scripts/check_settings.py, the check `make dev` and `make deploy-check` run before they start:
a wrong var stops them, naming the var and the environment (issue 44)."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import check_settings
import pytest
from conftest import ROOT

SCRIPT = ROOT / "scripts" / "check_settings.py"
CONFIG = (ROOT / "wrangler.toml").read_text(encoding="utf-8")
ENVIRONMENTS = [None, *tomllib.loads(CONFIG)["env"]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Done:
    returncode: int
    stderr: str


def check(*args: str | Path) -> Done:
    """The script's main() in this process (a subprocess each costs a Python start)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = check_settings.main([str(arg) for arg in args])
    return Done(returncode=code, stderr=err.getvalue())


def test_the_script_runs_on_its_own() -> None:
    """As make runs it: the machine's Python, no package, from any directory."""
    bad = subprocess.run(
        [sys.executable, SCRIPT, "--env", "prod"],
        cwd=ROOT / "docs",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (bad.returncode, bad.stderr) == (2, "wrangler.toml: no environment 'prod'\n")


def with_var(env: str | None, key: str, value: str, tmp_path: Path) -> Path:
    """A copy of wrangler.toml with one var of one environment's table changed."""
    table = "[vars]" if env is None else f"[env.{env}.vars]"
    start = CONFIG.index("\n" + table + "\n") + len(table) + 2
    end = CONFIG.find("\n[", start)
    body = CONFIG[start : end if end != -1 else len(CONFIG)]
    line = f'{key} = "{value}"'
    changed, count = re.subn(rf"^{key} = .*$", line, body, flags=re.MULTILINE)
    if count == 0:
        changed = body + line + "\n"
    path = tmp_path / "wrangler.toml"
    path.write_text(CONFIG[:start] + changed + CONFIG[start + len(body) :], encoding="utf-8")
    return path


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=[e or "default" for e in ENVIRONMENTS])
def test_every_environment_of_wrangler_toml_passes(env: str | None) -> None:
    done = check(*(["--env", env] if env else []))
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize(
    ("env", "key", "value", "said"),
    [
        ("production", "AI_DEFAULT_MODEL", "@cf/nope/x", "AI_DEFAULT_MODEL='@cf/nope/x' is not in"),
        ("staging", "MAX_MESSAGES", "lots", "MAX_MESSAGES='lots' is not a int"),
        ("staging", "STREAM_WINDOW_MS", "900", "STREAM_WINDOW_MS='900' must be between"),
        (None, "AI_FALLBACK_MODELS", "llama", "AI_FALLBACK_MODELS='llama': 'llama' is not a"),
        ("production", "OWNER_DAILY_TOKENS", "lots", "OWNER_DAILY_TOKENS='lots' must be a whole"),
    ],
)
def test_a_wrong_var_exits_1_naming_the_var_and_the_environment(
    env: str | None, key: str, value: str, said: str, tmp_path: Path
) -> None:
    config = with_var(env, key, value, tmp_path)
    done = check("--config", config, *(["--env", env] if env else []))
    assert done.returncode == 1, done
    table = "[vars]" if env is None else f"[env.{env}.vars]"
    assert done.stderr.startswith(f"wrangler.toml {table}: {said}"), done.stderr
    assert f"In environment {env or '(default)'}," in done.stderr, done.stderr
    assert f"fix {key}, then start again" in done.stderr, done.stderr
    # The other environments are untouched, and still pass.
    for other in ENVIRONMENTS:
        if other != env:
            assert check("--config", config, *(["--env", other] if other else [])).returncode == 0


def test_dev_vars_are_laid_over_the_default_environment(tmp_path: Path) -> None:
    dev_vars = tmp_path / ".dev.vars"
    dev_vars.write_text('# a comment\nAPI_KEYS=sk-1\nAI_MAX_TOKENS_DEFAULT="9999"\n')
    done = check("--dev-vars", dev_vars)
    assert done.returncode == 1, done
    assert done.stderr.startswith(
        "wrangler.toml [vars] with .dev.vars: AI_MAX_TOKENS_DEFAULT='9999' must be between"
    ), done.stderr
    dev_vars.write_text("AI_MAX_TOKENS_DEFAULT=512\n")
    assert check("--dev-vars", dev_vars).returncode == 0
    # make dev passes .dev.vars whether or not it exists: a missing file is no error.
    assert check("--dev-vars", tmp_path / "missing").returncode == 0


def test_the_workers_other_checks_run_too(tmp_path: Path) -> None:
    """What surface/policy.py checks beside settings.load: Cloudflare Access's team domain, and
    a daily token budget without the Durable Object that counts it."""
    dev_vars = tmp_path / ".dev.vars"
    dev_vars.write_text("ACCESS_TEAM_DOMAIN=myteam\nACCESS_AUD=tag\n")
    done = check("--dev-vars", dev_vars)
    assert done.returncode == 1 and "ACCESS_TEAM_DOMAIN='myteam' must be an origin" in done.stderr
    assert "fix ACCESS_TEAM_DOMAIN, then start again" in done.stderr, done.stderr
    bare = tmp_path / "wrangler.toml"
    bare.write_text('name = "x"\n[vars]\nOWNER_DAILY_TOKENS = "1000"\n')
    done = check("--config", bare)
    assert done.returncode == 1, done
    assert done.stderr.startswith(
        "wrangler.toml [vars]: OWNER_DAILY_TOKENS is set but the BUDGETS binding is not\n"
    ), done.stderr
    assert "fix OWNER_DAILY_TOKENS, then start again" in done.stderr, done.stderr


def test_an_unknown_environment_exits_2() -> None:
    done = check("--env", "prod")
    assert (done.returncode, done.stderr) == (2, "wrangler.toml: no environment 'prod'\n")


@pytest.mark.parametrize(
    ("target", "command"),
    [
        ("dev", "python3 scripts/check_settings.py --dev-vars .dev.vars --env staging"),
        ("deploy-check", "python3 scripts/check_settings.py --env staging"),
    ],
)
def test_make_runs_the_check_before_it_starts(target: str, command: str) -> None:
    """`make -n` prints the recipe without running it: the check comes before the start."""
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", target, "ENV=staging"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = done.stdout.splitlines()
    starts = [
        i for i, line in enumerate(lines) if "launch.mjs" in line or "wrangler deploy" in line
    ]
    assert command in lines and starts, done.stdout
    assert lines.index(command) < starts[0], done.stdout
