"""The scorer held against people's labels: one type's check, worked by hand, and the run that
draws, gives labels and gates on the corrected accuracy (in memory, as the fast tests do)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from evalkit import ConfigError, LabelFileInvalid, RunContext, Selection, evaluate
from evalkit.records import (
    HumanLabel,
    ItemResult,
    MetricPoint,
    ScoredRun,
    TypeResult,
    meets_threshold,
    names,
    threshold_failures,
)
from evalkit.reports import render_reports
from evalkit.review import LabelSession, build_plan, compare, import_labels, load_side, record_plan
from evalkit.stats import (
    DrawnEntry,
    LabelDraw,
    LabelDraws,
    Stratum,
    check_judge,
    checks_for,
    judge_checks,
    labels_for_half_width,
    rogan_gladen,
    stratified_ppi_mean,
)
from evalkit.stats._judge_stability import judge_stability
from evalkit.tracking import Tracker, judge_points
from tests.support.builders import RecordingComponent, config_for, entry, write_dataset


def item(entry_id: str, passed: bool, expected_pass: bool = True) -> ItemResult:
    return ItemResult(entry_id, passed, expected_pass, "q", "a", ("a",), (entry_id,))


# 20 entries the scorer passed, 10 it failed; 10 of the passes and all the failures drawn.
PASSES = [f"p{i:02d}" for i in range(20)]
FAILURES = [f"f{i:02d}" for i in range(10)]
RESULT = TypeResult("functional", "llm_judge",
                    tuple([item(e, True) for e in PASSES] + [item(e, False) for e in FAILURES]))
DRAW = LabelDraw(7, {True: 20, False: 10},
                 tuple([DrawnEntry(e, True, 0.5) for e in PASSES[:10]]
                       + [DrawnEntry(e, False, 1.0) for e in FAILURES]))
# People pass 8 of the 10 drawn passes and 3 of the 10 failures.
LABELS = ([HumanLabel(e, "functional", i < 8, "ann", 10 + i) for i, e in enumerate(PASSES[:10])]
          + [HumanLabel(e, "functional", i < 3, "ann", 30 + i)
             for i, e in enumerate(FAILURES)])


def test_the_corrected_accuracy_weighs_each_verdict_by_its_share_of_entries() -> None:
    check = check_judge(RESULT, LABELS, DRAW)

    assert check.corrected is not None
    # theta = (20/30) 0.8 + (10/30) 0.3; V = sum W² p~(1-p~)/n + sum W (p - theta)²/N
    theta = 2 / 3 * 0.8 + 1 / 3 * 0.3
    smoothed = [(8.5 / 11, 2 / 3), (3.5 / 11, 1 / 3)]
    variance = sum(w * w * p * (1 - p) / 10 for p, w in smoothed) + (
        2 / 3 * (0.8 - theta) ** 2 + 1 / 3 * (0.3 - theta) ** 2) / 30
    assert check.corrected.estimate == pytest.approx(19 / 30)
    assert check.corrected.standard_error == pytest.approx(math.sqrt(variance))
    assert (check.corrected.labels, check.corrected.entries) == (20, 30)
    assert check.more_needed == {True: 0, False: 0}
    assert len(check.drawn_labels) == 20 and check.chosen_labels == ()


def test_rogan_gladen_weighs_each_label_by_its_stratum_and_keeps_the_label_count() -> None:
    check = check_judge(RESULT, LABELS, DRAW)

    # weights N_h/n_h = 2 (passes) and 1 (failures), scaled by 20/30 to sum to 20 labels
    w_pass, w_fail = 2 * 20 / 30, 1 * 20 / 30
    sensitivity = (8 * w_pass, 8 * w_pass + 3 * w_fail)  # people passed: scorer right on 8
    specificity = (7 * w_fail, 2 * w_pass + 7 * w_fail)  # people failed: scorer right on 7
    expected = rogan_gladen(20, 30, sensitivity, specificity)
    assert check.rogan_gladen is not None and expected is not None
    assert (check.rogan_gladen.estimate, check.rogan_gladen.low, check.rogan_gladen.high) == \
        pytest.approx((expected.estimate, expected.low, expected.high))
    # with weighted rates, Rogan-Gladen's point estimate is the stratified one
    assert check.rogan_gladen.estimate == pytest.approx(19 / 30)
    assert check.rogan_gladen.labels == 20


def test_agreement_counts_every_label_and_the_latest_label_of_an_entry_wins() -> None:
    changed = [HumanLabel(PASSES[0], "functional", False, "bob", 5),  # earlier: replaced
               HumanLabel(PASSES[15], "functional", True, "ann", 99),  # not drawn: by choice
               HumanLabel(PASSES[1], "smoke", False, "ann", 99)]  # another type: ignored
    check = check_judge(RESULT, [*changed, *LABELS], DRAW)

    assert check.agreement is not None
    c = check.agreement.confusion
    # scorer pass: 8 + 1 (by choice) people passed, 2 failed; scorer fail: 3 passed, 7 failed
    assert (c.tp, c.fp, c.fn, c.tn) == (9, 2, 3, 7)
    assert check.chosen_labels == (PASSES[15],)
    assert check.corrected is not None and check.corrected.estimate == pytest.approx(19 / 30)


def test_too_few_labels_on_a_verdict_give_no_correction_and_say_how_many_more() -> None:
    few = [x for x in LABELS if x.entry_id not in FAILURES[6:]]  # 6 of the 10 failures
    check = check_judge(RESULT, few, DRAW)

    assert check.corrected is None and check.rogan_gladen is None
    assert check.more_needed == {True: 0, False: 4}


def test_without_a_draw_labels_count_by_choice_and_the_budget_assumes_half() -> None:
    check = check_judge(RESULT, LABELS, None)

    assert check.corrected is None and check.drawn == 0
    assert len(check.chosen_labels) == 20
    assert check.budget is None or check.budget.more == check.budget.total
    points = {p.key: p.value for p in judge_points(check)}
    assert points["functional_labels_by_choice"] == 20
    assert "functional_accuracy_corrected" not in points
    assert points["functional_judge_tpr"] == pytest.approx(8 / 11)
    assert points["functional_judge_tnr"] == pytest.approx(7 / 9)


def test_an_expected_failure_is_correct_when_people_fail_it() -> None:
    result = TypeResult("functional", "exact", (
        item("a1", False, expected_pass=False), item("a2", False, expected_pass=False),
        item("b1", True), item("b2", True)))
    draw = LabelDraw(1, {True: 2, False: 2}, tuple(
        DrawnEntry(i.id, i.passed, 1.0) for i in result.items))
    labels = [HumanLabel(i.id, "functional", i.passed, "ann") for i in result.items]
    check = check_judge(result, labels, draw)
    assert check.corrected is not None and check.corrected.estimate == 1.0
    assert check.agreement is not None and check.agreement.confusion.tn == 2


def test_checks_cover_judged_labelled_and_drawn_types_but_never_bias_groups() -> None:
    bias = TypeResult("bias", "llm_judge", (ItemResult("g", True, True, [], None, ("x", "y"),
                                                       ("b1", "b2")),))
    plain = TypeResult("smoke", "exact", (item("s", True),))
    checks = checks_for(ScoredRun((RESULT, bias, plain)), [], {})
    assert set(checks) == {"functional"}
    labelled = checks_for(ScoredRun((plain,)),
                          [HumanLabel("s", "smoke", True, "ann")], {})
    assert set(labelled) == {"smoke"}


# --- a run that draws and gives labels, and gates on the corrected accuracy ------------------

ENTRIES = {f"e{i:02d}": entry("functional") for i in range(24)}
WRONG = {f"e{i:02d}" for i in range(6)}
"""Entries whose answer a person fails although the scorer (exact match) passes it."""


def labelled_run(tmp_path: Path, tracker: Tracker, **constants: object) -> object:
    dataset = write_dataset(tmp_path / "ds", ENTRIES)
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({
        "entry_id": e, "type": "functional",
        "verdict": "fail" if e in WRONG else "pass", "reviewer": "ann"}) + "\n"
        for e in ENTRIES), encoding="utf-8")
    config = config_for(tmp_path, dataset, LABELS_PATH=str(labels), **constants)
    return evaluate(config, RecordingComponent(), Selection.parse("functional", None, False),
                    RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs"))


def test_a_run_with_labels_is_gated_on_its_corrected_accuracy(tmp_path: Path,
                                                            tracker: Tracker) -> None:
    # whichever 20 are drawn, 2 to 6 of them are wrong: the estimate is 0.7 to 0.9
    outcome = labelled_run(tmp_path, tracker, LABEL_SAMPLE=20, EVAL_MIN_ACCURACY=0.95)

    (m,) = outcome.metrics
    assert m.accuracy == 1.0  # every answer matches: the scorer passes all 24
    assert m.corrected is not None and 0.7 <= m.corrected.estimate <= 0.9
    assert threshold_failures(m) == (
        f"functional_accuracy_corrected {m.corrected.estimate:.3f} < 0.95",)
    stored = tracker.reader.stored(outcome.run_id)
    assert stored.tags[names.VERDICT_TAG] == "FAIL"
    assert stored.metrics["functional_accuracy_corrected"] == m.corrected.estimate
    assert stored.metrics["functional_labels_drawn"] == 20
    assert stored.metrics["functional_labels_by_choice"] == 4
    record = tracker.reader.fetch(outcome.run_id)
    assert len(record.labels) == 24  # the file's labels are feedback on the traces
    reports = render_reports(record)
    assert "| corrected (stratified PPI) |" in reports[names.JUDGE_REPORT]
    assert f"[{names.JUDGE_REPORT}]({names.JUDGE_REPORT})" in reports[names.SUMMARY_REPORT]
    assert reports == {**reports, **{p.name: p.read_text() for p in outcome.reports}}
    check = outcome.checks["functional"]
    assert check.to_json()["label_entry_ids"] == list(check.drawn_labels)
    at_90 = judge_checks(record, 0.9)["functional"].corrected
    assert at_90 is not None and at_90.confidence == 0.9 and at_90.high - at_90.low < \
        m.corrected.high - m.corrected.low


def test_without_a_draw_the_labels_are_agreement_only(tmp_path: Path, tracker: Tracker) -> None:
    outcome = labelled_run(tmp_path, tracker, EVAL_MIN_ACCURACY=0.8)

    (m,) = outcome.metrics
    assert m.corrected is None and meets_threshold(m)
    assert outcome.checks["functional"].agreement is not None
    assert outcome.checks["functional"].agreement.confusion.fp == 6


def test_a_label_session_draws_once_and_writes_each_label(tmp_path: Path,
                                                         tracker: Tracker) -> None:
    outcome = labelled_run(tmp_path, tracker)  # labels given, nothing drawn
    session = LabelSession(tracker, outcome.run_id, "functional", sample=10, seed=3)
    assert session.draw is not None and len(session.order) == 10
    again = LabelSession(tracker, outcome.run_id, "functional")
    assert again.draw == session.draw  # recorded on the run, read back
    with pytest.raises(ConfigError, match="already has a draw of 10"):
        LabelSession(tracker, outcome.run_id, "functional", sample=12)
    first = session.order[0]
    session.give([HumanLabel(first, "functional", False, "zoe")])
    assert session.given_by("zoe") == {first: False}
    after = session.finish()
    check = after.checks["functional"]
    assert first in check.drawn_labels
    assert after.verdict == after.verdict_before
    stored = tracker.reader.stored(outcome.run_id)
    assert stored.metrics["functional_labels_drawn"] == len(check.drawn_labels)


def test_a_label_file_is_imported_whole_or_not_at_all(tmp_path: Path, tracker: Tracker) -> None:
    outcome = labelled_run(tmp_path, tracker)
    before = len(tracker.reader.fetch(outcome.run_id).labels)
    bad = tmp_path / "more.csv"
    bad.write_text("entry_id,type,verdict\ne01,functional,pass\n"
                   "e02,functional,maybe\n", encoding="utf-8")
    with pytest.raises(LabelFileInvalid, match=r"more.csv:3: verdict"):
        import_labels(tracker, outcome.run_id, bad, "carl")
    assert len(tracker.reader.fetch(outcome.run_id).labels) == before
    good = tmp_path / "good.csv"
    good.write_text("entry_id,type,verdict\ne01,functional,fail\n", encoding="utf-8")
    given, after = import_labels(tracker, outcome.run_id, good, "carl")
    assert given == 1 and set(after.checks) == {"functional"}
    assert len(tracker.reader.fetch(outcome.run_id).labels) == before + 1


def test_compare_gates_the_gap_between_corrected_accuracies(tmp_path: Path,
                                                            tracker: Tracker) -> None:
    a = labelled_run(tmp_path / "a", tracker, LABEL_SAMPLE=20)
    b = labelled_run(tmp_path / "b", tracker, LABEL_SAMPLE=10)
    side_a, side_b = load_side(tracker.reader, a.run_id), load_side(tracker.reader, b.run_id)
    (result,) = compare(side_a, side_b)

    ca, cb = a.checks["functional"].corrected, b.checks["functional"].corrected
    assert ca is not None and cb is not None and result.corrected is not None
    assert result.gap == 0.0  # the scorer passes every entry of both
    assert result.corrected.gap == pytest.approx(ca.estimate - cb.estimate)
    half = 1.959964 * math.hypot(ca.standard_error, cb.standard_error)
    assert (result.corrected.low, result.corrected.high) == pytest.approx(
        (result.corrected.gap - half, result.corrected.gap + half), abs=1e-5)
    assert result.to_json()["corrected_gap"] == {
        "gap": result.corrected.gap, "standard_error": result.corrected.standard_error,
        "low": result.corrected.low, "high": result.corrected.high}
    assert result.corrected.standard_error == math.hypot(ca.standard_error, cb.standard_error)
    assert str(result.verdict) == "not gated: no noise floor measured (no replicates)"


def test_plan_gives_the_label_budget_of_the_latest_labelled_run(tmp_path: Path,
                                                               tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {
        **{f"r{i}": entry("repeatability") for i in range(3)},
        **{f"e{i:03d}": entry("functional") for i in range(400)}})
    labels = tmp_path / "labels.csv"
    labels.write_text("entry_id,type,verdict\n" + "".join(
        f"e{i:03d},functional,{'fail' if i % 2 == 0 else 'pass'}\n" for i in range(400)),
        encoding="utf-8")
    config = config_for(tmp_path, dataset, LABELS_PATH=str(labels), LABEL_SAMPLE=40,
                        REPEAT_COUNT=3, EVAL_MIN_ACCURACY_REPEATABILITY=0.0)
    outcome = evaluate(config, RecordingComponent(), Selection.parse("all", None, False),
                       RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs"))
    plan = build_plan(tracker, config.experiment_name)

    (label_plan,) = plan.labels
    budget = outcome.checks["functional"].budget
    assert budget is not None and label_plan.run_id == outcome.run_id
    assert (label_plan.labels_drawn, label_plan.needed, label_plan.more) == (
        40, {"pass": budget.needed[True]}, budget.more)
    # The draw is seeded by the run's id, so it differs from run to run. With half the labels
    # disagreeing, ±0.05 needs more than 40 labels whichever 40 are drawn (only a draw without
    # a disagreement, 2**-40 likely, needs fewer) and at most 385, within the 400 entries.
    assert budget.more > 0
    assert type(plan).from_json(plan.to_json()) == plan
    _, _, report = record_plan(tracker, plan, tmp_path / "reports", {})
    assert f"| functional | 40 | {budget.needed[True]} / 0 | {budget.more} |" in report


def test_the_judges_stability_from_its_votes() -> None:
    votes = [(True, True, True), (True, False, True), (False, False, True),
             (False, False, False)]
    result = TypeResult("repeatability", "llm_judge", tuple(
        replace(item(f"r{i}", sum(v) >= 2), judge_votes=v) for i, v in enumerate(votes)))
    stability = judge_stability(result)

    assert stability is not None
    assert (stability.repeats, stability.items, stability.changed) == (3, 4, 2)
    assert stability.flip_rate == 0.5
    assert stability.disagreement is not None and stability.disagreement.p == 2 / 12
    assert stability.disagreement.source == "judge"
    # majority of 3 wrong when 2 or 3 votes are: 3 p² (1 - p) + p³ at p = 1/6
    assert stability.majority_error == pytest.approx(16 / 216)
    assert (stability.failures, stability.failures_from_judge) == (2, 1)
    check = check_judge(result, [], None)
    assert check.stability == stability
    assert {p.key: p.value for p in judge_points(check)}["repeatability_judge_flip_rate"] == 0.5
    assert check.to_json()["judge_stability"] == {
        "repeats": 3, "items": 4, "flip_rate": 0.5, "majority_error": pytest.approx(16 / 216),
        "failures": 2, "failures_from_judge": 1}
    assert judge_stability(TypeResult("functional", "llm_judge", (item("x", True),))) is None


def test_labels_given_after_the_run_move_its_verdict_and_say_so(tmp_path: Path,
                                                               tracker: Tracker) -> None:
    outcome = labelled_run(tmp_path, tracker, EVAL_MIN_ACCURACY=0.9)  # labels, no draw
    assert tracker.reader.stored(outcome.run_id).tags[names.VERDICT_TAG] == "PASS"

    # every entry drawn: the file's labels (6 of 24 fail) now correct the accuracy
    after = LabelSession(tracker, outcome.run_id, "functional", sample=24, seed=1).finish()
    assert (after.verdict_before, after.verdict) == ("PASS", "FAIL")
    assert after.failures == ("functional_accuracy_corrected 0.750 < 0.9",)
    stored = tracker.reader.stored(outcome.run_id)
    assert stored.tags[names.VERDICT_TAG] == "FAIL"
    assert "**evalkit verdict: FAIL**" in stored.tags[names.DESCRIPTION_TAG]
    assert stored.metrics["functional_accuracy_corrected"] == 0.75


def test_a_session_on_a_type_without_labels_or_draw_ends_with_its_check(
        tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {"s1": entry("smoke"), "s2": entry("smoke")})
    config = config_for(tmp_path, dataset)
    outcome = evaluate(config, RecordingComponent(), Selection.parse("smoke", None, False),
                       RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs"))
    with pytest.raises(ConfigError, match="has no 'bias' entries to label; its labellable "
                                          "types: smoke"):
        LabelSession(tracker, outcome.run_id, "bias")
    session = LabelSession(tracker, outcome.run_id, "smoke")
    assert session.draw is None and session.order == ["s1", "s2"]
    after = session.finish()
    assert after.checks["smoke"].labels == 0 and after.verdict == "PASS"


def test_the_check_passes_its_level_on_and_names_its_type_and_scorer() -> None:
    at_90 = check_judge(RESULT, LABELS, DRAW, confidence=0.9)
    strata = {True: Stratum(20, [i < 8 for i in range(10)]),
              False: Stratum(10, [i < 3 for i in range(10)])}
    assert at_90.corrected == stratified_ppi_mean(strata, 0.9)
    assert at_90.budget == labels_for_half_width(strata, 0.05, 0.9)
    assert at_90.agreement is not None and at_90.agreement.tpr is not None
    assert at_90.agreement.tpr.confidence == 0.9
    assert (at_90.test_type, at_90.scorer, at_90.entries, at_90.drawn) == (
        "functional", "llm_judge", 30, 20)
    unlabelled = check_judge(RESULT, [], None)
    assert unlabelled.agreement is None and unlabelled.labels == 0
    # before a draw the run's own verdicts give N_h, with no label yet
    assert unlabelled.budget == labels_for_half_width(
        {True: Stratum(20, ()), False: Stratum(10, ())}, 0.05)
    assert unlabelled.more_needed == {True: 10, False: 10}


def test_the_checks_json_and_metrics_hold_every_figure() -> None:
    check = check_judge(RESULT, LABELS, DRAW)
    c, rg, a = check.corrected, check.rogan_gladen, check.agreement
    assert c is not None and rg is not None and a is not None
    assert check.budget is None  # 30 entries cannot give +-0.05
    assert a.kappa is not None and a.ac1 is not None
    assert check.to_json() == {
        "scorer": "llm_judge", "entries": 30, "drawn": 20, "labels_drawn": 20,
        "labels_by_choice": 0,
        "corrected": {"method": "stratified PPI", "estimate": c.estimate,
                      "standard_error": c.standard_error, "confidence": 0.95, "low": c.low,
                      "high": c.high, "labels": 20, "entries": 30},
        "rogan_gladen": {"method": rg.method, "estimate": rg.estimate,
                         "standard_error": rg.standard_error, "confidence": 0.95,
                         "low": rg.low, "high": rg.high, "labels": 20, "entries": 30},
        "label_entry_ids": list(check.drawn_labels),
        "more_labels_needed": {"pass": 0, "fail": 0},
        "agreement": {"confusion": {"tp": 8, "fp": 2, "fn": 3, "tn": 7},
                      "tpr": 8 / 11, "tnr": 7 / 9, "precision": 8 / 10,
                      "kappa": a.kappa.value, "ac1": a.ac1.value, "prevalence": 11 / 20},
        "judge_stability": None,
        "budget": None}
    wide = check_judge(RESULT, LABELS, DRAW, half_width=0.2)
    b = wide.budget
    assert b is not None and wide.to_json()["budget"] == {
        "half_width": 0.2, "total": b.total, "more": b.more,
        "needed": {"pass": b.needed[True], "fail": b.needed[False]}}
    assert judge_points(check) == [
        MetricPoint("functional_labels_drawn", 20), MetricPoint("functional_labels_by_choice", 0),
        MetricPoint("functional_accuracy_corrected", c.estimate),
        MetricPoint("functional_accuracy_corrected_low", c.low),
        MetricPoint("functional_accuracy_corrected_high", c.high),
        MetricPoint("functional_judge_tpr", 8 / 11), MetricPoint("functional_judge_tnr", 7 / 9),
        MetricPoint("functional_judge_kappa", a.kappa.value)]


def test_a_runs_draws_are_a_document_read_back_whole() -> None:
    draws = LabelDraws({"functional": DRAW})
    doc = draws.to_json()
    assert doc["format"] == "evalkit.label-draws/1"
    assert doc["types"]["functional"]["seed"] == 7
    assert doc["types"]["functional"]["entries"] == {"pass": 20, "fail": 10}
    assert doc["types"]["functional"]["drawn"][0] == {
        "entry_id": "p00", "verdict": True, "inclusion_probability": 0.5}
    assert doc["types"]["functional"]["drawn"][-1] == {
        "entry_id": "f09", "verdict": False, "inclusion_probability": 1.0}
    assert LabelDraws.from_json(json.loads(json.dumps(doc))) == draws
    with pytest.raises(ValueError, match="unsupported label-draws format 'other'"):
        LabelDraws.from_json({**doc, "format": "other"})


def test_the_level_reaches_every_estimate_and_unequal_draws_weigh_their_labels() -> None:
    # 14 of the 20 passes drawn (12 people pass), all 10 failures (3 people pass)
    draw = LabelDraw(3, {True: 20, False: 10},
                     tuple([DrawnEntry(e, True, 0.7) for e in PASSES[:14]]
                           + [DrawnEntry(e, False, 1.0) for e in FAILURES]))
    labels = ([HumanLabel(e, "functional", i < 12, "ann") for i, e in enumerate(PASSES[:14])]
              + [HumanLabel(e, "functional", i < 3, "ann") for i, e in enumerate(FAILURES)])
    check = check_judge(RESULT, labels, draw, confidence=0.9)
    w_pass, w_fail = 20 / 14, 10 / 10
    scale = 24 / (14 * w_pass + 10 * w_fail)
    expected = rogan_gladen(20, 30, (12 * w_pass * scale, (12 * w_pass + 3 * w_fail) * scale),
                            (7 * w_fail * scale, (2 * w_pass + 7 * w_fail) * scale), 0.9)
    assert check.rogan_gladen is not None and expected is not None
    assert (check.rogan_gladen.low, check.rogan_gladen.high) == pytest.approx(
        (expected.low, expected.high))
    assert checks_for(ScoredRun((RESULT,)), labels, {"functional": draw}, 0.9) == {
        "functional": check}
    strata = {True: Stratum(20, [i < 12 for i in range(14)]),
              False: Stratum(10, [i < 3 for i in range(10)])}
    wide = check_judge(RESULT, labels, draw, confidence=0.9, half_width=0.2)
    assert wide.budget is not None
    assert wide.budget == labels_for_half_width(strata, 0.2, 0.9)
    assert wide.budget != labels_for_half_width(strata, 0.2, 0.95)


def test_an_uncorrected_check_names_no_label_entries_and_its_missing_rates() -> None:
    few = [x for x in LABELS if x.entry_id not in FAILURES[6:]]
    assert check_judge(RESULT, few, DRAW).to_json()["label_entry_ids"] == []
    assert check_judge(RESULT, [], None).to_json()["agreement"] is None
    everyone_passes = [HumanLabel(e, "functional", True, "ann") for e in PASSES[:10]]
    agreement = check_judge(RESULT, everyone_passes, DRAW).to_json()["agreement"]
    assert (agreement["tpr"], agreement["tnr"], agreement["kappa"]) == (1.0, None, None)


def test_compare_corrects_a_gap_only_when_both_runs_are_corrected(tmp_path: Path,
                                                                  tracker: Tracker) -> None:
    a = labelled_run(tmp_path / "a", tracker, LABEL_SAMPLE=20)
    b = labelled_run(tmp_path / "b", tracker)  # labels but no draw: no correction
    (result,) = compare(load_side(tracker.reader, a.run_id), load_side(tracker.reader, b.run_id))
    assert result.corrected is None and result.to_json()["corrected_gap"] is None
