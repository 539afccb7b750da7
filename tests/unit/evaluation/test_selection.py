"""Selection and the run plan: which entries, how many calls, which types; every mistake
refused before a call. Fast: among the tests ``make mutation`` runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit import ConfigError, EvalConfig, Selection
from evalkit.calls import plan_run
from evalkit.dataset import TEST_TYPES, load_dataset
from tests.support.builders import entry, plan_of, write_dataset

ENTRIES = {
    "a": entry("functional", "smoke", group="billing"),
    "b": entry("repeatability", "functional", group="shipping"),
    "c": entry("bias", bias_group="g", group="billing", human_review=True,
               human_instructions="look"),
    "d": entry("bias", bias_group="g", group="shipping"),
}


def test_plans(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, ENTRIES, repeats=4)
    assert [(p.entry.id, p.types, p.calls, p.human_review) for p in plan.items] == [
        ("a", ("functional", "smoke"), 1, False),
        ("b", ("functional", "repeatability"), 4, False),
        ("c", ("bias",), 1, True), ("d", ("bias",), 1, False)]
    assert plan.types == ("bias", "functional", "smoke", "repeatability")
    assert plan.total_calls == 7 and plan.selection == Selection("all")

    one = plan_of(tmp_path, ENTRIES, repeats=4, selection="functional")
    assert [(p.entry.id, p.types, p.calls, p.human_review) for p in one.items] == [
        ("a", ("functional",), 1, False), ("b", ("functional",), 1, False)]

    grouped = plan_of(tmp_path, ENTRIES, repeats=4, groups="shipping")
    assert [(p.entry.id, p.calls) for p in grouped.items] == [("b", 4), ("d", 1)]
    assert grouped.types == ("bias", "functional", "repeatability")


def test_selection_choices() -> None:
    assert Selection.parse("all", " billing , shipping") == Selection("all",
                                                                       ("billing", "shipping"))
    assert Selection.parse("smoke").groups is None
    assert Selection.parse("smoke", None, True).human_review_only
    assert Selection("all", ("a", "b")).groups_filter == "a,b"
    assert Selection("all").groups_filter == "all"
    assert Selection("all").exports_human_review
    assert not Selection("smoke").exports_human_review
    assert Selection("smoke", human_review_only=True).exports_human_review
    for test_type in TEST_TYPES:
        Selection(test_type)


@pytest.mark.parametrize(("args", "message"), [
    (("everything",), "--type='everything' is not a test type: use 'all' or one of "
                      + ", ".join(TEST_TYPES)),
    (("all", ()), "--groups needs a comma-separated list of group names, e.g. "
                  "--groups=billing,refunds"),
    (("all", ("billing", "")), "--groups needs a comma-separated list of group names, e.g. "
                               "--groups=billing,refunds"),
])
def test_bad_choices_are_refused(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Selection(*args)  # type: ignore[arg-type]
    assert str(refused.value) == message


def test_human_review_only_and_groups_select_together(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, ENTRIES, selection="all", groups="billing")
    assert [p.entry.id for p in plan.items] == ["a", "c"]
    dataset = load_dataset(tmp_path / "ds")
    config = EvalConfig.from_constants({"EXPERIMENT_NAME": "s/t", "DATASET_PATH": "ds",
                                        "EVAL_MIN_ACCURACY": 0.5}, "test_eval.py")
    only = plan_run(dataset, Selection("all", ("billing",), True), config)
    assert [(p.entry.id, p.human_review) for p in only.items] == [("c", True)]
    with pytest.raises(ConfigError) as nothing:
        plan_run(dataset, Selection("smoke", ("shipping",), True), config)
    assert str(nothing.value) == (f"nothing to evaluate: no entry of {dataset.path} matches "
                                  "--type=smoke --groups=shipping --human-review")
    with pytest.raises(ConfigError) as plain:
        plan_run(dataset, Selection("fairness"), config)
    assert str(plain.value) == (f"nothing to evaluate: no entry of {dataset.path} matches "
                                "--type=fairness")


def test_config_mistakes_are_refused_before_any_call(tmp_path: Path) -> None:
    dataset_path = write_dataset(tmp_path / "ds", {
        "m": entry("functional", mock_fixtures={"crm": {"x": 1}}),
        "r": entry("repeatability")})
    dataset = load_dataset(dataset_path)

    def config(**constants: object) -> EvalConfig:
        return EvalConfig.from_constants({"EXPERIMENT_NAME": "s/t", "DATASET_PATH": "ds",
                                          "EVAL_MIN_ACCURACY": 0.5, **constants},
                                         "test_eval.py")

    with pytest.raises(ConfigError) as unregistered:
        plan_run(dataset, Selection("functional"),
                 config(MOCK_ADAPTERS={"db": dict, "api": dict}))
    assert str(unregistered.value) == (
        f"{dataset.entries[0].path}: /mock_fixtures/crm: no adapter 'crm' is registered in "
        "test_eval.py MOCK_ADAPTERS (registered: api, db); register a factory for it or rename "
        "the fixture")
    with pytest.raises(ConfigError, match=r"\(registered: none\)"):
        plan_run(dataset, Selection("functional"), config())
    with pytest.raises(ConfigError, match="REPEAT_COUNT"):
        plan_run(dataset, Selection("repeatability"), config())
    with pytest.raises(ConfigError, match="EVAL_MIN_ACCURACY_REPEATABILITY"):
        plan_run(dataset, Selection("repeatability"), config(REPEAT_COUNT=3))
    with pytest.raises(ConfigError, match="REPEAT_SEMANTIC_SIMILARITY_SCORE"):
        plan_run(dataset, Selection("repeatability"), config(
            REPEAT_COUNT=3, EVAL_MIN_ACCURACY_REPEATABILITY=0.5,
            SCORER_REPEATABILITY="semantic_similarity"))
    plan = plan_run(dataset, Selection("functional"), config(MOCK_ADAPTERS={"crm": dict}))
    assert [p.entry.id for p in plan.items] == ["m"]
