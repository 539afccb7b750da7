"""Configuration: the constants of an eval script, validated into one :class:`EvalConfig`."""

from evalkit.config._constants import KNOWN_CONSTANTS, EvalConfig
from evalkit.config._judge import JudgeSettings, prompt_use
from evalkit.config._values import (
    DEFAULT_CALL_RESOURCES,
    SCORERS,
    prompt_sha256,
    resource_amounts,
)
from evalkit.records import Threshold

__all__ = ["DEFAULT_CALL_RESOURCES", "KNOWN_CONSTANTS", "SCORERS", "EvalConfig", "JudgeSettings",
           "Threshold", "prompt_sha256", "prompt_use", "resource_amounts"]
