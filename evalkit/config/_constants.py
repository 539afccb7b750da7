"""Configuration: the scoring constants of ``eval.py``, validated into one object.

All scoring parameters live as constants in ``eval.py`` (never Makefile variables, CLI flags or
dataset fields). :meth:`EvalConfig.from_constants` reads them from the script's namespace,
rejects misspelt names instead of silently ignoring them, and resolves per-type overrides.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalkit._errors import ConfigError
from evalkit.config._judge import JudgeSettings, judge_settings
from evalkit.config._problems import Problems
from evalkit.config._values import (
    DEFAULT_CALL_RESOURCES,
    DEFAULT_KEY,
    ScorerChoice,
    adapters,
    call_resources,
    check_scorer_signature,
    check_scorer_use,
    confidence_level,
    cosine,
    count,
    field_names,
    flag,
    fraction,
    integer,
    mapping,
    max_cost_usd,
    param_value,
    per_type,
    positive_int,
    positive_number,
    prompt_sha256,
    prompt_texts,
    repeat_count,
    scorer_name,
    sequential_question,
    string,
    token_prices,
)
from evalkit.dataset import BIAS, REPEATABILITY, TEST_TYPES
from evalkit.records import Threshold, TokenPrice
from evalkit.records.names import COMPONENT_PROMPT_PARAM_PREFIX

# Every constant name evalkit reads. Upper-case names in eval.py with one of the prefixes below
# that are not listed here are treated as typos.
_PER_TYPE = ("EVAL_MIN_ACCURACY", "EVAL_MIN_F1", "SCORER")
_SINGLE = (
    "EXPERIMENT_NAME", "DATASET_PATH", "REPORTS_DIR", "REPEAT_COUNT",
    "REPEAT_SEMANTIC_SIMILARITY_SCORE", "BIAS_SEMANTIC_SIMILARITY_SCORE",
    "SEMANTIC_SIMILARITY_SCORE", "MOCK_ADAPTERS", "COMPONENT_PARAMS", "REPLICATES", "ROOT_SEED",
    "CALIBRATION_REPEAT_COUNT", "MAX_CONCURRENCY", "CALL_TIMEOUT", "JUDGE_MODEL",
    "JUDGE_MAX_TOKENS", "JUDGE_SEED", "JUDGE_REPEATS",
    "JUDGE_TIMEOUT", "JUDGE_MAX_ATTEMPTS", "JUDGE_MAX_WAIT", "JUDGE_PROMPTS",
    "JUDGE_INVALID_IS_ERROR", "JUDGE_SYSTEM_IN_USER", "COMPARED_FIELDS", "TRACE_CALLS",
    "LABELS_PATH", "LABEL_SAMPLE", "COMPONENT_PROMPTS", "TOKEN_PRICES", "CALL_RESOURCES",
    "MAX_COST_USD", "SEQUENTIAL", "SEQUENTIAL_CONFIDENCE",
)
KNOWN_CONSTANTS = frozenset(
    [*_SINGLE, *_PER_TYPE, *(f"{base}_{t.upper()}" for base in _PER_TYPE for t in TEST_TYPES)]
)
_RESERVED_PREFIXES = ("EVAL_", "REPEAT_", "REPLICATE", "ROOT_SEED", "SCORER", "BIAS_", "SEMANTIC_",
                      "EXPERIMENT", "DATASET", "CALIBRATION", "JUDGE", "MAX_CONCURRENCY",
                      "COMPARED", "MOCK_", "REPORTS", "CALL_TIMEOUT", "TRACE",
                      "LABEL", "COMPONENT_PROMPT", "TOKEN_PRICE", "CALL_RESOURCE",
                      "MAX_COST", "SEQUENTIAL")
DEFAULT_REPLICATES = 2
DEFAULT_CALIBRATION_REPEAT_COUNT = 20
DEFAULT_CALL_TIMEOUT = 600.0
DEFAULT_SEQUENTIAL_CONFIDENCE = 0.95
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
    trace_calls: bool = True
    """Record every entry as an MLflow trace with its verdicts as assessments."""
    min_accuracy: Mapping[str, float] = field(default_factory=dict)
    """Per type, plus ``"default"``."""
    min_f1: Mapping[str, float] = field(default_factory=dict)
    scorer: Mapping[str, ScorerChoice] = field(default_factory=lambda: {DEFAULT_KEY: "exact"})
    """Per type, plus ``"default"``: a built-in scorer's name or a function of eval.py."""
    similarity_threshold: float | None = None
    repeat_similarity_threshold: float | None = None
    bias_similarity_threshold: float | None = None
    mock_adapters: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    component_params: Mapping[str, Any] = field(default_factory=dict)
    compared_fields: tuple[str, ...] | None = None
    """The fields of an object output that repeatability and bias compare (all when None)."""
    labels_path: Path | None = None
    """People's labels (CSV or JSONL, as for ``evalkit label --from``) given to each run."""
    label_sample: int = 0
    """Entries of each labelled type drawn at random for the corrected accuracy, per run."""
    component_prompts: Mapping[str, str] = field(default_factory=dict)
    """``COMPONENT_PROMPTS``: the prompts that define the component, key -> text; each is
    registered in MLflow's prompt registry and linked to the run."""
    source_file: Path | None = None
    """The eval script's own file (its ``__file__``), when it has one."""
    token_prices: Mapping[str, TokenPrice] = field(default_factory=dict)
    """Model -> its price (``TOKEN_PRICES``): the cost of the tokens calls report."""
    call_resources: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_CALL_RESOURCES))
    """``CALL_RESOURCES``: what one worker slot asks of Ray (``--executor=ray``)."""
    max_cost_usd: float | None = None
    """``MAX_COST_USD``: what one run (one attempt at it: a resume has its own) may spend, in
    US dollars priced by ``TOKEN_PRICES``; ``None``: no limit."""
    sequential: str | None = None
    """``SEQUENTIAL``: the question every run of the script answers sequentially (a name of
    ``SEQUENTIAL_QUESTIONS``), or ``None``: every selected entry is called."""
    sequential_confidence: float = DEFAULT_SEQUENTIAL_CONFIDENCE
    """``SEQUENTIAL_CONFIDENCE``: the level at which a sequential run's verdicts are settled."""
    constants: Mapping[str, Any] = field(default_factory=dict)
    """The recognised constants as declared, for logging as MLflow params."""
    problems: tuple[str, ...] = ()
    """What :meth:`read_constants` found wrong with the constants, not yet raised."""

    @classmethod
    def from_constants(cls, namespace: Mapping[str, Any], script: str) -> EvalConfig:
        """Build the config from an eval script's module namespace (``globals()``); every
        problem found is reported in one :class:`ConfigError`."""
        config = cls.read_constants(namespace, script)
        config.check_types(())
        return config

    @classmethod
    def read_constants(cls, namespace: Mapping[str, Any], script: str) -> EvalConfig:
        """As :meth:`from_constants`, but the problems found are kept in :attr:`problems`:
        :meth:`check_types` raises them with those of the selected types, so that one error
        lists what the constants lack for the run as well as what is wrong with them."""
        problems = Problems(script)
        constants = {k: v for k, v in namespace.items() if k.isupper() and not k.startswith("_")}
        for name in constants:
            if name not in KNOWN_CONSTANTS and name.startswith(_RESERVED_PREFIXES):
                close = difflib.get_close_matches(name, KNOWN_CONSTANTS, n=1)
                hint = f"did you mean {close[0]}?" if close else "remove or rename it"
                problems.add(f"unknown constant {name}: {hint}")
        known = {k: v for k, v in constants.items() if k in KNOWN_CONSTANTS}
        for required, example in (("EXPERIMENT_NAME", "'<component>/<eval-name>'"),
                                  ("DATASET_PATH", "'datasets/<name>'")):
            if required not in known:
                problems.add(f"constant {required} is missing: declare it, e.g. "
                             f"{required} = {example}")
        experiment = known.get("EXPERIMENT_NAME", "missing/missing")
        if not isinstance(experiment, str) or not _EXPERIMENT_PATTERN.match(experiment):
            problems.add(f"EXPERIMENT_NAME={experiment!r} must read '<component>/<eval-name>', "
                         "e.g. 'support-router/golden'")
        scorer = problems.check(per_type, known, "SCORER", script, scorer_name, default={})
        scorer.setdefault(DEFAULT_KEY, "exact")
        check = problems.check
        labels = check(string, known, "LABELS_PATH", script) if "LABELS_PATH" in known else None
        config = cls(
            experiment_name=experiment,
            dataset_path=Path(check(string, known, "DATASET_PATH", script, "missing",
                                    default="missing")),
            script=script,
            reports_dir=Path(check(string, known, "REPORTS_DIR", script, "reports",
                                   default="reports")),
            repeat_count=check(repeat_count, known.get("REPEAT_COUNT"), script),
            replicates=check(count, known, "REPLICATES", script, DEFAULT_REPLICATES,
                             "the smallest number that produces a spread at all",
                             default=DEFAULT_REPLICATES),
            root_seed=check(integer, known, "ROOT_SEED", script, 0, default=0),
            calibration_repeat_count=check(count, known, "CALIBRATION_REPEAT_COUNT", script,
                                           DEFAULT_CALIBRATION_REPEAT_COUNT,
                                           "prefixes k = 2..N are re-scored",
                                           default=DEFAULT_CALIBRATION_REPEAT_COUNT),
            max_concurrency=check(positive_int, known, "MAX_CONCURRENCY", script, 8, default=8),
            call_timeout=check(positive_number, known, "CALL_TIMEOUT", script,
                               DEFAULT_CALL_TIMEOUT, default=DEFAULT_CALL_TIMEOUT),
            judge=check(judge_settings, known, script),
            trace_calls=check(flag, known, "TRACE_CALLS", script, True, default=True),
            min_accuracy=check(per_type, known, "EVAL_MIN_ACCURACY", script, fraction,
                               default={}),
            min_f1=check(per_type, known, "EVAL_MIN_F1", script, fraction, default={}),
            scorer=scorer,
            similarity_threshold=check(cosine, known, "SEMANTIC_SIMILARITY_SCORE", script),
            repeat_similarity_threshold=check(cosine, known, "REPEAT_SEMANTIC_SIMILARITY_SCORE",
                                              script),
            bias_similarity_threshold=check(cosine, known, "BIAS_SEMANTIC_SIMILARITY_SCORE",
                                            script),
            mock_adapters=check(adapters, known.get("MOCK_ADAPTERS", {}), script, default={}),
            component_params=check(mapping, known, "COMPONENT_PARAMS", script, default={}),
            component_prompts=check(prompt_texts, known, "COMPONENT_PROMPTS", script,
                                    default={}),
            source_file=Path(namespace["__file__"]) if isinstance(
                namespace.get("__file__"), str) else None,
            compared_fields=check(field_names, known, "COMPARED_FIELDS", script),
            labels_path=Path(labels) if labels else None,
            label_sample=check(positive_int, known, "LABEL_SAMPLE", script, 1, default=0)
            if "LABEL_SAMPLE" in known else 0,
            token_prices=check(token_prices, known, "TOKEN_PRICES", script, default={}),
            call_resources=check(call_resources, known, "CALL_RESOURCES", script,
                                 default=dict(DEFAULT_CALL_RESOURCES)),
            max_cost_usd=check(max_cost_usd, known, "MAX_COST_USD", script),
            sequential=check(sequential_question, known.get("SEQUENTIAL", False), "SEQUENTIAL",
                             script),
            sequential_confidence=check(confidence_level, known, "SEQUENTIAL_CONFIDENCE",
                                        script, DEFAULT_SEQUENTIAL_CONFIDENCE,
                                        default=DEFAULT_SEQUENTIAL_CONFIDENCE),
            constants=known,
        )
        check(config._check_similarity_constants)
        return replace(config, problems=tuple(problems.messages))

    def check_types(self, types: Collection[str]) -> None:
        """Check that every constant the given test types need is declared and usable;
        one :class:`ConfigError` lists every problem, those of :attr:`problems` first."""
        problems = Problems(self.script)
        problems.messages = list(self.problems)
        if REPEATABILITY in types:
            problems.check(self.require_repeat_count)
        for test_type in (t for t in TEST_TYPES if t in types):
            problems.check(self.threshold_for, test_type)
            scorer = self.scorer_for(test_type)
            if scorer == "semantic_similarity":
                problems.check(self.similarity_threshold_for, test_type)
            elif scorer == "llm_judge":
                problems.check(self.judge_settings)
            elif callable(scorer):
                problems.check(check_scorer_signature, scorer, test_type, self.script)
            else:
                problems.check(check_scorer_use, scorer, test_type, self.script)
        if len(set(problems.messages)) < len(problems.messages):  # one judge, many types
            problems.messages = list(dict.fromkeys(problems.messages))
        problems.raise_any()

    def scorer_for(self, test_type: str) -> ScorerChoice:
        """A built-in scorer's name, or the user's scorer function."""
        return self.scorer.get(test_type, self.scorer[DEFAULT_KEY])

    def threshold_for(self, test_type: str) -> Threshold:
        """The threshold of ``test_type``; raises :class:`ConfigError` when none is declared."""
        own = f"EVAL_MIN_ACCURACY_{test_type.upper()}"
        if test_type == REPEATABILITY and REPEATABILITY not in self.min_accuracy:
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
            REPEATABILITY: ("REPEAT_SEMANTIC_SIMILARITY_SCORE", self.repeat_similarity_threshold),
            BIAS: ("BIAS_SEMANTIC_SIMILARITY_SCORE", self.bias_similarity_threshold),
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
                  # where calls run does not change what they return: not a setting of the run
                  if name not in ("MOCK_ADAPTERS", "COMPONENT_PARAMS", "COMPONENT_PROMPTS",
                                  "CALL_RESOURCES")}
        if self.mock_adapters:
            params["MOCK_ADAPTERS"] = ",".join(sorted(self.mock_adapters))
        params.update({f"component.{k}": param_value(v)
                       for k, v in sorted(self.component_params.items())})
        params.update({f"{COMPONENT_PROMPT_PARAM_PREFIX}{k}": prompt_sha256(text)[:16]
                       for k, text in sorted(self.component_prompts.items())})
        return params

    def judge_settings(self) -> JudgeSettings:
        if self.judge is None:
            raise ConfigError(f"{self.script}: a test type is scored by 'llm_judge' but "
                              "JUDGE_MODEL is not declared: name the judge model")
        return self.judge

    def _check_similarity_constants(self) -> None:
        # The policy: REPEAT_SEMANTIC_SIMILARITY_SCORE is declared only with semantic scoring.
        for test_type, name, value in (
            (REPEATABILITY, "REPEAT_SEMANTIC_SIMILARITY_SCORE", self.repeat_similarity_threshold),
            (BIAS, "BIAS_SEMANTIC_SIMILARITY_SCORE", self.bias_similarity_threshold),
        ):
            if value is not None and self.scorer_for(test_type) != "semantic_similarity":
                raise ConfigError(
                    f"{self.script}: {name} is declared but {test_type} is scored by "
                    f"{self.scorer_for(test_type)!r}: remove it, or set "
                    f"SCORER_{test_type.upper()} = 'semantic_similarity'")
