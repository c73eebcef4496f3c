# Fresh machine: Python 3.11+ with pip and venv. `make demo` runs the main job,
# `make test` runs the whole check (ruff, mypy --strict, the rule-coverage check, pytest). Both create and
# fill the local virtualenv .venv first, with every extra (`.[dev]` = all extras + the tools).
# `make dist` builds the sdist and wheel into dist/.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo demo-live test lint typecheck rules pytest bench dist clean view-images

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/markertools demo

# The worker story on the real pinned Codex CLI (installed under .cache/codex first), offline;
# `make demo-live ENGINE=claude-code`: the same story on the real pinned Claude Code CLI
# (installed under .cache/claude by scripts/install_claude.sh).
ENGINE ?= codex
demo-live: $(VENV)/.installed
ifeq ($(ENGINE),claude-code)
	$(BIN)/markertools demo --live --engine claude-code --claude-bin "$$(scripts/install_claude.sh)"
else
	$(BIN)/markertools demo --live --codex-bin "$$(scripts/install_codex.sh)"
endif

lint: $(VENV)/.installed
	$(BIN)/ruff check src tests bench examples scripts

typecheck: $(VENV)/.installed
	$(BIN)/mypy --strict src

# Every rule of docs/rules.md is named by a test (or on the script's shrinking allow-list).
rules: $(VENV)/.installed
	$(BIN)/python scripts/rulecheck.py

# The tests run against a real throwaway PostgreSQL server too (installed on Debian
# when missing - as root only -, started on a loopback port, removed afterwards); the
# wrapper fails when no server can be started, so the PostgreSQL tests never silently
# skip here. Without root and without PostgreSQL, point MARKERTOOLS_PG_DSN at an
# existing server: `MARKERTOOLS_PG_DSN=postgresql://me@host/db make test`.
# ... and against the real Codex CLI (scripts/install_codex.sh installs the pinned npm
# package under .cache/codex, Node.js from Debian when missing), the real Claude Code CLI
# (scripts/install_claude.sh: the pinned npm package under .cache/claude, bubblewrap and
# socat for its command sandbox from Debian when missing) and in a real headless
# Chromium (scripts/install_chromium.sh installs Debian's chromium when missing, as root).
# MARKERTOOLS_REQUIRE_REAL=1 turns a missing real part (Codex, Claude Code, PostgreSQL, Chromium) into
# a failure instead of a skip.
# Two pytest workers (pytest-xdist) on the two cores this runs on; PYTEST_WORKERS=0 for one process.
PYTEST_WORKERS ?= 2
pytest: $(VENV)/.installed
	MARKERTOOLS_CODEX_BIN="$${MARKERTOOLS_CODEX_BIN:-$$(scripts/install_codex.sh)}" \
	MARKERTOOLS_CLAUDE_BIN="$${MARKERTOOLS_CLAUDE_BIN:-$$(scripts/install_claude.sh)}" \
	MARKERTOOLS_CHROMIUM_BIN="$${MARKERTOOLS_CHROMIUM_BIN:-$$(scripts/install_chromium.sh)}" \
	MARKERTOOLS_REQUIRE_REAL=1 scripts/with_postgres.sh $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS)

test: lint typecheck rules pytest

bench: $(VENV)/.installed
	MARKERTOOLS_CHROMIUM_BIN="$${MARKERTOOLS_CHROMIUM_BIN:-$$(scripts/install_chromium.sh)}" \
	HYPOTHESIS_PROFILE=thorough $(BIN)/python bench/run_all.py
	# the long crash profile (TRN-9): SIGKILL a delivery at every store write, redeliver
	MARKERTOOLS_CRASH_POINTS=all $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/adapters/sqlite/test_sqlite_crash_redeliver.py

dist: $(VENV)/.installed
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis dist build

# Extraction against the CommonMark references (issue 41): 200,000 generated documents
# through markertools, cmark-gfm and markdown-it-py; every difference must be one that
# docs/parse.md documents. Not part of `make test` (which runs 2,000 of them): about 4
# minutes on the shared 2-core machine. `make exactness DOCS=20000` runs fewer.
DOCS ?= 200000
.PHONY: exactness
exactness: $(VENV)/.installed
	nice $(BIN)/python scripts/exactness.py --docs $(DOCS)

# Mutation testing (issue 20) of the security-critical pure modules: mutmut (pinned in
# docs/qa.md) on a throwaway copy, score per module, goals checked. Not part of `make
# test`: about 8.5 minutes for all ten modules on 2 cores (measured; docs/qa.md).
# `make mutation MODULES="gates paths"` runs only those.
.PHONY: mutation
mutation: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet 'mutmut==3.8.1'
	$(BIN)/python scripts/mutation.py $(MODULES)

# The two pictures of the README (docs/images/view-fleet.png, view-run.png): the bundled
# demo world and the demo run (tests/support/views.py) drawn by `markertools view` and
# `markertools dots view`, shot in headless Chromium. Deterministic input; rerun after
# changing a page.
view-images: $(VENV)/.installed
	MARKERTOOLS_CHROMIUM_BIN="$${MARKERTOOLS_CHROMIUM_BIN:-$$(scripts/install_chromium.sh)}" \
	$(BIN)/python scripts/make_view_images.py
