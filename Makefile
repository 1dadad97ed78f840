# Everything runs from a local virtualenv; a fresh machine needs only Python 3.11+ and make.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# The dependencies install with uv (seconds; pip takes minutes): the uv on PATH, else one pip
# installs once into ~/.cache/transcripts/uv; with pip when uv fails. `make serve UV=` uses pip
# only. Wheels stay cached between runs (~/.cache/uv, ~/.cache/pip).
UV ?= uv

.PHONY: install serve test a11y-tools lint typecheck check bench browsers db-stop clean

# Without pip: a tenth of a second instead of seconds; the install adds it (tools/install_deps.py).
$(BIN)/python:
	$(PYTHON) -m venv --without-pip $(VENV)

$(VENV)/.installed: pyproject.toml tools/install_deps.py | $(BIN)/python
	$(BIN)/python tools/install_deps.py --uv '$(UV)'
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

# Every benchmark, one after the other (arguments after a comma); a failing one is reported and
# the rest still run. Each figure goes to $(BENCH_RECORD) (emptied first), then one table.
BENCHES ?= bench_ledger.py bench_api.py bench_views.py bench_trace.py bench_branches.py \
	bench_generation.py bench_import.py bench_export.py bench_otlp.py bench_outage.py \
	bench_scale.py,--small bench_first_page.py
BENCH_RECORD ?= bench/results/latest.jsonl

bench: install
	@mkdir -p $(dir $(BENCH_RECORD)) && : > $(BENCH_RECORD)
	@for b in $(BENCHES); do \
	  script=$${b%%,*}; echo "== bench/$$(echo $$b | tr , ' ')"; \
	  BENCH_RECORD=$(abspath $(BENCH_RECORD)) $(BIN)/python bench/$$(echo $$b | tr , ' '); rc=$$?; \
	  if [ $$rc != 0 ]; then echo "bench/$$script FAILED (exit $$rc)"; \
	    printf '{"bench": "%s", "failed": %d}\n' "$${script%.py}" $$rc >> $(BENCH_RECORD); fi; \
	done
	$(BIN)/python bench/report.py $(BENCH_RECORD)

## Stop the embedded development database (serve starts it again)
db-stop: install
	$(BIN)/python manage.py embedded_db stop

clean:
	rm -rf $(VENV) node_modules .mypy_cache .ruff_cache .pytest_cache
