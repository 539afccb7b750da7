"""The documents a run stores (stability.json, items.json, plan.json) and the names it writes:
each typed document reads back exactly what it wrote, and reads the files earlier runs left.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit.records import (
    ItemCell,
    ItemResult,
    Mode,
    ScoredRun,
    SeriesItems,
    TypeNames,
    TypeResult,
    names,
)
from evalkit.stats import (
    Allocation,
    ContrastInterval,
    Plan,
    StabilityDocument,
    StabilitySummary,
    allocate,
    disagreement,
    replicate_stability,
    vote_table,
)
from evalkit.stats._plan import ContrastPlan, MeasuredP

tables = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=4),
    st.dictionaries(st.integers(0, 3), st.booleans(), min_size=1, max_size=4),
    min_size=1, max_size=12)


@given(tables)
def test_a_stability_summary_reads_back_what_it_wrote(table: dict[str, dict[int, bool]]) -> None:
    summary = StabilitySummary.of(replicate_stability("functional_accuracy", table))
    written = json.loads(json.dumps(summary.to_json()))  # as the artifact holds it
    again = StabilitySummary.from_json(written)
    assert again == summary
    assert again.to_json() == summary.to_json()


def test_the_stability_document_of_an_earlier_run_still_reads() -> None:
    # stability.json as the series before typed documents wrote it (seeds/000's example shape)
    stored = {"pack_id": "support-router/golden", "root_seed": 0, "derivation": "d",
              "seeds": [11, 22], "metrics": [{
                  "metric": "bias_accuracy", "rates": {"0": [6, 6], "1": [5, 6]}, "mean": 0.9167,
                  "sd": 0.1179, "spread": 0.1667, "unstable_items": 1, "repeated_items": 6,
                  "components": {"completion": 0.04, "item": 0.0, "total": 0.03,
                                 "trials": 2.0, "items": 6, "estimator": "anova_moment",
                                 "reference": "NIST"},
                  "interval": {"p": 0.9167, "n_eff": 12.0, "confidence": 0.95, "low": 0.64,
                               "high": 0.98},
                  "noise_floor": 0.1667,
                  "pairwise": [{"replicates": [0, 1], "shared": 6, "disagree": 1,
                                "rate": 0.1667}],
                  "partition": {"always_right": 5, "always_wrong": 0, "changed": 1,
                                "seen_once": 0, "changed_items": ["g1"]}}]}
    document = StabilityDocument.from_json(stored)
    (metric,) = document.metrics
    assert document.seeds == (11, 22)
    assert metric.rates == {0: (6, 6), 1: (5, 6)}
    assert metric.partition.changed_items == ("g1",)
    assert metric.reliability is None  # kept since; absent from the file, absent again below
    assert metric.pairwise[0].rate == pytest.approx(1 / 6)
    assert metric.components is not None and metric.components.trials == 2.0
    assert document.to_json() == {**stored, "metrics": [
        {**stored["metrics"][0], "pairwise": [{**stored["metrics"][0]["pairwise"][0],
                                               "rate": 1 / 6}]}]}


def item(item_id: str, passed: bool, outputs: tuple[object, ...]) -> ItemResult:
    return ItemResult(item_id, passed, True, "q", "a", outputs, (item_id,))


def test_series_items_line_up_every_replicate_and_mark_what_one_did_not_score() -> None:
    first = ScoredRun((TypeResult("functional", "exact", (item("a", True, ("x",)),
                                                          item("b", False, ("y",)))),))
    second = ScoredRun((TypeResult("functional", "exact", (item("a", False, ("z",)),)),))
    series = SeriesItems.of([first, second])
    rows = series.types["functional"]
    assert rows["a"] == (ItemCell(True, True, ("x",), None), ItemCell(False, False, ("z",), None))
    assert rows["b"] == (ItemCell(False, False, ("y",), None), None)
    assert SeriesItems.from_json(json.loads(json.dumps(series.to_json()))) == series


def test_a_plan_reads_back_what_it_wrote() -> None:
    found = disagreement("replicates", [["a", "a", "b"], ["a", "a"], ["b", "a", "a", "a"]])
    assert found is not None
    interval = ContrastInterval(0.05, -0.02, 0.12, 3, 0.99, "t")
    plan = Plan(
        experiment="x/y", target_error=0.01,
        measured=(MeasuredP("replicates", "r1", found, vote_table(found.p, 0.01, 5),
                            vote_table(found.interval.high, 0.01, 5)),),
        allocations={"functional": allocate(replicate_stability(
            "functional_accuracy", {"a": {0: True, 1: False}, "b": {0: True, 1: True},
                                    "c": {0: False, 1: False}}).components)},  # type: ignore
        allocation_run="r1", against="x/z",
        contrasts=(ContrastPlan("functional", (0.1, 0.0, 0.05), 3, interval, None, interval,
                                1e-3, 2e-3, 7),),
        contrast_count=1, half_width=0.02)
    written = json.loads(json.dumps(plan.to_json()))
    again = Plan.from_json(written)
    assert again.to_json() == plan.to_json()
    assert again.measured[0].disagreement.p == found.p
    assert again.contrasts == plan.contrasts
    assert isinstance(again.allocations["functional"], Allocation)
    assert again.allocations["functional"].advice() == plan.allocations["functional"].advice()


def test_type_names_are_the_type_and_a_suffix() -> None:
    n = TypeNames.of("bias")
    assert (n.accuracy, n.ci_lower, n.cumulative_f1, n.scorer_digest, n.stability) == (
        "bias_accuracy", "bias_accuracy_ci_lower", "bias_cumulative_f1",
        "bias_scorer_source_sha256", "bias_stability")
    assert TypeNames.of_accuracy("functional_accuracy") == TypeNames.of("functional")
    assert names.report_artifact(names.report_name("smoke")) == "reports/report-smoke.md"


@pytest.mark.parametrize(("tags", "mode"), [
    ({}, Mode.EVALUATION), ({"mode": "replicates"}, Mode.REPLICATES),
    ({"mode": "planning"}, Mode.PLANNING), ({"mode": ""}, Mode.EVALUATION)])
def test_a_run_s_mode_is_its_tag_or_an_evaluation(tags: dict[str, str], mode: Mode) -> None:
    assert Mode.of(tags) is mode


def test_a_mode_evalkit_never_writes_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="tagged mode='fishing' was not made by evalkit"):
        Mode.of({"mode": "fishing"})


def test_nan_free_documents() -> None:
    # A summary whose variance split is undefined stores null, never NaN (which JSON lacks).
    summary = StabilitySummary.of(replicate_stability("m_accuracy", {"a": {0: True}}))
    assert not any(isinstance(v, float) and math.isnan(v) for v in summary.to_json().values())
