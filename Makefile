# Entry points (README.md): `make serve` sets up and serves the demo site; `make worker` installs and starts a CPU
# evaluation worker on the embedded defaults; `make test` runs every test; `make lint` runs ruff, mypy and the
# import-linter layer contracts (configured in pyproject.toml).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# Every step prints as it goes (pip's progress, the demo tree's runs, ingest's runs): a fresh clone's first
# `make serve` takes minutes, and a person watching should see it move at least every 10 s (issue 29).
export PYTHONUNBUFFERED := 1

.PHONY: serve setup worker test lint demo-data clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

$(VENV)/.web-installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install -r requirements.txt
	touch $@

$(VENV)/.worker-installed: requirements.txt requirements-eval.txt | $(BIN)/python
	$(BIN)/pip install -r requirements.txt -r requirements-eval.txt
	touch $@ $(VENV)/.web-installed

$(VENV)/.dev-installed: requirements.txt requirements-eval.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install -r requirements-dev.txt
	touch $@ $(VENV)/.web-installed $(VENV)/.worker-installed

# The demo tree lives in the data folder the settings use (PTB_DATA_DIR, default data/), as everything else does.
DEMO_RESULTS := $(or $(PTB_DATA_DIR),data)/demo-results

setup: $(VENV)/.web-installed
	$(BIN)/python manage.py migrate --noinput -v0
	$(BIN)/python manage.py import_published
	$(BIN)/python manage.py import_published --suite frogsgame
	test -d $(DEMO_RESULTS) || $(BIN)/python manage.py make_demo_results $(DEMO_RESULTS) --runs 40 --seed 7
	$(BIN)/python manage.py ingest $(DEMO_RESULTS)
	$(BIN)/python manage.py compact_warehouse

# The demo's judge re-runs: demo/mock_hosted_judge.py, a stand-in for (a mock of) the hosted LLM judge, unless
# PTB_JUDGE_COMMAND names a real one. Server and worker both need it (the server offers "Re-run judge" when set).
DEMO_JUDGE := ["$(abspath $(BIN))/python", "$(CURDIR)/demo/mock_hosted_judge.py", "{run_dir}"]

serve: setup
	PTB_JUDGE_COMMAND=$${PTB_JUDGE_COMMAND:-'$(DEMO_JUDGE)'} \
	PTB_PUBLIC_URL=$${PTB_PUBLIC_URL:-http://$(HOST):$(PORT)} $(BIN)/python manage.py serve --bind $(HOST):$(PORT)

# A CPU worker on the embedded defaults (same data/ folder, broker and worker token as `make serve`): makes the
# demo's rerunnable run real (tiny checkpoint, local dataset), then consumes the job queue. One job at a time;
# the prefork pool keeps the worker answering Celery's inspect (the job pages' "no worker" check) while it works.
WORKER_NAME ?= worker
worker: $(VENV)/.worker-installed
	test -d $(DEMO_RESULTS) || { echo "no $(DEMO_RESULTS): run 'make serve' first"; exit 1; }
	PTB_PUBLIC_URL=$${PTB_PUBLIC_URL:-http://$(HOST):$(PORT)} $(BIN)/python manage.py demo_worker_assets $(DEMO_RESULTS)
	PTB_JUDGE_COMMAND=$${PTB_JUDGE_COMMAND:-'$(DEMO_JUDGE)'} \
	PTB_TEMPLATES_DIR=$${PTB_TEMPLATES_DIR:-$${PTB_DATA_DIR:-data}/worker/templates} $(BIN)/celery -A ptbsite worker \
		--pool=prefork --concurrency=1 --loglevel=INFO -n $(WORKER_NAME)@%h

test: $(VENV)/.dev-installed
	bash scripts/ensure_chromium.sh
	$(BIN)/python -m pytest

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/mypy .
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) data/*.duckdb data/ducklake data/*.sqlite3 data/broker data/evals data/datasets data/worker staticfiles test-artifacts
