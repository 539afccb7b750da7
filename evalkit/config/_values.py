"""Checks of single constants: each names the constant, the value and what it must be."""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from evalkit._errors import ConfigError
from evalkit.dataset import COMPARATIVE_TYPES, TEST_TYPES
from evalkit.records import TokenPrice

DEFAULT_KEY = "default"
SCORERS = ("exact", "semantic_similarity", "llm_judge", "trajectory")
SCORES_ONE_OUTPUT = ("trajectory",)
"""Built-in scorers of one output against its entry, which repeatability and bias cannot use."""
ScorerChoice = str | Callable[..., Any]
"""A built-in scorer's name, or a scorer function of the eval script."""


def param_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if is_mlflow_scorer(value):  # its name (its digest is a param too)
        return f"mlflow scorer {value.name}"
    if callable(value):  # a scorer function: its name (its source digest is a param too)
        return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', value)}"
    return json.dumps(value, sort_keys=True, default=param_value)


def string(known: Mapping[str, Any], name: str, script: str, default: str | None = None) -> str:
    value = known.get(name, default)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{script}: {name} must be a non-empty string, got {value!r}")
    return value


def fraction(value: Any, name: str, script: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ConfigError(f"{script}: {name}={value!r} must be a number between 0 and 1")
    return float(value)


def scorer_name(value: Any, name: str, script: str) -> ScorerChoice:
    if callable(value):
        return value
    if value not in SCORERS:
        raise ConfigError(f"{script}: {name}={value!r} is not a scorer: use one of "
                          + ", ".join(repr(s) for s in SCORERS) + ", or a function")
    return str(value)


def trace_parameter(scorer: Callable[..., Any], comparative: bool) -> str | None:
    """The parameter by which a scorer function takes the calls' traces, if it names one:
    ``trace`` (MLflow's ``Trace`` of the call) for an output against ``expected_output``,
    ``traces`` (one per output) for repeatability and bias."""
    name = "traces" if comparative else "trace"
    try:
        parameter = inspect.signature(scorer).parameters.get(name)
    except ValueError:  # no signature to inspect (a builtin)
        return None
    return name if parameter is not None and parameter.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY) else None


def is_mlflow_scorer(value: Any) -> bool:
    """Whether ``value`` is an MLflow scorer (``@mlflow.genai.scorers.scorer``, or a built-in
    one of MLflow's); found without importing MLflow's evaluation for anything else."""
    if not type(value).__module__.startswith("mlflow."):
        return False
    from mlflow.genai.scorers import Scorer

    return isinstance(value, Scorer)


def check_scorer_signature(scorer: Callable[..., Any], test_type: str, script: str) -> None:
    """A scorer function gets ``(outputs)`` for repeatability and bias, else
    ``(output, expected)``; with ``traces`` or ``trace`` too when it names that parameter
    (:func:`trace_parameter`). An MLflow scorer scores one output: not repeatability or
    bias."""
    comparative = test_type in COMPARATIVE_TYPES
    name = getattr(scorer, "name", None) or getattr(scorer, "__name__", scorer)
    if is_mlflow_scorer(scorer):
        if comparative:
            raise ConfigError(
                f"{script}: the MLflow scorer {name!r} scores one output against its "
                f"expectations, and {test_type} compares outputs with each other: score "
                f"{test_type} with a function of (outputs) or a built-in scorer")
        return
    arguments: tuple[Any, ...] = ([],) if comparative else (None, None)
    keyword = trace_parameter(scorer, comparative)
    try:
        inspect.signature(scorer).bind(*arguments, **({keyword: None} if keyword else {}))
    except TypeError:
        wanted = "(outputs)" if comparative else "(output, expected)"
        with_trace = "(outputs, traces)" if comparative else "(output, expected, trace)"
        raise ConfigError(
            f"{script}: the scorer {name!r} of {test_type} must take {wanted}, or {with_trace} "
            f"to read the calls' traces: define it as def {getattr(scorer, '__name__', 'scorer')}"
            f"{wanted} -> bool | evalkit.ScoreResult") from None
    except ValueError:  # no signature to inspect (a builtin): it is called as it is
        return


def check_scorer_use(scorer: str, test_type: str, script: str) -> None:
    """A built-in scorer of one output is not one of repeatability or bias."""
    if scorer in SCORES_ONE_OUTPUT and test_type in COMPARATIVE_TYPES:
        raise ConfigError(f"{script}: SCORER_{test_type.upper()}={scorer!r}: {scorer} scores "
                          f"each output against its entry, and {test_type} compares outputs "
                          "with each other: use exact, semantic_similarity, llm_judge or a "
                          "function of (outputs)")


def field_names(known: Mapping[str, Any], name: str, script: str) -> tuple[str, ...] | None:
    value = known.get(name)
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, list | tuple) or not value or not all(
            isinstance(f, str) and f for f in value):
        raise ConfigError(f"{script}: {name}={value!r} must be a non-empty list of field "
                          "names, e.g. [\"category\", \"reply\"]")
    return tuple(value)


def cosine(known: Mapping[str, Any], name: str, script: str) -> float | None:
    value = known.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not -1 <= value <= 1:
        raise ConfigError(f"{script}: {name}={value!r} must be a cosine between -1 and 1")
    return float(value)


def repeat_count(value: Any, script: str) -> int | None:
    if value is None:
        return None
    return count({"REPEAT_COUNT": value}, "REPEAT_COUNT", script, 2,
                  "outputs are compared with each other")


def integer(known: Mapping[str, Any], name: str, script: str, default: int) -> int:
    value = known.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{script}: {name}={value!r} must be an integer")
    return value


def positive_int(known: Mapping[str, Any], name: str, script: str, default: int) -> int:
    value = integer(known, name, script, default)
    if value < 1:
        raise ConfigError(f"{script}: {name}={value!r} must be at least 1")
    return value


def flag(known: Mapping[str, Any], name: str, script: str, default: bool) -> bool:
    value = known.get(name, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{script}: {name}={value!r} must be True or False")
    return value


def positive_number(known: Mapping[str, Any], name: str, script: str, default: float) -> float:
    value = known.get(name, default)
    if (isinstance(value, bool) or not isinstance(value, int | float) or not value > 0
            or not math.isfinite(value)):
        raise ConfigError(f"{script}: {name}={value!r} must be a positive, finite number of "
                          "seconds")
    return float(value)


def count(known: Mapping[str, Any], name: str, script: str, default: int, why: str) -> int:
    value = integer(known, name, script, default)
    if value < 2:
        raise ConfigError(f"{script}: {name}={value!r} must be an integer of at least 2 ({why})")
    return value


def per_type(known: Mapping[str, Any], base: str, script: str,
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


def adapters(value: Any, script: str) -> dict[str, Callable[[Any], Any]]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and callable(v) for k, v in value.items()
    ):
        raise ConfigError(f"{script}: MOCK_ADAPTERS must map adapter names to factories that "
                          "take the entry's fixture data and return a fresh adapter")
    return dict(value)


DEFAULT_CALL_RESOURCES: Mapping[str, float] = MappingProxyType({"CPU": 1.0})
"""What one call asks of Ray unless ``CALL_RESOURCES`` or ``--call-resources`` says."""


def call_resources(known: Mapping[str, Any], name: str, script: str) -> dict[str, float]:
    """``CALL_RESOURCES``: what one call asks of Ray (:data:`DEFAULT_CALL_RESOURCES` when
    not declared)."""
    return resource_amounts(known.get(name, DEFAULT_CALL_RESOURCES), f"{script}: {name}")


def resource_amounts(value: Any, where: str) -> dict[str, float]:
    """Ray resource name -> amount one call needs (a number of at least 0)."""
    example = "e.g. {'CPU': 1} or {'CPU': 2, 'GPU': 1}"
    if not isinstance(value, Mapping) or not value:
        raise ConfigError(f"{where} must be a dict of Ray resource name -> amount one call "
                          f"needs, {example}")
    for resource, amount in value.items():
        if (not isinstance(resource, str) or not resource or isinstance(amount, bool)
                or not isinstance(amount, int | float) or not math.isfinite(amount)
                or amount < 0):
            raise ConfigError(f"{where} has {resource!r}: {amount!r}: each resource needs a "
                              f"name and an amount of at least 0, {example}")
    return {resource: float(amount) for resource, amount in value.items()}


def mapping(known: Mapping[str, Any], name: str, script: str) -> dict[str, Any]:
    value = known.get(name, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"{script}: {name} must be a dict of name -> value")
    return dict(value)


_PROMPT_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def prompt_texts(known: Mapping[str, Any], name: str, script: str) -> dict[str, str]:
    """``COMPONENT_PROMPTS``: key (letters, digits, ``-``, ``_``) -> the prompt's text."""
    value = known.get(name, {})
    example = f"e.g. {name} = {{'system': SYSTEM_PROMPT}}"
    if not isinstance(value, Mapping):
        raise ConfigError(f"{script}: {name} must be a dict of key -> prompt text, {example}")
    for key, text in value.items():
        if not isinstance(key, str) or not _PROMPT_KEY.match(key):
            raise ConfigError(f"{script}: {name} key {key!r} must be letters, digits, '-' or "
                              f"'_' (it names the prompt in MLflow's registry), {example}")
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"{script}: {name}[{key!r}] must be the prompt's text (a "
                              f"non-empty string), got {type(text).__name__}: {example}")
    return dict(value)


def prompt_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def token_prices(known: Mapping[str, Any], name: str, script: str) -> dict[str, TokenPrice]:
    """``{"model": (USD per million input tokens, USD per million output tokens)}``."""
    value = known.get(name, {})
    example = f'e.g. {name} = {{"gpt-4o-mini": (0.15, 0.60)}}'
    if not isinstance(value, Mapping):
        raise ConfigError(f"{script}: {name} must be a dict of model name -> (USD per million "
                          f"input tokens, USD per million output tokens), {example}")
    prices = {}
    for model, pair in value.items():
        if not isinstance(model, str) or not model:
            raise ConfigError(f"{script}: {name} has key {model!r}: name the model as the calls "
                              f"report it (a non-empty string), {example}")
        if (not isinstance(pair, tuple | list) or len(pair) != 2 or not all(
                not isinstance(p, bool) and isinstance(p, int | float) and math.isfinite(p)
                and p >= 0 for p in pair)):
            raise ConfigError(f"{script}: {name}[{model!r}]={pair!r} must be two numbers of at "
                              "least 0: (USD per million input tokens, USD per million output "
                              f"tokens), {example}")
        prices[model] = TokenPrice(float(pair[0]), float(pair[1]))
    return prices


def max_cost_usd(known: Mapping[str, Any], name: str, script: str) -> float | None:
    """``MAX_COST_USD``: a positive, finite number of US dollars, which only ``TOKEN_PRICES``
    can measure spending against."""
    if name not in known:
        return None
    value = known[name]
    if (isinstance(value, bool) or not isinstance(value, int | float) or not value > 0
            or not math.isfinite(value)):
        raise ConfigError(f"{script}: {name}={value!r} must be a positive, finite number of US "
                          f"dollars, e.g. {name} = 5.0 (or remove it: no limit)")
    if not known.get("TOKEN_PRICES"):
        raise ConfigError(f"{script}: {name} is declared but TOKEN_PRICES is not: without "
                          "prices no spending can be measured. Declare TOKEN_PRICES, e.g. "
                          'TOKEN_PRICES = {"gpt-4o-mini": (0.15, 0.60)}, or remove ' + name)
    return float(value)


SEQUENTIAL_QUESTIONS = {
    "dataset": "would the whole dataset pass?",
    "population": "does the component pass on the population the dataset samples?",
}
"""The questions a sequential run answers (``SEQUENTIAL``, ``--sequential``), by name."""
DEFAULT_SEQUENTIAL_QUESTION = "dataset"
"""What ``SEQUENTIAL = True`` and a bare ``--sequential`` ask: the question an ordinary run's
gate answers (the whole dataset's accuracy against the threshold), which settles with
certainty at the last entry, so a sequential run never ends undecided."""


def sequential_question(value: Any, name: str, script: str) -> str | None:
    """``SEQUENTIAL``: False (the default: every entry is called), True (the default
    question) or a question's name; the question's name, or ``None``."""
    if value is False:
        return None
    if value is True:
        return DEFAULT_SEQUENTIAL_QUESTION
    if value not in SEQUENTIAL_QUESTIONS:
        raise ConfigError(
            f"{script}: {name}={value!r} must be False, True (the question 'dataset') or the "
            "name of a question: " + "; ".join(f"{q!r} ({text})"
                                               for q, text in SEQUENTIAL_QUESTIONS.items()))
    return str(value)


def confidence_level(known: Mapping[str, Any], name: str, script: str,
                     default: float) -> float:
    """A confidence level: a number strictly between 0 and 1."""
    value = known.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise ConfigError(f"{script}: {name}={value!r} must be a number strictly between 0 and "
                          f"1, e.g. {name} = 0.95")
    return float(value)
