# Two entry points: `make dev` (run locally on the built-in model) and `make test`
# (every check). Both install what they need first, pinned by uv.lock and package-lock.json.
UV_VERSION := 0.13.9
BOOT := .cache/bootstrap
UV := $(BOOT)/bin/uv
PORT ?= 8787
ENV ?=

.PHONY: setup dev test test-python test-js bench clean

setup: .venv/.synced node_modules/.installed

$(UV):
	python3 -m venv $(BOOT)
	$(BOOT)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

.venv/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --locked --quiet
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

dev: setup
	PORT=$(PORT) node runtime/server.mjs $(if $(ENV),--env $(ENV))

test: setup
	node --test tests/js/
	$(UV) run --locked mypy
	$(UV) run --locked pytest

bench: setup
	$(UV) run --locked python bench/run.py

clean:
	rm -rf .venv node_modules .cache
