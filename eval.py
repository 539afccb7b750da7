"""The eval script: scoring constants + invoke_component, wired to the example support router.

Run it from the repository root:

    python eval.py --type=all                    # every test type (what `make eval` runs)
    python eval.py --type=repeatability          # one type (`make eval-repeatability`)
    python eval.py --type=functional --groups=billing,shipping
    python eval.py --type=all --human-review     # only entries flagged for human review
    python eval.py --type=all --replicates       # REPLICATES runs: how far the result moves
    python eval.py --type=repeatability --calibrate  # find the REPEAT_COUNT where results settle

All scoring parameters are the constants below; change them here, never through Makefile
variables, command-line flags or dataset fields. To evaluate your own component, replace
invoke_component (and MOCK_ADAPTERS, if it uses fixtures) and point DATASET_PATH at your data;
in another repository, `evalkit init` writes a starting eval.py. invoke_component may be
`async def`; a scorer may be your own function (SCORER_<TYPE> = my_scorer); COMPARED_FIELDS
names the fields of a structured output that repeatability and bias compare. With
--executor=ray the calls run on a Ray cluster (pip install 'evalkit-mlflow[ray]').
"""

from __future__ import annotations

import functools
import random
import threading

import evalkit
from evalkit import Call, Entry
from examples.support_router import CrmLookup, SupportRouter, load_model

# --- what is evaluated, and where it is recorded ------------------------------------------
EXPERIMENT_NAME = "support-router/golden"  # MLflow experiment: <component>/<eval-name>
DATASET_PATH = "datasets/support-tickets"
REPORTS_DIR = "reports"

# --- thresholds ------------------------------------------------------------------------------
EVAL_MIN_ACCURACY = 0.8  # default for every type without its own threshold
EVAL_MIN_ACCURACY_SMOKE = 1.0  # smoke entries must all pass
EVAL_MIN_F1 = 0.8

# --- repeatability ---------------------------------------------------------------------------
REPEAT_COUNT = 5  # 3-5 for routine runs, 10-20 for focused passes
EVAL_MIN_ACCURACY_REPEATABILITY = 0.6
REPEAT_SEMANTIC_SIMILARITY_SCORE = 0.9  # min average pairwise cosine of an entry's repeats
CALIBRATION_REPEAT_COUNT = 20  # calls per entry for --calibrate (`make eval-calibrate`)

# --- replicates (python eval.py --type=all --replicates, `make eval-replicates`) ------------------
REPLICATES = 2  # two is the smallest number that gives a spread; past 3-4, add items instead
ROOT_SEED = 0  # seeds per replicate derive from it, the experiment name and the index

# --- scoring method per test type -------------------------------------------------------------
SCORER = "exact"  # default: normalised equality with expected_output (expected keys only)
SCORER_REPEATABILITY = "semantic_similarity"  # needs the semantic extra (make install has it)
SCORER_BIAS = "semantic_similarity"
BIAS_SEMANTIC_SIMILARITY_SCORE = 0.9  # min average pairwise cosine of a bias group's outputs

# --- people's labels: the scorers measured (report-judge.md, evalkit label) -------------------
# A reviewer's pass/fail labels on the functional entries (their routes are the same every
# run); each run draws LABEL_SAMPLE entries of every labelled type at random, and the labels
# on drawn entries correct that type's accuracy for its scorer's errors.
LABELS_PATH = "datasets/support-tickets/labels.jsonl"
LABEL_SAMPLE = 20

# --- the component ---------------------------------------------------------------------------
COMPONENT_TEMPERATURE = 0.05  # sampling temperature of the router's softmax
COMPONENT_PARAMS = {"temperature": COMPONENT_TEMPERATURE}  # logged as MLflow params
# Seconds one component call may take (default 600); a call past it is recorded as that call's
# timeout error and abandoned, and the run goes on. The example router answers in microseconds
# once its first call has loaded the embedding model (seconds; a minute on a busy machine).
CALL_TIMEOUT = 120
MOCK_ADAPTERS = {"crm": CrmLookup}  # mock_fixtures name -> factory, built fresh per call


_LOADING = threading.Lock()


def _router() -> SupportRouter:
    # The first MAX_CONCURRENCY calls arrive together: one loads the model, the others wait.
    with _LOADING:
        return _loaded_router()


@functools.cache
def _loaded_router() -> SupportRouter:
    return SupportRouter(COMPONENT_TEMPERATURE, load_model())


def setup_component() -> None:
    """Load the embedding model before the first call: once per run in-process, once per
    worker with --executor=ray (optional; without it the first call loads it)."""
    _router()


def invoke_component(entry: Entry, call: Call) -> dict[str, str]:
    """Call the component once for ``entry``; ``call.mocks`` holds this call's fresh adapters.

    In replicate mode ``call.seed`` is set: the draw is seeded per replicate, entry and repeat,
    so a rerun with the same seeds reproduces it; otherwise every call is a fresh draw.
    """
    ticket = entry.input if isinstance(entry.input, str) else entry.input["ticket"]
    email = None if isinstance(entry.input, str) else entry.input.get("customer_email")
    rng = None if call.seed is None else random.Random(f"{call.seed}:{entry.id}:{call.repeat}")
    return _router().route(ticket, email, call.mocks.get("crm"), rng)


if __name__ == "__main__":
    raise SystemExit(evalkit.run_eval_script(globals(), invoke_component))
