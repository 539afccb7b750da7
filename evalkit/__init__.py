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
from evalkit._evaluation import EvaluationOutcome, evaluate, resume
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
    "TEST_TYPES", "Call", "CallRecord", "chart_points", "ChatEndpoint", "Component", "ConfigError",
    "confusion_matrix", "ConfusionMatrix", "Convergence", "convergence", "cumulative_series",
    "Dataset", "DatasetInvalid", "Entry", "EvalConfig", "EvalkitError", "evaluate",
    "EvaluationOutcome", "ExitStatus", "lint_dataset", "LintReport", "LintViolation",
    "load_dataset", "ProviderError", "resume", "RetryPolicy", "run_eval_script", "RunInterrupted",
    "Selection", "Threshold", "TrackingError", "wilson_interval", "WilsonInterval",
]
