"""Checks an environment's settings before the Worker starts or deploys (make dev, make
deploy-check): wrangler.toml's vars for that environment (and .dev.vars for dev) through the
Worker's own src/base/settings.py, so that a wrong value stops the start with its name and the
environment's instead of a 500 server_misconfigured on every request. The machine's Python
(3.11+, for tomllib): no package needed.

    python3 scripts/check_settings.py [--env staging] [--dev-vars .dev.vars] [--config wrangler.toml]
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from base import settings  # noqa: E402  (after src/ is on the path)
from surface import access, daily_budget  # noqa: E402


def environment_vars(config: dict[str, Any], env: str | None) -> dict[str, str]:
    """The vars the Worker sees as strings: wrangler does not inherit [vars] into an
    environment, and a var that is not a string reads as unset (shell/bindings.env_lookup)."""
    table = config.get("vars", {}) if env is None else config["env"][env].get("vars", {})
    return {key: value for key, value in table.items() if isinstance(value, str)}


def dev_vars(path: Path) -> dict[str, str]:
    """A .dev.vars file (dotenv: NAME=VALUE lines, # comments, optional quotes), as wrangler reads it."""
    values: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def bindings(config: dict[str, Any], env: str | None) -> set[str]:
    """The Durable Object binding names of an environment (none is inherited either)."""
    table = config if env is None else config["env"][env]
    return {b["name"] for b in table.get("durable_objects", {}).get("bindings", [])}


def problem(values: dict[str, str], bound: set[str]) -> settings.SettingsError | None:
    """What the Worker's own checks say of these vars before it answers a request (the ones
    surface/policy.py runs): None when they are valid."""
    try:
        settings.load(values.get)
        access.config(values.get)
        if daily_budget.limit(values.get) is not None and daily_budget.BINDING not in bound:
            raise settings.SettingsError(
                f"{daily_budget.VAR} is set but the {daily_budget.BINDING} binding is not"
            )
    except settings.SettingsError as exc:
        return exc
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", help="a [env.NAME] of wrangler.toml (default: the top level)")
    parser.add_argument("--dev-vars", type=Path, help="a .dev.vars file laid over (if it exists)")
    parser.add_argument("--config", type=Path, default=ROOT / "wrangler.toml")
    args = parser.parse_args(argv)
    config = tomllib.loads(args.config.read_text(encoding="utf-8"))
    where = f"[env.{args.env}.vars]" if args.env else "[vars]"
    if args.env and args.env not in config.get("env", {}):
        print(f"{args.config.name}: no environment {args.env!r}", file=sys.stderr)
        return 2
    values = environment_vars(config, args.env)
    if args.dev_vars is not None and args.dev_vars.is_file():
        values.update(dev_vars(args.dev_vars))
        where += f" with {args.dev_vars.name}"
    if (wrong := problem(values, bindings(config, args.env))) is not None:
        print(
            f"{args.config.name} {where}: {wrong}\n"
            f"In environment {args.env or '(default)'}, every request would be answered 500 "
            f"server_misconfigured: fix {wrong.variable or 'the setting'}, then start again.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
