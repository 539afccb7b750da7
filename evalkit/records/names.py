"""Every name evalkit writes to MLflow: tags, params, metrics, artifacts, assessments.

One module, so that what a run writes and what a reader looks for (reports, compare, history,
plan, sync) cannot drift apart. Names of MLflow's own (``mlflow.*`` tags, assessment metadata)
are here too where evalkit writes or reads them. Per test type names come from
:class:`TypeNames`; a run's mode (the ``mode`` tag) is a :class:`Mode`. The names on traces
(assessments, span attributes) are kept in :mod:`evalkit.records._trace_names` and are
names of this module all the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum

from evalkit.records._trace_names import (  # noqa: F401 (names of this face)
    ENTRY_ID_TRACE_TAG,
    EXPECTATION_ASSESSMENT,
    GOLDEN_SOURCE,
    LABEL_WANTED_ASSESSMENT,
    REVIEW_ASSESSMENT,
    REVIEW_TRACE_TAG,
    SOURCE_RUN_METADATA,
    SPAN_COST,
    SPAN_ERROR,
    SPAN_JUDGE_MODEL,
    SPAN_LATENCY_MS,
    SPAN_LLM_MODEL,
    SPAN_MESSAGE_FORMAT,
    SPAN_PROMPT_USE,
    SPAN_REPEAT,
    SPAN_REPLICATE,
    SPAN_SEED,
    SPAN_TOKEN_USAGE,
    TRACE_NAME_TAG,
    TRACE_TAG_VALUE_LIMIT,
    code_source,
)


class Mode(StrEnum):
    """What a run is, as its ``mode`` tag says; an ordinary evaluation has no tag."""

    EVALUATION = "evaluation"
    REPLICATES = "replicates"
    CALIBRATION = "calibration"
    PLANNING = "planning"

    @classmethod
    def declared(cls, tags: Mapping[str, str]) -> Mode | None:
        """The mode a run's tags declare (``evaluation`` when there is no ``mode`` tag);
        ``None`` for a value evalkit never writes: a run someone else logged."""
        value = tags.get(MODE_TAG)
        if not value:
            return cls.EVALUATION
        return cls._value2member_map_.get(value)  # type: ignore[return-value]

    @classmethod
    def of(cls, tags: Mapping[str, str]) -> Mode:
        """The mode of a run evalkit made (readers check :meth:`declared` first: any other
        is a :class:`ValueError` naming the tag)."""
        mode = cls.declared(tags)
        if mode is None:
            raise ValueError(f"a run tagged {MODE_TAG}={tags.get(MODE_TAG)!r} was not made by "
                             f"evalkit (its modes: {', '.join(cls)})")
        return mode


# --- tags ------------------------------------------------------------------------------------

MODE_TAG = "mode"
TEST_TYPES_TAG = "test_types"
GROUPS_FILTER_TAG = "groups_filter"
EVAL_TYPE_TAG = "eval_type"
HUMAN_REVIEW_ONLY_TAG = "human_review_only"
VERSION_TAG = "evalkit_version"
VERDICT_TAG = "verdict"
RUN_URL_TAG = "run_url"
DESCRIPTION_TAG = "mlflow.note.content"
"""MLflow's run description, shown first on the run page."""
PARENT_RUN_TAG = "mlflow.parentRunId"
RUN_NAME_TAG = "mlflow.runName"
RUN_COLOR_TAG = "mlflow.runColor"
"""The dot beside a run's name in MLflow's classic run list (the GenAI list ignores it)."""
VERDICT_COLORS = {"PASS": "#2e7d32", "FAIL": "#d32f2f", "INCONCLUSIVE": "#f9a825"}
USER_TAG = "mlflow.user"
SOURCE_NAME_TAG = "mlflow.source.name"
SOURCE_COMMIT_TAG = "mlflow.source.git.commit"
GIT_COMMIT_TAG = "git_commit"
GIT_DIRTY_TAG = "git_dirty"
NO_COMMIT = "none: no commit yet"
NOT_A_CHECKOUT = "none: not a git checkout"
"""``git_commit`` before the first commit, and outside any git checkout."""
CODE_DIFF_SHA_TAG = "code_diff_sha256"
"""sha256 of the tracked files' uncommitted changes (``code/diff.patch``), when there are any."""
COMPONENT_SOURCE_SHA_TAG = "component_source_sha256"
"""sha256 of the eval script and every module it imported from under its folder."""
MLFLOW_VERSION_TAG = "mlflow_version"
PYTHON_VERSION_TAG = "python_version"
LINKED_PROMPTS_TAG = "mlflow.linkedPrompts"
"""Set by MLflow on a run that a prompt version is linked to: a JSON list of
``{"name", "version"}``."""
REPLICATE_TAG = "replicate"
SEED_TAG = "seed"
REPLICATES_TAG = "replicates"
ROOT_SEED_TAG = "root_seed"
RESUMED_TAG = "resumed"
RESUME_SAVED_TAG = "resume_calls_saved"
RESUME_MADE_TAG = "resume_calls_made"
STOPPED_FOR_TAG = "stopped_for"
"""Set on a run that ``MAX_COST_USD`` stopped (status ``KILLED``): ``budget``. It stays on the
run once resumed (``resumed`` says it was), with :data:`BUDGET_SPENT_TAG`."""
BUDGET_SPENT_TAG = "budget_spent_usd"
"""What the attempt that ``MAX_COST_USD`` stopped had spent, in US dollars, and the limit:
``0.0031 of 0.003``."""
SEQUENTIAL_TAG = "sequential"
"""Set on a sequential run: the question it answers (``dataset`` or ``population``); a
resume continues the run with it."""
AGAINST_TAG = "against"
"""Set on a sequential run against a recorded one (``--against``): the baseline's run id."""
AGAINST_MARGIN_TAG = "against_margin"
"""Its margins as ``--margin`` takes them: ``0.05``, ``0.05,functional=0.02``."""
SEQUENTIAL_SEED_TAG = "sequential_seed"
"""The seed of a sequential run's order of entries (from ``ROOT_SEED`` and the run id)."""
SEQUENTIAL_ARTIFACT = "sequential.json"
"""A sequential run's order of entries, the look at which each type settled, the calls made
and saved, and each type's interval at the stop."""
SEQUENTIAL_ENTRIES_METRIC = "sequential_entries_called"
SEQUENTIAL_CALLS_SAVED_METRIC = "sequential_calls_saved"
RESCORED_FROM_TAG = "rescored_from"
"""Set on a run that scored another run's recorded outputs again (``evalkit rescore``, no
component call made): that run's id."""
EXECUTOR_TAG = "executor"
"""Where the run's calls ran: ``in-process``, or the Ray cluster and its worker slots (a
resumed run: where its last calls ran)."""
TRACES_TAG = "evalkit.traces"
"""Set on a run whose entries are traced: ``evalkit sync`` writes the traces of its bundle."""
LABEL_DRAWS_TAG = "evalkit.label_draws"
"""The test types whose entries were drawn for labels, comma-separated."""
FEEDBACK_DIGEST_TAG = "evalkit.feedback_digest"
"""sha256 of the people's feedback (labels, reviewers' verdicts) the run's reports and
description were last rendered with; absent while they were rendered without any. Feedback
added later (in the MLflow UI) differs from it: ``evalkit report`` then renders them again."""
SYNCED_FROM_TAG = "evalkit.synced_from_run"

# --- params ----------------------------------------------------------------------------------

DATASET_PATH_PARAM = "DATASET_PATH"
REPEAT_COUNT_PARAM = "REPEAT_COUNT"
DATASET_DIGEST_PARAM = "dataset_digest"
DATASET_ENTRIES_PARAM = "dataset_entries"
MAX_CONCURRENCY_PARAM = "max_concurrency"
REPLICATES_PARAM = "REPLICATES"
ROOT_SEED_PARAM = "ROOT_SEED"
JUDGE_MODEL_PARAM = "judge_model"
JUDGE_PARAM_PREFIX = "judge_"
JUDGE_REPEATS_PARAM = "judge_repeats"
"""``JUDGE_REPEATS``, logged only when the judge is asked more than once (absent: once)."""
COMPONENT_PARAM_PREFIX = "component."
COMPONENT_PROMPT_PARAM_PREFIX = "component_prompt."
"""``component_prompt.<key>``: the sha256 of ``COMPONENT_PROMPTS[key]`` (first 16 digits)."""
PRICES_PARAM = "TOKEN_PRICES"
"""The ``TOKEN_PRICES`` constant, as every constant: ``{"model": [usd_in, usd_out]}``."""


def verdict_tags(verdict: str, run_name: str) -> dict[str, str]:
    """A run's verdict as its tag, at the head of its name and as its dot's colour, so that
    MLflow's run lists tell a failing run from a passing one without opening it. ``run_name``
    may already carry a verdict (a label moved it): it is replaced."""
    short = run_name.removeprefix("PASS ").removeprefix("FAIL ").removeprefix("INCONCLUSIVE ")
    return {VERDICT_TAG: verdict, RUN_NAME_TAG: f"{verdict} {short}",
            RUN_COLOR_TAG: VERDICT_COLORS[verdict]}


def planning_experiment(experiment: str) -> str:
    """Where ``evalkit plan`` logs its runs: beside the experiment, not in it, so that they
    stay out of its run lists (MLflow 3.17 lists every run of an experiment as an evaluation
    run, whatever its ``mlflow.runType``)."""
    return f"{experiment}/planning"


_SEED_PARAM_PREFIX = "seed_"


def seed_param(replicate: int) -> str:
    return f"{_SEED_PARAM_PREFIX}{replicate}"


def is_seed_param(key: str) -> bool:
    """``key`` is a replicate's seed param (:func:`seed_param`)."""
    return key.startswith(_SEED_PARAM_PREFIX) and key[len(_SEED_PARAM_PREFIX):].isdigit()


def judge_param(setting: str) -> str:
    """A judge setting's param: ``judge_model``, ``judge_temperature``, ..."""
    return f"{JUDGE_PARAM_PREFIX}{setting}"


# --- metrics of a run ------------------------------------------------------------------------

ENTRIES_METRIC = "entries"
CALLS_METRIC = "calls"
COMPONENT_ERRORS_METRIC = "component_errors"
REPEAT_COUNT_METRIC = "repeat_count"
REPLICATES_METRIC = "replicates"
TRACES_MISSING_METRIC = "traces_missing"
JUDGE_CALLS_METRIC = "judge_calls"
JUDGE_RETRIES_METRIC = "judge_retries"
JUDGE_FAILURES_METRIC = "judge_failures"
JUDGE_INVALID_METRIC = "judge_invalid"
"""Invalid judge replies: with ``JUDGE_REPEATS`` > 1 every one of them, not the items."""
COST_METRIC = "cost_usd"
"""What the component's calls cost, in US dollars, by ``TOKEN_PRICES``."""
JUDGE_COST_METRIC = "judge_cost_usd"


def tokens_metric(kind: str, judge: bool = False) -> str:
    """``tokens_input``, ``tokens_output``, ``tokens_total`` of the component's calls;
    ``judge_tokens_...`` of the judge's."""
    return f"{'judge_' if judge else ''}tokens_{kind}"


def call_latency_metric(percentile: str) -> str:
    """``call_latency_p50_ms``, ...: a percentile of the component's call latency."""
    return f"call_latency_{percentile}_ms"


def judge_latency_metric(percentile: str) -> str:
    return f"judge_latency_{percentile}_ms"


# --- per test type ---------------------------------------------------------------------------


_SUFFIXES = {
    "ci_lower": "accuracy_ci_lower", "ci_upper": "accuracy_ci_upper",
    "accuracy_change": "accuracy_change_pp", "f1_change": "f1_change_pp",
    "spread": "accuracy_spread", "sd": "accuracy_sd", "replicate_accuracy": "accuracy_replicate",
    "effective_n": "accuracy_effective_n", "scorer_digest": "scorer_source_sha256",
}
"""Fields of :class:`TypeNames` whose suffix is not their own name."""


@dataclass(frozen=True)
class TypeNames:
    """The names of one test type's metrics, params and assessments: ``<type>_<suffix>``."""

    test_type: str
    # metrics of one run
    samples: str
    correct: str
    errors: str
    accuracy: str
    precision: str
    recall: str
    f1: str
    ci_lower: str
    ci_upper: str
    accuracy_change: str
    f1_change: str
    cumulative_accuracy: str
    """Stepped: one point per sample, so the MLflow UI charts convergence."""
    cumulative_f1: str
    # the scorer against people's labels (evalkit.stats.check_judge)
    accuracy_corrected: str
    accuracy_corrected_low: str
    accuracy_corrected_high: str
    judge_tpr: str
    judge_tnr: str
    judge_kappa: str
    judge_flip_rate: str
    labels_drawn: str
    labels_by_choice: str
    # metrics of a replicate series' parent
    spread: str
    sd: str
    unstable_items: str
    repeated_items: str
    replicate_accuracy: str
    """Stepped by replicate."""
    noise_floor: str
    effective_n: str
    completion_variance: str
    item_variance: str
    total_variance: str
    # params
    min_accuracy: str
    min_f1: str
    scorer: str
    scorer_digest: str
    similarity_threshold: str
    judge_prompt: str
    # assessments on an entry's trace (the scorer's verdict is named test_type itself)
    stability: str
    """An item's stability across replicates, on a series parent's traces."""
    label: str
    """A person's pass/fail label (feedback, source HUMAN): a name of its own, so that
    MLflow's traces table and compare view show people's labels beside the scorer's verdicts,
    never counted with them."""

    @classmethod
    def of(cls, test_type: str) -> TypeNames:
        return cls(test_type, **{f.name: f"{test_type}_{_SUFFIXES.get(f.name, f.name)}"
                                 for f in fields(cls)[1:]})

    @classmethod
    def of_accuracy(cls, metric: str) -> TypeNames:
        """The type whose accuracy metric is ``metric`` (``functional_accuracy``)."""
        return cls.of(metric.removesuffix("_accuracy"))

    # metrics of a replicate series' parent, one per k (1 to the replicates)
    def pass_at(self, k: int) -> str:
        """``<type>_pass_at_<k>``: pass@k, at least one of k replicates right."""
        return f"{self.test_type}_pass_at_{k}"

    def pass_hat(self, k: int) -> str:
        """``<type>_pass_hat_<k>``: pass^k, all k replicates right."""
        return f"{self.test_type}_pass_hat_{k}"


def interval_metrics(metric: str) -> tuple[str, str]:
    """The bounds of a metric's interval: ``<metric>_ci_lower``, ``<metric>_ci_upper``."""
    return f"{metric}_ci_lower", f"{metric}_ci_upper"


# --- the evaluation dataset and the judge's prompts in MLflow's registries -------------------

DATASET_CONTEXT_TAG = "mlflow.data.context"
DATASET_CONTEXT = "evaluation"
DATASET_DIGEST_TAG = "evalkit.dataset_digest"
DATASET_SOURCE_TAG = "evalkit.source"
PROMPT_SHA_TAG = "evalkit.sha256"

# --- artifacts -------------------------------------------------------------------------------

EVALUATION_ARTIFACT = "results/evaluation.json"
"""Every scored item; the reports are rendered from it."""
TABLE_ARTIFACT = "results/entries.json"
"""The per-entry results table (``mlflow.log_table``), a grid in the MLflow UI."""
RAW_ARTIFACT_DIR = "raw"
RAW_RESULTS_FILE = "raw-results.jsonl"
"""Every component call as it happened, one JSON line each."""
REPORTS_ARTIFACT_DIR = "reports"
PROBE_ARTIFACT = "evalkit/run.json"
"""Written when a run starts: the artifact store takes writes before any call is made."""
STABILITY_ARTIFACT = "stability/stability.json"
STABILITY_ITEMS_ARTIFACT = "stability/items.json"
LOCK_ARTIFACT = "stability/replicates.lock.json"
CALIBRATION_ARTIFACT = "calibration/calibration.json"
PLAN_ARTIFACT = "planning/plan.json"
LABEL_DRAWS_ARTIFACT = "labels/draws.json"
CODE_DIFF_ARTIFACT = "code/diff.patch"
"""``git diff HEAD`` of the tracked files (redacted), logged when the tree is not clean."""
COMPONENT_PROMPTS_ARTIFACT = "code/component_prompts.json"
"""``COMPONENT_PROMPTS`` as run: key -> {name (in the prompt registry), sha256, template}."""
"""The entries drawn for people's labels, per test type, with their inclusion probabilities."""

SUMMARY_REPORT = "summary.md"
HUMAN_REVIEW_REPORT = "report-human-review.md"
JUDGE_REPORT = "report-judge.md"
STABILITY_REPORT = "report-stability.md"
CALIBRATION_REPORT = "report-calibration.md"
CALIBRATION_CHART = "calibration.svg"
PLANNING_REPORT = "report-planning.md"


def report_name(test_type: str) -> str:
    """The report of one test type: ``report-<type>.md``."""
    return f"report-{test_type}.md"


def convergence_chart(test_type: str) -> str:
    """The picture of a type's convergence chart, beside its report: ``convergence-<type>.svg``."""
    return f"convergence-{test_type}.svg"


def report_artifact(name: str) -> str:
    """Where a report lives in its run: ``reports/<name>``."""
    return f"{REPORTS_ARTIFACT_DIR}/{name}"


RAW_RESULTS_ARTIFACT = f"{RAW_ARTIFACT_DIR}/{RAW_RESULTS_FILE}"
