"""evalkit: evaluate AI components against a golden dataset, repeatability first, in MLflow.

This face is the user's API, everything an eval script, a notebook or a service needs:

- running an evaluation: :func:`evaluate`, :func:`evaluate_replicates`,
  :func:`evaluate_calibration`, :func:`resume` and :func:`rescore`, configured by an
  :class:`EvalConfig` (the constants of ``eval.py``), over a :class:`Selection` of the dataset,
  given a :class:`RunContext` (where it is recorded, a :class:`Tracker`; how it is stopped, a
  :class:`Stop`; followed through a :class:`Progress` callback, which :class:`ProgressDisplay`
  draws; :class:`InProcess` or another :class:`Executor` makes the calls), returning an
  :class:`EvaluationOutcome` (a :class:`ReplicatesOutcome`, a :class:`CalibrationOutcome`);
- writing the component: a :data:`Component` takes an :class:`Entry` and a :class:`Call`;
  :class:`ChatEndpoint` (with its :class:`RetryPolicy`) calls an OpenAI-compatible endpoint;
  a scorer function of your own returns a :class:`ScoreResult`;
- the eval script's command line: :func:`run_eval_script`, ending with an :class:`ExitStatus`;
- the dataset: :func:`load_dataset` (a :class:`Dataset`), :func:`lint_dataset` (a
  :class:`LintReport` of :class:`LintViolation`), :data:`TEST_TYPES`;
- records and statistics a report shows: :class:`CallRecord`, :class:`Threshold`,
  :func:`wilson_interval` (a :class:`WilsonInterval`), :func:`confusion_matrix` (a
  :class:`ConfusionMatrix`), :func:`convergence` (a :class:`Convergence`),
  :func:`cumulative_series`, :func:`chart_points`;
- the errors, all under :class:`EvalkitError` (the tree is drawn in :mod:`evalkit._errors`).

The wings (dataset, config, calls, evaluation, review, scorers, stats, tracking, reports,
records, cli) each name in their own ``__init__`` what the other wings use; modules starting
with an underscore are private.
"""

from evalkit._errors import (
    BudgetExhausted,
    ConfigError,
    DatasetInvalid,
    EvalkitError,
    ImportInvalid,
    LabelFileInvalid,
    NotFound,
    OverBudget,
    ProviderError,
    RunInterrupted,
    TrackingError,
    TrackingOffline,
)
from evalkit.calls import Call, Component, Executor, InProcess, Progress, Selection, Stop
from evalkit.cli import ExitStatus, ProgressDisplay, run_eval_script
from evalkit.config import EvalConfig
from evalkit.dataset import (
    TEST_TYPES,
    Dataset,
    Entry,
    LintReport,
    LintViolation,
    lint_dataset,
    load_dataset,
)
from evalkit.evaluation import (
    CalibrationOutcome,
    EvaluationOutcome,
    ReplicatesOutcome,
    RunContext,
    RunEstimate,
    estimate_run,
    evaluate,
    evaluate_calibration,
    evaluate_replicates,
    rescore,
    resume,
)
from evalkit.records import CallRecord, Threshold
from evalkit.scorers import ChatEndpoint, RetryPolicy, ScoreResult
from evalkit.stats import (
    ConfusionMatrix,
    Convergence,
    WilsonInterval,
    chart_points,
    confusion_matrix,
    convergence,
    cumulative_series,
    wilson_interval,
)
from evalkit.tracking import Tracker

__all__ = [
    "BudgetExhausted", "CalibrationOutcome", "Call", "CallRecord", "chart_points",
    "ChatEndpoint", "Component", "ConfigError", "confusion_matrix", "ConfusionMatrix",
    "convergence", "Convergence", "cumulative_series", "Dataset", "DatasetInvalid", "Entry",
    "estimate_run", "EvalConfig", "EvalkitError", "evaluate", "evaluate_calibration",
    "evaluate_replicates", "EvaluationOutcome", "Executor", "ExitStatus", "ImportInvalid",
    "InProcess", "LabelFileInvalid", "lint_dataset", "LintReport", "LintViolation",
    "load_dataset", "NotFound", "OverBudget", "Progress", "ProgressDisplay", "ProviderError",
    "ReplicatesOutcome", "rescore", "resume", "RetryPolicy", "run_eval_script", "RunContext",
    "RunEstimate", "RunInterrupted", "ScoreResult", "Selection", "Stop", "TEST_TYPES",
    "Threshold", "Tracker", "TrackingError", "TrackingOffline", "wilson_interval",
    "WilsonInterval",
]
