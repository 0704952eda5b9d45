# Two entry points: `make dev` (run locally on the built-in model) and `make test`
# (every check). Both install what they need first, pinned by uv.lock and package-lock.json.
UV_VERSION := 0.13.9
BOOT := .cache/bootstrap
UV := $(BOOT)/bin/uv
PORT ?= 8787
ENV ?=
# e.g. BENCH_ARGS="--quick --rounds 1" for a 2-3 minute run of `make bench`
BENCH_ARGS ?=
# e.g. SOAK_ARGS=--short for a one-minute check of `make soak`
SOAK_ARGS ?=
# workerd reads its Pyodide bundle from here when set (machines without internet); unset, it
# downloads Cloudflare's. The shared offline bundle is used when it sits beside the checkout.
WORKERD_PYODIDE_DIR ?= $(wildcard $(abspath ../shared/workerd-pyodide))
export WORKERD_PYODIDE_DIR

.PHONY: setup lint format dev test test-fast test-python test-js bench soak pyodide-patched deploy deploy-check clean

setup: .venv/.synced node_modules/.installed public/vendor/VERSIONS.json

$(UV):
	python3 -m venv $(BOOT)
	$(BOOT)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

.venv/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --locked --quiet
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The page's libraries, copied from the pinned node_modules: served as assets, no CDN.
public/vendor/VERSIONS.json: node_modules/.installed scripts/vendor-assets.mjs
	node scripts/vendor-assets.mjs

dev: setup
	PORT=$(PORT) node local/launch.mjs --snapshot auto --persist .cache/durable-objects $(if $(ENV),--env $(ENV))

test: setup lint
	node --test tests/js/
	$(UV) run --locked mypy
	$(UV) run --locked pytest

# ruff (pinned in uv.lock): the format is checked, never rewritten here; `make format` does.
lint: setup
	$(UV) run --locked ruff format --check --quiet .
	$(UV) run --locked ruff check --quiet .

format: setup
	$(UV) run --locked ruff format .
	$(UV) run --locked ruff check --fix .

# The edit loop: the host-only tests (the core on CPython, the JS client): no workerd, no
# browser, no wrangler.
test-fast: setup lint
	node --test tests/js/*.test.mjs
	$(UV) run --locked pytest -q -m "not runtime and not browser and not wrangler" -p no:cacheprovider

# pywrangler runs `uv` from PATH (its `sync` step): the pinned one is put there. It then
# downloads CPython 3.13 and Pyodide's packages for the Worker, and wrangler deploys: both
# need the network and, for the deploy, `npx wrangler login` (or CLOUDFLARE_API_TOKEN).
deploy: setup
	PATH="$(abspath $(BOOT)/bin):$$PATH" $(UV) run --locked pywrangler deploy $(if $(ENV),--env $(ENV))

# Offline: the real upload bundle and each environment's bindings, without deploying.
deploy-check: setup
	npx wrangler deploy --dry-run --outdir .cache/deploy-dry-run $(if $(ENV),--env $(ENV))

bench: setup
	$(UV) run --locked python bench/run.py $(BENCH_ARGS)

# Days of traffic on one isolate (bench/soak.py): 200,000 requests, ~40 min on 2 cores. It runs
# on .cache/pyodide-patched when `make pyodide-patched` has built it (the shared bundle still
# has Pyodide's stack leak and dies after a few tens of thousands of requests).
soak: setup
	$(UV) run --locked python bench/soak.py $(SOAK_ARGS)

# The shared bundle plus the stack-leak fix (scripts/pyodide-stack-fix.json); needs a git dir of
# cloudflare/workerd: WORKERD_GIT=... make pyodide-patched. Not a dependency of `make test`.
pyodide-patched:
	scripts/patched-bundle.sh .cache/pyodide-patched

clean:
	rm -rf .venv node_modules .cache
