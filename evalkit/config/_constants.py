"""Configuration: the scoring constants of ``eval.py``, validated into one object.

All scoring parameters live as constants in ``eval.py`` (never Makefile variables, CLI flags or
dataset fields). :meth:`EvalConfig.from_constants` reads them from the script's namespace,
rejects misspelt names instead of silently ignoring them, and resolves per-type overrides.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit._errors import ConfigError
from evalkit.config._judge import JudgeSettings, judge_settings
from evalkit.config._values import (
    DEFAULT_KEY,
    adapters,
    cosine,
    count,
    fraction,
    integer,
    mapping,
    param_value,
    per_type,
    positive_int,
    positive_number,
    repeat_count,
    scorer_name,
    string,
)
from evalkit.dataset import TEST_TYPES
from evalkit.records import Threshold

# Every constant name evalkit reads. Upper-case names in eval.py with one of the prefixes below
# that are not listed here are treated as typos.
_PER_TYPE = ("EVAL_MIN_ACCURACY", "EVAL_MIN_F1", "SCORER")
_SINGLE = (
    "EXPERIMENT_NAME", "DATASET_PATH", "REPORTS_DIR", "REPEAT_COUNT",
    "REPEAT_SEMANTIC_SIMILARITY_SCORE", "BIAS_SEMANTIC_SIMILARITY_SCORE",
    "SEMANTIC_SIMILARITY_SCORE", "MOCK_ADAPTERS", "COMPONENT_PARAMS", "REPLICATES", "ROOT_SEED",
    "CALIBRATION_REPEAT_COUNT", "MAX_CONCURRENCY", "CALL_TIMEOUT", "JUDGE_MODEL",
    "JUDGE_MAX_TOKENS", "JUDGE_SEED",
    "JUDGE_TIMEOUT", "JUDGE_MAX_ATTEMPTS", "JUDGE_MAX_WAIT", "JUDGE_PROMPTS",
    "JUDGE_INVALID_IS_ERROR", "JUDGE_SYSTEM_IN_USER",
)
KNOWN_CONSTANTS = frozenset(
    [*_SINGLE, *_PER_TYPE, *(f"{base}_{t.upper()}" for base in _PER_TYPE for t in TEST_TYPES)]
)
_RESERVED_PREFIXES = ("EVAL_", "REPEAT_", "REPLICATE", "ROOT_SEED", "SCORER", "BIAS_", "SEMANTIC_",
                      "EXPERIMENT", "DATASET", "CALIBRATION", "JUDGE", "MAX_CONCURRENCY",
                      "CALL_TIMEOUT")
DEFAULT_REPLICATES = 2
DEFAULT_CALIBRATION_REPEAT_COUNT = 20
DEFAULT_CALL_TIMEOUT = 600.0
_EXPERIMENT_PATTERN = re.compile(r"^[^/\s][^/]*/[^/]*[^/\s]$")


@dataclass(frozen=True)
class EvalConfig:
    """The scoring constants of one eval script."""

    experiment_name: str
    dataset_path: Path
    script: str
    reports_dir: Path = Path("reports")
    repeat_count: int | None = None
    replicates: int = DEFAULT_REPLICATES
    """How many times replicate mode runs the whole selection (``--replicates``)."""
    root_seed: int = 0
    """Root of the per-replicate seeds (see :func:`evalkit.stats.replicate_seed`)."""
    calibration_repeat_count: int = DEFAULT_CALIBRATION_REPEAT_COUNT
    """Calls per repeatability entry in calibration mode (``--calibrate``)."""
    max_concurrency: int = 8
    """Component calls, and judge calls, in flight at once."""
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    """Seconds a component call may take before it is recorded as a timeout and abandoned."""
    judge: JudgeSettings | None = None
    """``None`` unless ``JUDGE_MODEL`` is declared."""
    min_accuracy: Mapping[str, float] = field(default_factory=dict)
    """Per type, plus ``"default"``."""
    min_f1: Mapping[str, float] = field(default_factory=dict)
    scorer: Mapping[str, str] = field(default_factory=lambda: {DEFAULT_KEY: "exact"})
    similarity_threshold: float | None = None
    repeat_similarity_threshold: float | None = None
    bias_similarity_threshold: float | None = None
    mock_adapters: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    component_params: Mapping[str, Any] = field(default_factory=dict)
    constants: Mapping[str, Any] = field(default_factory=dict)
    """The recognised constants as declared, for logging as MLflow params."""

    @classmethod
    def from_constants(cls, namespace: Mapping[str, Any], script: str) -> EvalConfig:
        """Build the config from an eval script's module namespace (``globals()``)."""
        constants = {k: v for k, v in namespace.items() if k.isupper() and not k.startswith("_")}
        for name in constants:
            if name not in KNOWN_CONSTANTS and name.startswith(_RESERVED_PREFIXES):
                close = difflib.get_close_matches(name, KNOWN_CONSTANTS, n=1)
                hint = f"did you mean {close[0]}?" if close else "remove or rename it"
                raise ConfigError(f"{script}: unknown constant {name}: {hint}")
        known = {k: v for k, v in constants.items() if k in KNOWN_CONSTANTS}
        for required in ("EXPERIMENT_NAME", "DATASET_PATH"):
            if required not in known:
                raise ConfigError(f"{script}: constant {required} is missing: declare it")
        experiment = known["EXPERIMENT_NAME"]
        if not isinstance(experiment, str) or not _EXPERIMENT_PATTERN.match(experiment):
            raise ConfigError(f"{script}: EXPERIMENT_NAME={experiment!r} must read "
                              "'<component>/<eval-name>', e.g. 'support-router/golden'")
        scorer = per_type(known, "SCORER", script, scorer_name) or {}
        scorer.setdefault(DEFAULT_KEY, "exact")
        config = cls(
            experiment_name=experiment,
            dataset_path=Path(string(known, "DATASET_PATH", script)),
            script=script,
            reports_dir=Path(string(known, "REPORTS_DIR", script, default="reports")),
            repeat_count=repeat_count(known.get("REPEAT_COUNT"), script),
            replicates=count(known, "REPLICATES", script, DEFAULT_REPLICATES,
                              "the smallest number that produces a spread at all"),
            root_seed=integer(known, "ROOT_SEED", script, 0),
            calibration_repeat_count=count(known, "CALIBRATION_REPEAT_COUNT", script,
                                            DEFAULT_CALIBRATION_REPEAT_COUNT,
                                            "prefixes k = 2..N are re-scored"),
            max_concurrency=positive_int(known, "MAX_CONCURRENCY", script, 8),
            call_timeout=positive_number(known, "CALL_TIMEOUT", script, DEFAULT_CALL_TIMEOUT),
            judge=judge_settings(known, script),
            min_accuracy=per_type(known, "EVAL_MIN_ACCURACY", script, fraction),
            min_f1=per_type(known, "EVAL_MIN_F1", script, fraction),
            scorer=scorer,
            similarity_threshold=cosine(known, "SEMANTIC_SIMILARITY_SCORE", script),
            repeat_similarity_threshold=cosine(known, "REPEAT_SEMANTIC_SIMILARITY_SCORE", script),
            bias_similarity_threshold=cosine(known, "BIAS_SEMANTIC_SIMILARITY_SCORE", script),
            mock_adapters=adapters(known.get("MOCK_ADAPTERS", {}), script),
            component_params=mapping(known, "COMPONENT_PARAMS", script),
            constants=known,
        )
        config._check_similarity_constants()
        return config

    def scorer_for(self, test_type: str) -> str:
        return self.scorer.get(test_type, self.scorer[DEFAULT_KEY])

    def threshold_for(self, test_type: str) -> Threshold:
        """The threshold of ``test_type``; raises :class:`ConfigError` when none is declared."""
        own = f"EVAL_MIN_ACCURACY_{test_type.upper()}"
        if test_type == "repeatability" and "repeatability" not in self.min_accuracy:
            raise ConfigError(f"{self.script}: {own} is missing: the repeatability policy "
                              "requires an explicit threshold for repeatability_accuracy")
        accuracy = self.min_accuracy.get(test_type, self.min_accuracy.get(DEFAULT_KEY))
        if accuracy is None:
            raise ConfigError(f"{self.script}: no accuracy threshold for {test_type}: declare "
                              f"EVAL_MIN_ACCURACY (the default) or {own}")
        return Threshold(accuracy, self.min_f1.get(test_type, self.min_f1.get(DEFAULT_KEY)))

    def similarity_threshold_for(self, test_type: str) -> float:
        """The cosine a semantic-similarity verdict of ``test_type`` must reach."""
        name, value = {
            "repeatability": ("REPEAT_SEMANTIC_SIMILARITY_SCORE", self.repeat_similarity_threshold),
            "bias": ("BIAS_SEMANTIC_SIMILARITY_SCORE", self.bias_similarity_threshold),
        }.get(test_type, ("SEMANTIC_SIMILARITY_SCORE", self.similarity_threshold))
        if value is None:
            raise ConfigError(f"{self.script}: {test_type} is scored by semantic_similarity "
                              f"but {name} is not declared")
        return value

    def require_repeat_count(self) -> int:
        if self.repeat_count is None:
            raise ConfigError(f"{self.script}: REPEAT_COUNT is missing: declare it (3-5 for "
                              "routine runs, 10-20 for focused passes)")
        return self.repeat_count

    def params(self) -> dict[str, str]:
        """The constants as MLflow params (strings). Callables are named, never serialised."""
        params = {name: param_value(value) for name, value in sorted(self.constants.items())
                  if name not in ("MOCK_ADAPTERS", "COMPONENT_PARAMS")}
        if self.mock_adapters:
            params["MOCK_ADAPTERS"] = ",".join(sorted(self.mock_adapters))
        params.update({f"component.{k}": param_value(v)
                       for k, v in sorted(self.component_params.items())})
        return params

    def judge_settings(self) -> JudgeSettings:
        if self.judge is None:
            raise ConfigError(f"{self.script}: a test type is scored by 'llm_judge' but "
                              "JUDGE_MODEL is not declared: name the judge model")
        return self.judge

    def _check_similarity_constants(self) -> None:
        # The policy: REPEAT_SEMANTIC_SIMILARITY_SCORE is declared only with semantic scoring.
        for test_type, name, value in (
            ("repeatability", "REPEAT_SEMANTIC_SIMILARITY_SCORE", self.repeat_similarity_threshold),
            ("bias", "BIAS_SEMANTIC_SIMILARITY_SCORE", self.bias_similarity_threshold),
        ):
            if value is not None and self.scorer_for(test_type) != "semantic_similarity":
                raise ConfigError(
                    f"{self.script}: {name} is declared but {test_type} is scored by "
                    f"{self.scorer_for(test_type)!r}: remove it, or set "
                    f"SCORER_{test_type.upper()} = 'semantic_similarity'")
