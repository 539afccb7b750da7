"""evalkit: evaluate AI components against a golden dataset, repeatability first, in MLflow.

The public surface; everything else lives in private modules.
"""

from evalkit._cli import run_eval_script
from evalkit._config import EvalConfig, Threshold
from evalkit._dataset import (
    TEST_TYPES,
    Dataset,
    Entry,
    LintReport,
    LintViolation,
    lint_dataset,
    load_dataset,
)
from evalkit._errors import (
    ConfigError,
    DatasetInvalid,
    EvalkitError,
    ExitStatus,
    RunInterrupted,
    TrackingError,
)
from evalkit._evaluation import EvaluationOutcome, evaluate
from evalkit._llm import ChatEndpoint, ProviderError, RetryPolicy
from evalkit._loop import Call, CallRecord, Component
from evalkit._selection import Selection
from evalkit._statistics import (
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
    "TEST_TYPES", "Call", "CallRecord", "ChatEndpoint", "Component", "ConfigError",
    "ConfusionMatrix", "ProviderError", "RetryPolicy",
    "Convergence", "Dataset", "DatasetInvalid", "Entry", "EvalConfig", "EvalkitError",
    "EvaluationOutcome", "ExitStatus", "LintReport", "LintViolation", "RunInterrupted",
    "Selection", "Threshold", "TrackingError", "WilsonInterval", "chart_points",
    "confusion_matrix", "convergence", "cumulative_series", "evaluate", "lint_dataset",
    "load_dataset", "run_eval_script", "wilson_interval",
]
