# evalkit: `make eval` runs the example evaluation, `make test` runs the tests.
# Every target sets up .venv on first use; nothing but Python 3.11+ is needed beforehand.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Installed-state stamp: reinstall when the dependencies change.
STAMP := $(VENV)/.installed
DATASETS := $(wildcard datasets/*/)
MLFLOW_PORT ?= 5000

.PHONY: help install lint eval eval-replicates eval-calibrate run test dev-mlflow clean

help:
	@echo "make eval               lint the datasets, then evaluate every test type (python eval.py --type=all)"
	@echo "make eval-<type>        evaluate one type, e.g. make eval-repeatability, make eval-smoke"
	@echo "make eval-replicates    run every type REPLICATES times; writes reports/report-stability.md"
	@echo "make eval-calibrate     find the REPEAT_COUNT where repeatability settles: report-calibration.md"
	@echo "make run ARGS='...'     python eval.py with your own options, e.g. ARGS='--type=functional --groups=billing'"
	@echo "make lint               lint every dataset under datasets/"
	@echo "make test               run the test suite"
	@echo "make dev-mlflow         MLflow UI on http://127.0.0.1:$(MLFLOW_PORT) over the local store"
	@echo "make install            create .venv and install evalkit (done by every target)"
	@echo "make clean              remove .venv and caches (keeps mlflow.db, mlruns/ and reports/)"

install: $(STAMP)

# torch goes first, pinned to the CPU wheel: an unpinned install would pull a multi-GB CUDA build.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev]'
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

test: install
	$(BIN)/python -m pytest

dev-mlflow: install
	$(BIN)/mlflow ui --backend-store-uri sqlite:///mlflow.db --host 127.0.0.1 --port $(MLFLOW_PORT)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
