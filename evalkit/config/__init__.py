"""Configuration: the constants of an eval script, validated into one :class:`EvalConfig`."""

from evalkit.config._constants import EvalConfig
from evalkit.config._judge import prompt_use
from evalkit.config._values import (
    DEFAULT_CALL_RESOURCES,
    DEFAULT_SEQUENTIAL_QUESTION,
    SEQUENTIAL_QUESTIONS,
    is_mlflow_scorer,
    prompt_sha256,
    resource_amounts,
    trace_parameter,
)

__all__ = ["DEFAULT_CALL_RESOURCES", "DEFAULT_SEQUENTIAL_QUESTION", "SEQUENTIAL_QUESTIONS",
           "EvalConfig", "is_mlflow_scorer", "prompt_sha256",
           "prompt_use", "resource_amounts", "trace_parameter"]
