#!/usr/bin/env bash
# make test-adoption: evalkit as a user adopts it, from a wheel, outside this repository.
#   1. build the wheel; 2. install it (no extra) into a virtualenv: torch must be absent and
#   the size is printed (at most 1 GB), then the README's install line (git+file://localhost)
#   is run as typed with that virtualenv's own pip, never upgraded; 3. evalkit init a fresh project and `make eval` there
#   (exit 0); `evalkit init --template agent` lints and, without its extra, names the install; 4. a semantic_similarity run exits 2 naming the install command; 5. in a second
#   virtualenv, CPU torch first, then the semantic extra: the semantic run passes; 6. a
#   newcomer's first week in the same project: a CSV with string answers imported as a dataset,
#   a component behind an OpenAI-compatible endpoint (tools/adoption_stub.py) judged by an LLM,
#   `make eval` green, its system prompt changed and run again, `evalkit compare` naming the
#   prompt first, `evalkit rescore` with a changed judge prompt making no component call.
# The virtualenvs are kept in .cache/adoption between runs (only the fresh wheel is
# reinstalled); `rm -rf .cache/adoption` starts from nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
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

step "the README's install line, as typed, with the virtualenv's own pip ($("$BASE/bin/pip" --version | cut -d' ' -f1-2))"
# Its dependencies are installed by now: this checks that the pip a fresh venv has takes the
# requirement and installs evalkit from a clone (this one), then the fresh wheel goes back.
lines=$(sed -n "s|^\(pip install 'evalkit-mlflow @ [^']*'\).*|\1|p" README.md | sed "s|/path/to/evalkit|$REPO|")
[ -n "$lines" ] || fail "no pip install 'evalkit-mlflow @ ...' line in README.md"
started=$(date +%s)
while IFS= read -r line; do
  echo "$line"
  "$BASE/bin/python" -m pip uninstall --quiet --yes evalkit-mlflow
  PATH="$BASE/bin:$PATH" bash -c "$line --quiet" || fail "the README's install line: $line"
  grep -q '"vcs_info"' "$BASE"/lib/python3*/site-packages/evalkit_mlflow-*.dist-info/direct_url.json \
    || fail "the README's install line did not install from git: $line"
done <<< "$lines"
"$BASE/bin/python" -m pip install --quiet --force-reinstall --no-deps "$WHEEL"
echo "checked in $(( $(date +%s) - started )) s"

step "evalkit init, then make eval in the scaffold ($PROJECT)"
cd "$PROJECT"
git init --quiet .
PATH="$BASE/bin:$PATH" evalkit init . --component adoption
PATH="$BASE/bin:$PATH" make eval || fail "make eval in a fresh scaffold"

step "evalkit init --template agent from the wheel: its dataset lints; without the extra it names the install"
PATH="$BASE/bin:$PATH" evalkit init agent-template --template agent
PATH="$BASE/bin:$PATH" evalkit lint agent-template/datasets/orders || fail "the agent template's dataset"
status=0
PATH="$BASE/bin:$PATH" python agent-template/eval.py --type=all 2> agent.err || status=$?
cat agent.err
[ "$status" -ne 0 ] && grep -q "pip install 'evalkit-mlflow\[agent\]'" agent.err \
  || fail "the agent template without its extra: expected the install command"
rm -rf agent-template

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
step "first week: evalkit dataset import of a CSV with string answers"
cat > answers.csv <<'CSV'
question,answer
What is the capital of France?,Paris
What is the capital of Japan?,Tokyo
What is the capital of Kenya?,Nairobi
What is the capital of Peru?,Lima
What is the capital of Canada?,Ottawa
CSV
PATH="$BASE/bin:$PATH" evalkit dataset import answers.csv --to datasets/capitals \
  --input question --expected answer --test-types functional || fail "dataset import"
PATH="$BASE/bin:$PATH" evalkit lint datasets/capitals || fail "the imported dataset lints"

step "first week: an LLM component judged by an LLM, make eval green"
STUB=$PROJECT/stub
mkdir "$STUB"
"$BUILDER" "$REPO/tools/adoption_stub.py" "$STUB/requests" "$STUB/url" &
stub_pid=$!
trap 'kill "$stub_pid" 2>/dev/null; rm -rf "$PROJECT"' EXIT
for _ in $(seq 50); do [ -s "$STUB/url" ] && break; sleep 0.2; done
[ -s "$STUB/url" ] || fail "the stub endpoint did not start"
export OPENAI_BASE_URL
OPENAI_BASE_URL=$(cat "$STUB/url")
export OPENAI_API_KEY=sk-adoption-not-a-secret
# The scaffold's eval.py, pointed at the imported dataset, its component and scorer replaced
# as a user would (the definitions below override the scaffold's, before its main guard).
"$BASE/bin/python" - <<'PY'
from pathlib import Path
script = Path("eval.py")
text = script.read_text()
ours = """
DATASET_PATH = "datasets/capitals"
SCORER = "llm_judge"
JUDGE_MODEL = "judge"
SYSTEM_PROMPT = "Answer with the capital city only."
COMPONENT_PROMPTS = {"system": SYSTEM_PROMPT}


def invoke_component(entry: Entry, call: Call) -> str:
    reply = evalkit.ChatEndpoint("capitals-model").chat(
        [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": entry.input}],
        temperature=0.0)
    call.record_llm_response(reply)
    return reply.text


"""
guard = 'if __name__ == "__main__":'
script.write_text(text.replace(guard, ours + guard))
PY
PATH="$BASE/bin:$PATH" make eval || fail "make eval with the imported dataset and the LLM component"
component_calls() { grep -cx capitals-model "$STUB/requests" || true; }
[ "$(component_calls)" -eq 5 ] || fail "expected 5 component calls, got $(component_calls)"
run1=$(PATH="$BASE/bin:$PATH" evalkit history adoption/golden | sed -n 3p | awk '{print $3}')
echo "first run: $run1"

step "first week: the component's prompt changed, a second run, evalkit compare names it first"
sed -i 's/Answer with the capital city only./Answer with the capital city and nothing else./' eval.py
PATH="$BASE/bin:$PATH" python eval.py --type=all --json run2.json || fail "the second run"
run2=$("$BASE/bin/python" -c 'import json; print(json.load(open("run2.json"))["run_id"])')
PATH="$BASE/bin:$PATH" evalkit compare "$run1" "$run2" > compare.txt || fail "compare exit status"
cat compare.txt
first=$(grep -A1 -m1 "What differs" compare.txt | tail -1)
case "$first" in *"prompt adoption-system"*) ;; *) fail "compare's first difference: $first";; esac

step "first week: evalkit rescore of the first run with a changed judge prompt calls no component"
"$BASE/bin/python" - <<'PY'
from pathlib import Path
import evalkit
shipped = Path(evalkit.__file__).parent / "prompts" / "expected.yaml"
Path("judge-expected.yaml").write_text(shipped.read_text().replace(
    "wording may differ.", "wording and letter case may differ."))
PY
sed -i 's/^if __name__ == "__main__":/JUDGE_PROMPTS = {"expected": "judge-expected.yaml"}\n\n\n&/' eval.py
before=$(component_calls)
judged_before=$(grep -cx judge "$STUB/requests")
PATH="$BASE/bin:$PATH" evalkit rescore "$run1" || fail "evalkit rescore"
[ "$(component_calls)" -eq "$before" ] || fail "rescore called the component"
[ "$(grep -cx judge "$STUB/requests")" -gt "$judged_before" ] || fail "rescore asked no judge"
echo "rescore: $(( $(grep -cx judge "$STUB/requests") - judged_before )) judge calls, 0 component calls"

echo; echo "test-adoption passed"
