# Two entry points: `make dev` (run locally on the built-in model) and `make test`
# (every check). Both install what they need first, pinned by uv.lock and package-lock.json:
# `make dev` only what running needs (Node, wrangler and the page's libraries: package.json's
# dependencies, no Python packages), `make test` the rest (devDependencies, uv's groups).
UV_VERSION := 0.13.9
# wrangler 4.131 needs Node >= 22. Where the machine's node is older (Node 20 is still common),
# this Node, from the npm registry's node-<platform>-<arch> package, goes first on PATH.
NODE_VERSION := 22.23.3
BOOT := .cache/bootstrap
UV := $(BOOT)/bin/uv
NODE_OK := $(shell node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)' 2>/dev/null && echo yes)
ifeq ($(NODE_OK),yes)
NODE := $(shell command -v node)
else
NODE_PLATFORM := $(shell node -p 'process.platform + "-" + process.arch' 2>/dev/null || echo linux-x64)
NODE := $(abspath $(BOOT)/node/node_modules/node-$(NODE_PLATFORM)/bin/node)
export PATH := $(dir $(NODE)):$(PATH)
endif
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

.PHONY: setup setup-run check-settings lint format dev test test-fast bench bench-speed bench-check soak memcheck deploy deploy-check wrangler-dev pywrangler-dev clean

TOKEN_TABLE := src/doors/embeddings/cl100k_base.bin

# What running the Worker needs (make dev, deploy-check).
setup-run: $(NODE) node_modules/.run public/vendor/VERSIONS.json $(TOKEN_TABLE)
# Everything: the running set, the Python tools (uv.lock) and the test tools (devDependencies).
# The full npm install goes first: it stands for the running set's too (one npm ci, not two).
setup: node_modules/.installed .venv/.synced setup-run

# Only bin/node of the package (npm pack checks its integrity): its C headers, a third of it
# unpacked, are for building native addons, which nothing here does; its symbol table (strip,
# where binutils is installed) only names frames in a native crash dump.
$(abspath $(BOOT))/node/node_modules/node-%/bin/node:
	mkdir -p $(BOOT)/node/node_modules/node-$*
	cd $(BOOT)/node && npm pack --silent --loglevel=error node-$*@$(NODE_VERSION) >/dev/null
	tar -xzf $(BOOT)/node/node-$*-$(NODE_VERSION).tgz -C $(BOOT)/node/node_modules/node-$* --strip-components=1 package/bin/node
	rm $(BOOT)/node/node-$*-$(NODE_VERSION).tgz
	if command -v strip >/dev/null; then strip $@; fi
	$@ --version

$(UV):
	python3 -m venv $(BOOT)
	$(BOOT)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

.venv/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --locked --quiet
	touch $@

node_modules/.run: package.json package-lock.json $(NODE)
	npm ci --omit=dev --no-audit --no-fund --loglevel=error
	touch $@

node_modules/.installed: package.json package-lock.json $(NODE)
	npm ci --no-audit --no-fund --loglevel=error
	touch $@ node_modules/.run

# The page's libraries, copied from the pinned node_modules: served as assets, no CDN.
public/vendor/VERSIONS.json: node_modules/.run scripts/vendor-assets.mjs
	node scripts/vendor-assets.mjs

# The cl100k_base token table /v1/embeddings decodes token ids with (LangChain's default sends
# them), from the pinned js-tiktoken; wrangler's default **/*.bin rule uploads it as Data.
$(TOKEN_TABLE): node_modules/.run scripts/token-table.mjs
	node scripts/token-table.mjs

# A wrong setting (a default model outside AI_MODELS, a bad number...) stops the start, naming
# the variable and the environment: src/base/settings.py's own checks over wrangler.toml's vars
# (and .dev.vars for dev) on the machine's Python, before workerd starts.
check-settings:
	python3 scripts/check_settings.py $(if $(ENV),--env $(ENV))

dev: setup-run
	python3 scripts/check_settings.py --dev-vars .dev.vars $(if $(ENV),--env $(ENV))
	PORT=$(PORT) node local/launch.mjs --snapshot auto --persist .cache/durable-objects $(if $(ENV),--env $(ENV))

# The pytest groups by marker; together they are the whole suite. A group that a -k in
# PYTEST_ADDOPTS leaves empty exits 5 ("no tests collected"): that is not a failure here.
HOST_TESTS := -m "not runtime and not browser and not wrangler and not bench" --ignore=tests/browser
WORKERD_TESTS := -m "(runtime or wrangler) and not browser and not bench"
BROWSER_TESTS := -m "browser and not bench"
# Speed checks (marker bench): time, which a busy machine changes, so never in make test.
BENCH_TESTS := -m bench
PYTEST := $(UV) run --locked pytest -p no:cacheprovider

# Fastest first, so that a host failure shows in seconds: lint, the JS unit tests, the host
# tests, types; then the Worker on workerd (pytest, then the JS clients); then the page in Chromium.
test: setup lint
	node --test --test-reporter=dot 'tests/js/*.test.mjs'
	$(PYTEST) -q $(HOST_TESTS) || [ $$? -eq 5 ]
	$(UV) run --locked mypy
	$(PYTEST) $(WORKERD_TESTS) || [ $$? -eq 5 ]
	node --test 'tests/js/runtime/*.test.mjs'
	$(PYTEST) $(BROWSER_TESTS) || [ $$? -eq 5 ]

# ruff (pinned in uv.lock): the format is checked, never rewritten here; `make format` does.
lint: setup
	$(UV) run --locked ruff format --check --quiet .
	$(UV) run --locked ruff check --quiet .

format: setup
	$(UV) run --locked ruff format .
	$(UV) run --locked ruff check --fix .

# The edit loop: the host-only tests (the core on CPython, the JS client): no workerd, no
# browser, no wrangler.
# The JS tests run beside pytest (their output after it): two processes get two shares of a
# machine that other work keeps busy, and the loop takes the longer of the two, not the sum.
test-fast: setup lint
	@mkdir -p .cache; node --test --test-reporter=dot 'tests/js/*.test.mjs' >.cache/test-fast-js.log 2>&1 & js=$$!; \
	  $(PYTEST) -q $(HOST_TESTS); py=$$?; wait $$js; node=$$?; \
	  echo "node --test tests/js/*.test.mjs:"; cat .cache/test-fast-js.log; \
	  [ $$node -eq 0 ] || echo "the JS tests failed (above)"; [ $$py -eq 0 ] && [ $$node -eq 0 ]

# pywrangler runs `uv` from PATH (its `sync` step): the pinned one is put there. It then
# downloads CPython 3.13 and Pyodide's packages for the Worker, and wrangler deploys: both
# need the network and, for the deploy, `npx wrangler login` (or CLOUDFLARE_API_TOKEN).
deploy: setup
	PATH="$(abspath $(BOOT)/bin):$$PATH" $(UV) run --locked pywrangler deploy $(if $(ENV),--env $(ENV))

# `wrangler dev` as Cloudflare documents it, on the pinned workerd through local/workerd (the
# offline Pyodide bundle when WORKERD_PYODIDE_DIR is set): --local has no Workers AI (it is
# remote-only); ONLINE=1 drops --local, after `npx wrangler login` (docs/OPERATING.md#wrangler-dev).
wrangler-dev: setup
	MINIFLARE_WORKERD_PATH="$(abspath local/workerd)" REAL_WORKERD="$$(node -p 'require("workerd").default')" \
	  npx wrangler dev $(if $(ONLINE),,--local) --ip 127.0.0.1 --port $(PORT) $(if $(ENV),--env $(ENV))

# `pywrangler dev` (workers-py): its sync step runs the pinned uv from PATH and downloads CPython
# and Pyodide's packages, then it runs `wrangler dev` (Workers AI needs `npx wrangler login`).
pywrangler-dev: setup
	PATH="$(abspath $(BOOT)/bin):$$PATH" $(UV) run --locked pywrangler dev --ip 127.0.0.1 --port $(PORT) $(if $(ENV),--env $(ENV))

# Offline: the real upload bundle and each environment's bindings, without deploying.
deploy-check: setup-run check-settings
	npx wrangler deploy --dry-run --outdir .cache/deploy-dry-run $(if $(ENV),--env $(ENV))

# bench/run.py's workerd and host figures, then the decoder's growth with its input (exits 1
# when it is superlinear: a speed check that was a clock bound in the tests until issue 44).
bench: setup
	$(UV) run --locked python bench/run.py $(BENCH_ARGS)
	$(MAKE) --no-print-directory bench-speed

# The speed checks that were clock bounds in the tests until issue 44; exits 1 on a miss.
bench-speed: setup
	$(UV) run --locked python bench/probes/decoder_linear.py --check
	node --test 'bench/speed/*.test.mjs'
	$(PYTEST) $(BENCH_TESTS)

# Issue 35's targets: the relay's CPU per token against the JS re-framer's (interleaved on
# workerd), the delay windows add, client gone -> model closed; exits 1 on a miss (~4-8 min).
bench-check: setup
	node bench/check.mjs $(BENCH_CHECK_ARGS)

# Days of traffic on one isolate (bench/soak.py): 200,000 requests, ~40 min on 2 cores.
soak: setup
	$(UV) run --locked python bench/soak.py $(SOAK_ARGS)

# The isolate's JS heap + Wasm memory per load (bench/memcheck.py): fails past 128 MB. ~3 min.
memcheck: setup
	$(UV) run --locked python bench/memcheck.py $(MEMCHECK_ARGS)

clean:
	rm -rf .venv node_modules .cache
