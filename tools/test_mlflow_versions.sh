#!/usr/bin/env bash
# make test-mlflow-versions VERSION...: for each MLflow version, in a virtualenv of its own
# under .cache/mlflow/<version> (kept between runs; only evalkit is reinstalled):
#   1. evalkit (editable, no semantic extra) with exactly that MLflow, and what the tests need;
#   2. the tests of what evalkit asks of MLflow itself (pytest -m mlflow_api: traces and
#      assessments, the reader, every private call of evalkit/tracking/_mlflow_private.py);
#   3. a fresh `evalkit init` scaffold's `make eval` (exact scoring) on that MLflow.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILDER=${EVALKIT_BUILD_PYTHON:-python3}
REPO=$(pwd)
[ "$#" -ge 1 ] || { echo "usage: $0 VERSION..." >&2; exit 2; }
unset PYTHONPATH PYTHON VIRTUAL_ENV MLFLOW_TRACKING_URI MAKEFLAGS MFLAGS MAKELEVEL
step() { printf '\n== %s\n' "$*"; }
fail() { echo "test-mlflow-versions FAILED: $*" >&2; exit 1; }

for version in "$@"; do
  venv=$REPO/.cache/mlflow/$version
  step "MLflow $version ($venv)"
  test -x "$venv/bin/python" || "$BUILDER" -m venv "$venv"
  started=$(date +%s)
  "$venv/bin/python" -m pip install --quiet "mlflow==$version" -e . \
    'pytest>=8,<10' 'pytest-xdist>=3.6,<4' 'pytest-timeout>=2.3,<3' 'hypothesis>=6.100,<7' \
    'psycopg2-binary>=2.9,<3' 'pexpect>=4.8,<5'
  echo "installed in $(( $(date +%s) - started )) s"
  installed=$("$venv/bin/python" -c 'import mlflow; print(mlflow.__version__)')
  [ "$installed" = "$version" ] || fail "asked for MLflow $version, got $installed"

  step "MLflow $version: the tests of what evalkit asks of MLflow (-m mlflow_api)"
  "$venv/bin/python" -m pytest -m mlflow_api -n auto --dist loadfile -p no:cacheprovider \
    --junitxml=".cache/junit-mlflow-$version.xml" || fail "MLflow $version: mlflow_api tests"

  step "MLflow $version: evalkit init, then make eval in the scaffold"
  project=$(mktemp -d /tmp/evalkit-mlflow-$version.XXXXXX)
  (
    cd "$project"
    git init --quiet .
    PATH="$venv/bin:$PATH" evalkit init . --component "mlflow-${version//./-}"
    PATH="$venv/bin:$PATH" make eval
    test -f mlflow.db || { echo "the run is not in the local store mlflow.db" >&2; exit 1; }
    # An exit status of 0 is not enough: every entry's trace and its verdicts must be there.
    "$venv/bin/python" - <<'PY'
import mlflow
client = mlflow.MlflowClient("sqlite:///mlflow.db")
(run,) = client.search_runs([e.experiment_id for e in client.search_experiments()])
traces = client.search_traces(locations=[run.info.experiment_id], run_id=run.info.run_id)
entries = int(run.data.metrics["entries"])
assert "traces_missing" not in run.data.metrics, run.data.metrics["traces_missing"]
assert len(traces) == entries, f"{len(traces)} traces for {entries} entries"
assert len({t.info.tags["evalkit.entry_id"] for t in traces}) == entries, "entry ids repeat"
assert all(t.info.assessments for t in traces), "a trace without its verdicts"
print(f"{entries} entries: {entries} traces, each with its own entry id and its verdicts")
PY
  ) || { rm -rf "$project"; fail "MLflow $version: make eval in a fresh scaffold"; }
  rm -rf "$project"
done
echo
echo "test-mlflow-versions: passed on MLflow $*"
