"""The release, as the health and models routes report it (tests/test_surface/test_version.py keeps
pyproject.toml and package.json at the same value)."""

VERSION = "0.2.0"
# When this release was made (Unix seconds): /v1/models reports it as every model's `created`,
# which OpenAI clients sort and display by.
RELEASED = 1795478400  # 2026-11-24T00:00:00Z
