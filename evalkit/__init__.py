"""evalkit: evaluate AI components against a golden dataset, repeatability first, in MLflow.

The public surface. The wings (dataset, config, calls, evaluation, review, scorers, stats,
tracking, reports, records, cli) each name what they offer in their own __init__; modules
starting with an underscore are private.
"""

from evalkit._errors import (
    ConfigError,
    DatasetInvalid,
    EvalkitError,
    ExitStatus,
    NotFound,
    RunInterrupted,
    TrackingError,
)
from evalkit.calls import Call, Component, Progress, Selection, Stop
from evalkit.cli import ProgressDisplay, run_eval_script
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
    EvaluationOutcome,
    RunContext,
    evaluate,
    evaluate_calibration,
    evaluate_replicates,
    rescore,
    resume,
)
from evalkit.records import CallRecord, Threshold
from evalkit.scorers import ChatEndpoint, ProviderError, RetryPolicy, ScoreResult
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

__all__ = [
    "TEST_TYPES", "Call", "CallRecord", "chart_points", "ChatEndpoint", "Component", "ConfigError",
    "confusion_matrix", "ConfusionMatrix", "Convergence", "convergence", "cumulative_series",
    "Dataset", "DatasetInvalid", "Entry", "EvalConfig", "EvalkitError", "evaluate",
    "evaluate_calibration", "evaluate_replicates", "EvaluationOutcome", "ExitStatus",
    "lint_dataset", "LintReport", "LintViolation", "load_dataset", "NotFound", "Progress",
    "ProgressDisplay", "ProviderError", "rescore", "resume", "RetryPolicy", "run_eval_script",
    "RunContext", "RunInterrupted", "ScoreResult", "Selection", "Stop", "Threshold",
    "TrackingError", "wilson_interval", "WilsonInterval",
]
