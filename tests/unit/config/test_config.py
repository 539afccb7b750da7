"""The constants of eval.py: validation, per-type resolution, and what becomes a param."""

from __future__ import annotations

from typing import Any

import pytest

from evalkit import ConfigError, EvalConfig, Threshold

BASE = {"EXPERIMENT_NAME": "router/golden", "DATASET_PATH": "datasets/x"}


def config(**constants: Any) -> EvalConfig:
    return EvalConfig.from_constants({**BASE, **constants}, script="eval.py")


def test_per_type_thresholds_override_the_default() -> None:
    c = config(EVAL_MIN_ACCURACY=0.8, EVAL_MIN_ACCURACY_SMOKE=1.0, EVAL_MIN_F1=0.7,
               EVAL_MIN_F1_SAFETY=0.9, EVAL_MIN_ACCURACY_REPEATABILITY=0.6)
    assert c.threshold_for("functional") == Threshold(0.8, 0.7)
    assert c.threshold_for("smoke") == Threshold(1.0, 0.7)
    assert c.threshold_for("safety") == Threshold(0.8, 0.9)
    assert c.threshold_for("repeatability") == Threshold(0.6, 0.7)


def test_dict_form_of_thresholds() -> None:
    c = config(EVAL_MIN_ACCURACY={"default": 0.75, "bias": 0.9})
    assert c.threshold_for("functional").min_accuracy == 0.75
    assert c.threshold_for("bias").min_accuracy == 0.9


def test_dict_and_constant_for_one_type_conflict() -> None:
    with pytest.raises(ConfigError, match="both set"):
        config(EVAL_MIN_ACCURACY={"smoke": 1.0}, EVAL_MIN_ACCURACY_SMOKE=0.9)


def test_repeatability_needs_its_own_threshold() -> None:
    with pytest.raises(ConfigError, match="EVAL_MIN_ACCURACY_REPEATABILITY is missing"):
        config(EVAL_MIN_ACCURACY=0.8).threshold_for("repeatability")


def test_no_threshold_at_all_names_both_fixes() -> None:
    with pytest.raises(ConfigError, match="EVAL_MIN_ACCURACY .*EVAL_MIN_ACCURACY_FUNCTIONAL"):
        config().threshold_for("functional")


@pytest.mark.parametrize(("constants", "message"), [
    ({"EVAL_MIN_ACURACY": 0.8},
     "unknown constant EVAL_MIN_ACURACY: did you mean EVAL_MIN_ACCURACY"),
    ({"REPEAT_COUNTS": 5}, "did you mean REPEAT_COUNT"),
    ({"EVAL_MIN_ACCURACY": 80}, "must be a number between 0 and 1"),
    ({"EVAL_MIN_ACCURACY": True}, "must be a number between 0 and 1"),
    ({"REPEAT_COUNT": 1}, "at least 2"),
    ({"REPEAT_COUNT": 2.5}, "must be an integer"),
    ({"REPLICATES": 1}, "REPLICATES=1 must be an integer of at least 2"),
    ({"ROOT_SEED": "abc"}, "ROOT_SEED='abc' must be an integer"),
    ({"SCORER": "fuzzy"}, "is not a scorer"),
    ({"EVAL_MIN_ACCURACY": {"smok": 1.0}}, "has key 'smok'"),
    ({"REPEAT_SEMANTIC_SIMILARITY_SCORE": 0.9}, "declared but repeatability is scored by 'exact'"),
    ({"SCORER_REPEATABILITY": "semantic_similarity", "REPEAT_SEMANTIC_SIMILARITY_SCORE": 2},
     "cosine between -1 and 1"),
    ({"EXPERIMENT_NAME": "no-slash"}, "'<component>/<eval-name>'"),
    ({"MOCK_ADAPTERS": {"crm": "not callable"}}, "MOCK_ADAPTERS must map"),
])
def test_bad_constants_are_refused_with_the_fix(constants: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config(**constants)


def test_missing_required_constant() -> None:
    with pytest.raises(ConfigError, match="DATASET_PATH is missing"):
        EvalConfig.from_constants({"EXPERIMENT_NAME": "a/b"}, "eval.py")


def test_similarity_threshold_is_required_where_similarity_scores() -> None:
    c = config(SCORER_BIAS="semantic_similarity")
    with pytest.raises(ConfigError, match="BIAS_SEMANTIC_SIMILARITY_SCORE is not declared"):
        c.similarity_threshold_for("bias")
    assert config(SCORER_BIAS="semantic_similarity", BIAS_SEMANTIC_SIMILARITY_SCORE=0.85) \
        .similarity_threshold_for("bias") == 0.85


def test_params_are_the_constants_and_never_other_globals() -> None:
    c = EvalConfig.from_constants({
        **BASE, "REPEAT_COUNT": 5, "EVAL_MIN_ACCURACY": {"default": 0.8, "smoke": 1.0},
        "MOCK_ADAPTERS": {"crm": dict, "kb": dict}, "COMPONENT_PARAMS": {"temperature": 0.05},
        "OPENAI_API_KEY": "sk-should-never-be-logged", "helper": lambda: None,
    }, "eval.py")
    assert c.params() == {
        "DATASET_PATH": "datasets/x", "EXPERIMENT_NAME": "router/golden",
        "EVAL_MIN_ACCURACY": '{"default": 0.8, "smoke": 1.0}', "REPEAT_COUNT": "5",
        "MOCK_ADAPTERS": "crm,kb", "component.temperature": "0.05"}


PRICED = {"TOKEN_PRICES": {"gpt-4o-mini": (0.15, 0.60)}}


def test_max_cost_usd_is_a_positive_number_of_dollars() -> None:
    assert config(MAX_COST_USD=5, **PRICED).max_cost_usd == 5.0
    assert config(MAX_COST_USD=0.25, **PRICED).max_cost_usd == 0.25
    assert config(**PRICED).max_cost_usd is None
    assert "MAX_COST_USD" in config(MAX_COST_USD=2.5, **PRICED).params()


@pytest.mark.parametrize("value", [0, -1.0, "5", True, float("inf"), float("nan"), None,
                                   [5]])
def test_a_bad_max_cost_usd_is_refused_naming_it_and_the_fix(value: Any) -> None:
    with pytest.raises(ConfigError) as refused:
        config(MAX_COST_USD=value, **PRICED)
    assert str(refused.value) == (
        f"eval.py: MAX_COST_USD={value!r} must be a positive, finite number of US dollars, "
        "e.g. MAX_COST_USD = 5.0 (or remove it: no limit)")


def test_max_cost_usd_needs_token_prices_to_measure_spending() -> None:
    with pytest.raises(ConfigError, match=r"MAX_COST_USD is declared but TOKEN_PRICES is not: "
                                          r"without prices no spending can be measured"):
        config(MAX_COST_USD=5.0)


def test_a_misspelt_max_cost_is_named() -> None:
    with pytest.raises(ConfigError, match="unknown constant MAX_COST: did you mean "
                                          "MAX_COST_USD"):
        config(MAX_COST=5.0, **PRICED)
