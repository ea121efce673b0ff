# Two commands do everything on a fresh machine with Python 3 and make:
#   make demo   creates .venv with the package and Scrapy only, runs the example crawl
#               (offline, against a local demo site)
#   make test   adds the dev extras (tests, mypy, build, twine, Sphinx) to .venv, runs the suite
#               on every CPU (pytest-xdist; WORKERS=0 runs it in one process)
#   make docs   builds the Sphinx site into docs/_build/html, warnings as errors
#   make settings-table  writes the settings page's table from the code's table
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The robots.txt files the benchmarks read: the sample committed in benchmarks/corpus, or
# a larger corpus of your own (make bench CORPUS=/path/to/robots).
CORPUS ?= benchmarks/corpus

.PHONY: mutate demo test docs settings-table test-min test-latest test-reactorless lint typecheck c-fallback-check package-check bench bench-store bench-compare venv clean crawl-real

# The suite's worker processes (pytest-xdist's -n): one per CPU by default.
WORKERS ?= auto

# tox finds Python 3.10 and 3.13 on PATH; with pyenv, every installed version's bin is put there.
PYENV_BINS := $(shell command -v pyenv >/dev/null 2>&1 && for v in $$(pyenv versions --bare 2>/dev/null | grep -v /); do printf '%s:' "$$(pyenv root)/versions/$$v/bin"; done)
TOX := PATH="$(PYENV_BINS)$$PATH" WORKERS=$(WORKERS) $(BIN)/tox

# The package (editable, its C accelerator built in place) and its runtime dependencies:
# what the demo needs.
$(BIN)/.runtime: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

# The dev extras, added to the same venv: what every other target needs.
$(BIN)/.installed: $(BIN)/.runtime
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

venv: $(BIN)/.installed

# The example project runs from its own directory, as `scrapy crawl` does.
demo: $(BIN)/.runtime
	cd example_project && ../$(BIN)/python -m example_project.demo

# Each worker runs its own tests' servers (loopback origins and redis-server on free ports) and its own
# reactor or loop; --dist worksteal hands a finished worker the tests of one still busy. The twenty
# slowest tests are listed at the end (docs/development.md: no test should take over 15 s on a quiet machine).
test: venv
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-logo
	$(BIN)/python -m pytest -n $(WORKERS) --dist worksteal --durations=20

# Mutation testing (cosmic-ray) of one module of the decision code against the tests that guard it, in a
# copy of the checkout (tests/mutate.py): make mutate MUTATE=scrapy_rfc9309/core/verdict.py MUTATE_TESTS="tests/..."
MUTATE ?= scrapy_rfc9309/enforcement/release_memo.py
MUTATE_TESTS ?= tests/test_release_memo.py tests/test_mutants_release_memo.py
# Options of tests/mutate.py: --sample N (N mutants drawn at random), --lines A-B,C-D, --timeout S.
MUTATE_OPTIONS ?=
mutate: venv
	$(BIN)/python tests/mutate.py $(MUTATE_OPTIONS) $(MUTATE) $(MUTATE_TESTS)

# Every campaign of tests/mutate.py's CAMPAIGNS in turn: several thousand mutants (those in annotations not
# run), days on a 2-CPU machine (docs/development.md); MUTATE_OPTIONS="--sample 50" runs 50 of each module,
# a few hours.
.PHONY: mutate-all
mutate-all: venv
	$(BIN)/python tests/mutate.py --all $(MUTATE_OPTIONS)

# The documentation site; any Sphinx warning fails the build.
docs: venv
	$(BIN)/sphinx-build -W --keep-going -b html docs docs/_build/html

# The settings page's table, generated from scrapy_rfc9309.config.SETTINGS into docs/settings.md
# (committed: the page reads whole in a checkout; a test and `make docs` fail when it is stale), and
# docs/api.md, the API reference as plain Markdown, from docs/api-docstrings.md and the docstrings.
settings-table: venv
	$(BIN)/python docs/conf.py

# The suite on the minimum supported Scrapy (Python 3.10) and on the newest (Python 3.13).
test-min: venv
	$(TOX) -e min

test-latest: venv
	$(TOX) -e latest

# The suite on the newest Scrapy (Python 3.13) without a Twisted reactor (TWISTED_REACTOR_ENABLED = False).
test-reactorless: venv
	$(TOX) -e reactorless

# mypy on the package, then the C accelerator's stub checked against the built module (with the
# package's mypy settings: building the stub's package reads modules that import warcio, which has no types).
typecheck: venv
	$(BIN)/mypy
	$(BIN)/python -m mypy.stubtest --mypy-config-file pyproject.toml scrapy_rfc9309.core._speedups

# The C accelerator built with its plain-C fallbacks only (what a compiler without GCC's
# or MSVC's extensions compiles), warnings as errors, and its tests run against that build.
c-fallback-check: venv
	PYTHON=$(BIN)/python .ci/c-fallback-check

# Builds the sdist and the wheel, checks them (twine, contents), installs the wheel in a
# clean venv and runs a crawl and `scrapy robotstxt` with it, on 127.0.0.x only.
package-check: venv
	PYTHON=$(BIN)/python .ci/package-check

bench: venv
	$(BIN)/python benchmarks/bench_core.py $(CORPUS)

# The stores (memory, disk, Redis) beside Scrapy's built-in middleware; needs redis-server on PATH.
bench-store: venv
	$(BIN)/python benchmarks/bench_store.py --corpus $(CORPUS)

# Before and after in one run: the package at commit BASE (a temporary git worktree, its own build)
# beside the working tree, alternating: hook time, decisions and memory against Protego, ledger cost.
# QUICK=1 checks that it works; RUNS=N sets the runs (default 5).
bench-compare: venv
	@test -n "$(BASE)" || { echo "usage: make bench-compare BASE=<commit> [QUICK=1] [RUNS=N]"; exit 2; }
	$(BIN)/python benchmarks/compare.py $(BASE) --corpus $(CORPUS) $(if $(QUICK),--quick) $(if $(RUNS),--runs $(RUNS))

clean:
	rm -rf $(VENV) build dist *.egg-info docs/_build

# Try the example project's spider against real sites (needs network).
crawl-real: $(BIN)/.runtime
	cd example_project && ../$(BIN)/scrapy crawl real_sites
