"""The release, as the health and models routes report it (tests/test_version.py keeps
pyproject.toml and package.json at the same value)."""

VERSION = "0.2.0"
