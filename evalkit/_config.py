"""Configuration: the scoring constants of ``eval.py``, validated into one object.

All scoring parameters live as constants in ``eval.py`` (never Makefile variables, CLI flags or
dataset fields). :meth:`EvalConfig.from_constants` reads them from the script's namespace,
rejects misspelt names instead of silently ignoring them, and resolves per-type overrides.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit._dataset import TEST_TYPES
from evalkit._errors import ConfigError
from evalkit.scorers._llm_judge import PROMPT_USES

DEFAULT_KEY = "default"
SCORERS = ("exact", "semantic_similarity", "llm_judge")

# Every constant name evalkit reads. Upper-case names in eval.py with one of the prefixes below
# that are not listed here are treated as typos.
_PER_TYPE = ("EVAL_MIN_ACCURACY", "EVAL_MIN_F1", "SCORER")
_SINGLE = (
    "EXPERIMENT_NAME", "DATASET_PATH", "REPORTS_DIR", "REPEAT_COUNT",
    "REPEAT_SEMANTIC_SIMILARITY_SCORE", "BIAS_SEMANTIC_SIMILARITY_SCORE",
    "SEMANTIC_SIMILARITY_SCORE", "MOCK_ADAPTERS", "COMPONENT_PARAMS", "REPLICATES", "ROOT_SEED",
    "CALIBRATION_REPEAT_COUNT", "MAX_CONCURRENCY", "JUDGE_MODEL", "JUDGE_MAX_TOKENS", "JUDGE_SEED",
    "JUDGE_TIMEOUT", "JUDGE_MAX_ATTEMPTS", "JUDGE_MAX_WAIT", "JUDGE_PROMPTS",
    "JUDGE_INVALID_IS_ERROR", "JUDGE_SYSTEM_IN_USER",
)
KNOWN_CONSTANTS = frozenset(
    [*_SINGLE, *_PER_TYPE, *(f"{base}_{t.upper()}" for base in _PER_TYPE for t in TEST_TYPES)]
)
_RESERVED_PREFIXES = ("EVAL_", "REPEAT_", "REPLICATE", "ROOT_SEED", "SCORER", "BIAS_", "SEMANTIC_",
                      "EXPERIMENT", "DATASET", "CALIBRATION", "JUDGE", "MAX_CONCURRENCY")
DEFAULT_REPLICATES = 2
DEFAULT_CALIBRATION_REPEAT_COUNT = 20
_EXPERIMENT_PATTERN = re.compile(r"^[^/\s][^/]*/[^/]*[^/\s]$")


@dataclass(frozen=True)
class Threshold:
    """What a test type must reach for the run to pass."""

    min_accuracy: float
    min_f1: float | None = None


@dataclass(frozen=True)
class JudgeSettings:
    """The LLM judge: ``JUDGE_*`` constants. Temperature is always 0."""

    model: str
    max_tokens: int = 2
    seed: int = 0
    timeout: float = 30.0
    """Seconds per call attempt."""
    max_attempts: int = 6
    max_wait: float = 120.0
    """Seconds after which no further retry of a call starts."""
    prompts: Mapping[str, Path] = field(default_factory=dict)
    """``expected`` / ``repeatability`` / ``bias`` or a test type -> a YAML prompt file."""
    invalid_is_error: bool = False
    system_in_user: bool = False
    """Send the prompt's system text at the head of the user message, for chat templates
    without a system role (Gemma under llama.cpp drops system messages silently)."""


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
    """Root of the per-replicate seeds (see :func:`evalkit._stability.replicate_seed`)."""
    calibration_repeat_count: int = DEFAULT_CALIBRATION_REPEAT_COUNT
    """Calls per repeatability entry in calibration mode (``--calibrate``)."""
    max_concurrency: int = 8
    """Component calls, and judge calls, in flight at once."""
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
        scorer = _per_type(known, "SCORER", script, _scorer_name) or {}
        scorer.setdefault(DEFAULT_KEY, "exact")
        config = cls(
            experiment_name=experiment,
            dataset_path=Path(_string(known, "DATASET_PATH", script)),
            script=script,
            reports_dir=Path(_string(known, "REPORTS_DIR", script, default="reports")),
            repeat_count=_repeat_count(known.get("REPEAT_COUNT"), script),
            replicates=_count(known, "REPLICATES", script, DEFAULT_REPLICATES,
                              "the smallest number that produces a spread at all"),
            root_seed=_integer(known, "ROOT_SEED", script, 0),
            calibration_repeat_count=_count(known, "CALIBRATION_REPEAT_COUNT", script,
                                            DEFAULT_CALIBRATION_REPEAT_COUNT,
                                            "prefixes k = 2..N are re-scored"),
            max_concurrency=_positive_int(known, "MAX_CONCURRENCY", script, 8),
            judge=_judge(known, script),
            min_accuracy=_per_type(known, "EVAL_MIN_ACCURACY", script, _fraction),
            min_f1=_per_type(known, "EVAL_MIN_F1", script, _fraction),
            scorer=scorer,
            similarity_threshold=_cosine(known, "SEMANTIC_SIMILARITY_SCORE", script),
            repeat_similarity_threshold=_cosine(known, "REPEAT_SEMANTIC_SIMILARITY_SCORE", script),
            bias_similarity_threshold=_cosine(known, "BIAS_SEMANTIC_SIMILARITY_SCORE", script),
            mock_adapters=_adapters(known.get("MOCK_ADAPTERS", {}), script),
            component_params=_mapping(known, "COMPONENT_PARAMS", script),
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
        params = {name: _param_value(value) for name, value in sorted(self.constants.items())
                  if name not in ("MOCK_ADAPTERS", "COMPONENT_PARAMS")}
        if self.mock_adapters:
            params["MOCK_ADAPTERS"] = ",".join(sorted(self.mock_adapters))
        params.update({f"component.{k}": _param_value(v)
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


def _param_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _string(known: Mapping[str, Any], name: str, script: str, default: str | None = None) -> str:
    value = known.get(name, default)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{script}: {name} must be a non-empty string, got {value!r}")
    return value


def _fraction(value: Any, name: str, script: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ConfigError(f"{script}: {name}={value!r} must be a number between 0 and 1")
    return float(value)


def _scorer_name(value: Any, name: str, script: str) -> str:
    if value not in SCORERS:
        raise ConfigError(f"{script}: {name}={value!r} is not a scorer: use one of "
                          + ", ".join(repr(s) for s in SCORERS))
    return value


def _cosine(known: Mapping[str, Any], name: str, script: str) -> float | None:
    value = known.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not -1 <= value <= 1:
        raise ConfigError(f"{script}: {name}={value!r} must be a cosine between -1 and 1")
    return float(value)


def _repeat_count(value: Any, script: str) -> int | None:
    if value is None:
        return None
    return _count({"REPEAT_COUNT": value}, "REPEAT_COUNT", script, 2,
                  "outputs are compared with each other")


def _integer(known: Mapping[str, Any], name: str, script: str, default: int) -> int:
    value = known.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{script}: {name}={value!r} must be an integer")
    return value


def _positive_int(known: Mapping[str, Any], name: str, script: str, default: int) -> int:
    value = _integer(known, name, script, default)
    if value < 1:
        raise ConfigError(f"{script}: {name}={value!r} must be at least 1")
    return value


def _positive_number(known: Mapping[str, Any], name: str, script: str, default: float) -> float:
    value = known.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{script}: {name}={value!r} must be a positive number of seconds")
    return float(value)


def _judge(known: Mapping[str, Any], script: str) -> JudgeSettings | None:
    if "JUDGE_MODEL" not in known:
        stray = sorted(k for k in known if k.startswith("JUDGE_"))
        if stray:
            raise ConfigError(f"{script}: {', '.join(stray)} declared without JUDGE_MODEL: "
                              "name the judge model")
        return None
    prompts = _mapping(known, "JUDGE_PROMPTS", script)
    for key, path in prompts.items():
        if key not in (*PROMPT_USES, *TEST_TYPES) or \
                not isinstance(path, str | Path):
            raise ConfigError(f"{script}: JUDGE_PROMPTS maps 'expected', 'repeatability', "
                              f"'bias' or a test type to a YAML file; got {key!r}: {path!r}")
    flags = {name: known.get(name, False)
             for name in ("JUDGE_INVALID_IS_ERROR", "JUDGE_SYSTEM_IN_USER")}
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ConfigError(f"{script}: {name} must be True or False")
    return JudgeSettings(
        model=_string(known, "JUDGE_MODEL", script),
        max_tokens=_positive_int(known, "JUDGE_MAX_TOKENS", script, 2),
        seed=_integer(known, "JUDGE_SEED", script, 0),
        timeout=_positive_number(known, "JUDGE_TIMEOUT", script, 30.0),
        max_attempts=_positive_int(known, "JUDGE_MAX_ATTEMPTS", script, 6),
        max_wait=_positive_number(known, "JUDGE_MAX_WAIT", script, 120.0),
        prompts={k: Path(v) for k, v in prompts.items()},
        invalid_is_error=flags["JUDGE_INVALID_IS_ERROR"],
        system_in_user=flags["JUDGE_SYSTEM_IN_USER"])


def _count(known: Mapping[str, Any], name: str, script: str, default: int, why: str) -> int:
    value = _integer(known, name, script, default)
    if value < 2:
        raise ConfigError(f"{script}: {name}={value!r} must be an integer of at least 2 ({why})")
    return value


def _per_type(known: Mapping[str, Any], base: str, script: str,
              check: Callable[[Any, str, str], Any]) -> dict[str, Any]:
    """``BASE`` (a value or a ``{type|"default": value}`` dict) merged with ``BASE_<TYPE>``."""
    resolved: dict[str, Any] = {}
    declared = known.get(base)
    if isinstance(declared, Mapping):
        for key, value in declared.items():
            if key != DEFAULT_KEY and key not in TEST_TYPES:
                raise ConfigError(f"{script}: {base} has key {key!r}: use 'default' or a test "
                                  "type (" + ", ".join(TEST_TYPES) + ")")
            resolved[key] = check(value, f"{base}[{key!r}]", script)
    elif declared is not None:
        resolved[DEFAULT_KEY] = check(declared, base, script)
    for test_type in TEST_TYPES:
        name = f"{base}_{test_type.upper()}"
        if name in known:
            if test_type in resolved:
                raise ConfigError(f"{script}: {name} and {base}[{test_type!r}] both set the "
                                  f"{test_type} value: keep one")
            resolved[test_type] = check(known[name], name, script)
    return resolved


def _adapters(value: Any, script: str) -> dict[str, Callable[[Any], Any]]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and callable(v) for k, v in value.items()
    ):
        raise ConfigError(f"{script}: MOCK_ADAPTERS must map adapter names to factories that "
                          "take the entry's fixture data and return a fresh adapter")
    return dict(value)


def _mapping(known: Mapping[str, Any], name: str, script: str) -> dict[str, Any]:
    value = known.get(name, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"{script}: {name} must be a dict of name -> value")
    return dict(value)
