# Two entry points (README.md): `make serve` sets up and serves the demo site; `make test` runs every test.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: serve setup test demo-data clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.web-installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	touch $@

$(VENV)/.dev-installed: requirements.txt requirements-eval.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@ $(VENV)/.web-installed

DEMO_RESULTS := data/demo-results

setup: $(VENV)/.web-installed
	$(BIN)/python manage.py migrate --noinput -v0
	$(BIN)/python manage.py import_published
	$(BIN)/python manage.py import_published --suite frogsgame
	test -d $(DEMO_RESULTS) || $(BIN)/python manage.py make_demo_results $(DEMO_RESULTS) --runs 40 --seed 7
	$(BIN)/python manage.py ingest $(DEMO_RESULTS) --quiet

serve: setup
	@echo "Serving on http://$(HOST):$(PORT)/"
	$(BIN)/python manage.py serve --bind $(HOST):$(PORT)

test: $(VENV)/.dev-installed
	bash scripts/ensure_chromium.sh
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) data/*.duckdb data/ducklake data/*.sqlite3 data/broker data/evals staticfiles test-artifacts
