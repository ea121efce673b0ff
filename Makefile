# Two commands do everything on a fresh machine with Python 3 and make:
#   make demo   runs the example crawl (offline, against a local demo site)
#   make test   creates .venv, installs the package with its test extras, runs the suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORPUS ?= ../shared/corpus/robots

.PHONY: demo test test-min test-latest lint bench bench-store venv clean crawl-real

# tox finds Python 3.10 and 3.13 on PATH; with pyenv, every installed version's bin is put there.
PYENV_BINS := $(shell command -v pyenv >/dev/null 2>&1 && for v in $$(pyenv versions --bare 2>/dev/null | grep -v /); do printf '%s:' "$$(pyenv root)/versions/$$v/bin"; done)
TOX := PATH="$(PYENV_BINS)$$PATH" $(BIN)/tox

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

venv: $(BIN)/.installed

demo: venv
	$(BIN)/python -m example_project.demo

test: venv
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

# The suite on the minimum supported Scrapy (Python 3.10) and on the newest (Python 3.13).
test-min: venv
	$(TOX) -e min

test-latest: venv
	$(TOX) -e latest

bench: venv
	$(BIN)/python benchmarks/bench_core.py $(CORPUS)

# The stores (memory, disk, Redis) beside Scrapy's built-in middleware; needs redis-server on PATH.
bench-store: venv
	$(BIN)/python benchmarks/bench_store.py --corpus $(CORPUS)

clean:
	rm -rf $(VENV) build *.egg-info

# Try the example project's spider against real sites (needs network).
crawl-real: venv
	cd example_project && PYTHONPATH=.. ../$(BIN)/scrapy crawl real_sites
