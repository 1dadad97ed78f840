# Everything runs from a local virtualenv; a fresh machine needs only Python 3.11+ and make.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install serve test a11y-tools lint typecheck check bench browsers db-stop clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

# axe-core (pinned in package.json + package-lock.json) for the accessibility checks the browser
# tests run inside Chromium; never served to users. npm when the machine has it, else the same
# locked tarballs fetched and checked by tools/npm_lock_install.py.
node_modules/.installed: package.json package-lock.json | $(BIN)/python
	if command -v npm >/dev/null; then npm ci --no-audit --no-fund --loglevel=error; \
	else $(BIN)/python tools/npm_lock_install.py; fi
	touch $@

a11y-tools: node_modules/.installed

## Set up, start the embedded database, load demo data and serve on http://$(HOST):$(PORT)/
serve: install
	$(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

## Check the import contracts (.importlinter), then run the whole test suite on a throwaway
## embedded PostgreSQL
test: install a11y-tools
	$(BIN)/lint-imports
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy .

check: lint typecheck

bench: install
	$(BIN)/python bench/bench_ledger.py
	$(BIN)/python bench/bench_api.py
	$(BIN)/python bench/bench_views.py
	$(BIN)/python bench/bench_trace.py
	$(BIN)/python bench/bench_branches.py
	$(BIN)/python bench/bench_generation.py
	$(BIN)/python bench/bench_import.py
	$(BIN)/python bench/bench_otlp.py
	$(BIN)/python bench/bench_outage.py
	$(BIN)/python bench/bench_scale.py --small

## Stop the embedded development database (serve starts it again)
db-stop: install
	$(BIN)/python manage.py embedded_db stop

clean:
	rm -rf $(VENV) node_modules .mypy_cache .ruff_cache .pytest_cache
