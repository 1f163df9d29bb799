# Two commands: `make run` and `make test`. Everything else is a helper of those.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | cksum | cut -d' ' -f1)
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test test-slow test-all bench migrate worker stop-db clean-data

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

migrate: install
	$(PY) manage.py migrate --noinput

# Starts the embedded database, migrates, indexes the docs as a demo collection (once),
# starts a worker in the background and the ASGI server in the foreground.
run: migrate
	$(PY) manage.py demo --host $(HOST) --port $(PORT)
	@$(PY) manage.py qcluster > .data/worker.log 2>&1 & echo $$! > .data/worker.pid; \
	trap 'kill $$(cat .data/worker.pid) 2>/dev/null' EXIT INT TERM; \
	$(PY) -m daphne -b $(HOST) -p $(PORT) airweave.asgi:application

worker: migrate
	$(PY) manage.py qcluster

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

# The drills and the other long tests (marked slow); CI runs them after `make test`.
test-slow: install
	$(PY) -m pytest -m slow $(PYTEST_ARGS)

test-all: install
	$(PY) -m pytest -m "" $(PYTEST_ARGS)

# BEIR SciFact (corpus.jsonl, queries.jsonl, qrels/): by default the data folder beside the checkout.
SCIFACT ?= $(dir $(CURDIR))shared/data/scifact

bench: install
	$(PY) bench/beir.py --dataset $(SCIFACT)

stop-db: install
	$(PY) -c "from pathlib import Path; from airweave.embedded_db import stop; stop(Path('.data'))"
