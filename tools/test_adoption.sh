#!/usr/bin/env bash
# make test-adoption: evalkit as a user adopts it, from a wheel, outside this repository.
#   1. build the wheel; 2. install it (no extra) into a virtualenv: torch must be absent and
#   the size is printed (at most 1 GB); 3. evalkit init a fresh project and `make eval` there
#   (exit 0); 4. a semantic_similarity run exits 2 naming the install command; 5. in a second
#   virtualenv, CPU torch first, then the semantic extra: the semantic run passes.
# The virtualenvs are kept in .cache/adoption between runs (only the fresh wheel is
# reinstalled); `rm -rf .cache/adoption` starts from nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
# The interpreter that builds the wheel and creates the virtualenvs; the scaffold itself runs
# with the `python` on PATH, as a user's would.
BUILDER=${EVALKIT_BUILD_PYTHON:-python3}
CACHE=$(pwd)/.cache/adoption
BASE=$CACHE/venv-base
SEMANTIC=$CACHE/venv-semantic
PROJECT=$(mktemp -d /tmp/evalkit-adoption.XXXXXX)
trap 'rm -rf "$PROJECT"' EXIT
# Nothing of this repository may leak into the user's environment.
unset PYTHONPATH PYTHON VIRTUAL_ENV MLFLOW_TRACKING_URI MAKEFLAGS MFLAGS MAKELEVEL
step() { printf '\n== %s\n' "$*"; }
fail() { echo "test-adoption FAILED: $*" >&2; exit 1; }

step "build the wheel"
rm -rf "$CACHE/dist" build
"$BUILDER" -m pip wheel --quiet --no-deps --no-build-isolation -w "$CACHE/dist" .
rm -rf build
WHEEL=$(ls "$CACHE"/dist/evalkit_mlflow-*.whl)
echo "$WHEEL"

install_wheel() {  # venv, requirement: a fresh venv on first use; the wheel replaced each run
  test -x "$1/bin/python" || "$BUILDER" -m venv "$1"
  "$1/bin/python" -m pip install --quiet --force-reinstall --no-deps "$WHEEL"
  "$1/bin/python" -m pip install --quiet "$2"
}

step "base install (no extra)"
started=$(date +%s)
install_wheel "$BASE" "$WHEEL"
echo "installed in $(( $(date +%s) - started )) s"
if "$BASE/bin/python" -m pip list 2>/dev/null | grep -iE '^(torch|triton|nvidia-)'; then
  fail "the base install pulled torch/CUDA"
fi
"$BASE/bin/python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is not None)' \
  || fail "torch is importable from the base install"
size=$(du -sm "$BASE" | cut -f1)
echo "base install: ${size} MB, $("$BASE/bin/python" -m pip list 2>/dev/null | tail -n +3 | wc -l) distributions, no torch"
[ "$size" -le 1024 ] || fail "the base install is ${size} MB (over 1 GB)"
"$BASE/bin/evalkit" --version

step "evalkit init, then make eval in the scaffold ($PROJECT)"
cd "$PROJECT"
git init --quiet .
PATH="$BASE/bin:$PATH" evalkit init . --component adoption
PATH="$BASE/bin:$PATH" make eval || fail "make eval in a fresh scaffold"

step "a semantic_similarity run without the extra exits 2 naming the install command"
sed 's/^SCORER = "exact".*/SCORER = "exact"\nSCORER_REPEATABILITY = "semantic_similarity"\nREPEAT_SEMANTIC_SIMILARITY_SCORE = 0.9/' \
  eval.py > eval_semantic.py
status=0
PATH="$BASE/bin:$PATH" python eval_semantic.py --type=repeatability 2> semantic.err || status=$?
cat semantic.err
[ "$status" -eq 2 ] || fail "expected exit 2, got $status"
grep -q "pip install 'evalkit-mlflow\[semantic\]'" semantic.err || fail "no install command"

step "the semantic extra, CPU torch first"
started=$(date +%s)
test -x "$SEMANTIC/bin/python" || "$BUILDER" -m venv "$SEMANTIC"
"$SEMANTIC/bin/python" -m pip install --quiet torch==2.13.0  # the CPU wheel on this machine
install_wheel "$SEMANTIC" "evalkit-mlflow[semantic] @ file://$WHEEL"
echo "installed in $(( $(date +%s) - started )) s"
if "$SEMANTIC/bin/python" -m pip list 2>/dev/null | grep -iE '^(triton|nvidia-)'; then
  fail "the semantic install pulled CUDA"
fi
echo "with the semantic extra: $(du -sm "$SEMANTIC" | cut -f1) MB"
PATH="$SEMANTIC/bin:$PATH" python eval_semantic.py --type=repeatability \
  || fail "the semantic run with the extra installed"
echo; echo "test-adoption passed"
