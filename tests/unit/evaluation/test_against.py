"""A sequential run against a recorded one (``--against``), in-process, tracked in memory:
only the candidate is called, on the baseline's items in the drawn order; each type's paired
gap settles where a :class:`PairedSequence` fed by hand with the same gaps settles; the plan
keeps what the baseline has; the run's verdict is what ``compare`` then shows; every refusal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, ConfigError, Entry, RunContext, RunInterrupted, Selection, evaluate
from evalkit.cli._exit import ExitStatus
from evalkit.evaluation import Against, EvaluationOutcome, resume
from evalkit.reports import render_reports
from evalkit.review import Margins, compare, load_side, margin_verdict
from evalkit.stats import MarginVerdict, PairedSequence, Scope
from evalkit.tracking import Tracker, history
from tests.support.builders import RecordingComponent, config_for, entry, write_dataset
from tests.support.commands import eval_script

# 60 functional entries, 30 repeatability entries, 20 bias groups of two variants
ENTRIES = {
    **{f"f{i:02d}": entry("functional", input=f"q{i}") for i in range(60)},
    **{f"r{i:02d}": entry("repeatability", input=f"r{i}") for i in range(30)},
    **{f"b{i:02d}{v}": entry("bias", bias_group=f"g{i:02d}", input=f"variant {v} {i}")
       for i in range(20) for v in "xy"},
}
UNSTABLE = {f"r{i:02d}": (lambda e, c: f"x{c.repeat}") for i in range(30)}


def _evaluate(tmp_path: Path, tracker: Tracker, component: Any, against: Against | None = None,
              test_type: str = "all", entries: dict[str, Any] = ENTRIES,
              question: str | None = None, **constants: Any) -> EvaluationOutcome:
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", entries), **{
        "REPEAT_COUNT": 3, "MAX_CONCURRENCY": 1, "EVAL_MIN_ACCURACY_BIAS": 0.5, **constants})
    return evaluate(config, component, Selection.parse(test_type, sequential=question),
                    RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs"),
                    against)


def _settles_at(gaps: list[float], margin: float) -> int:
    sequence = PairedSequence(len(gaps), margin, scope=Scope.DATASET)
    for n, gap in enumerate(gaps, 1):
        if sequence.update(gap).verdict.settled:
            return n
    return len(gaps)


def test_only_the_candidate_is_called_and_each_gap_settles_where_the_sequence_does(
        tmp_path: Path, tracker: Tracker) -> None:
    # the baseline: every functional entry right, repeatability unstable, bias alike
    baseline = _evaluate(tmp_path, tracker, RecordingComponent(UNSTABLE))
    # the candidate: half the functional entries wrong (gap -1 on those), repeatability
    # stable (+1 on every one), bias alike (0)
    wrong = {f"f{i:02d}" for i in range(0, 60, 2)}
    candidate = RecordingComponent({e: "x" for e in wrong})
    outcome = _evaluate(tmp_path, tracker, candidate, Against(baseline.run_id),
                        question="dataset", EXPERIMENT_NAME=baseline.experiment_name)
    settled = outcome.sequential
    assert settled is not None and settled.against == baseline.run_id
    by_type = {t.test_type: t for t in settled.types}
    assert {t: (str(s.look.verdict), s.units, s.margin) for t, s in by_type.items()} == {
        "functional": ("worse by more than the margin", 60, 0.05),
        "repeatability": ("better", 30, 0.05), "bias": ("within the margin", 20, 0.05)}

    # by hand, in the order the run drew: each unit's gap candidate - baseline
    order = list(settled.order)
    gaps = {"functional": [-1.0 if e in wrong else 0.0 for e in order if e[0] == "f"],
            "repeatability": [1.0 for e in order if e[0] == "r"],
            "bias": [0.0 for _ in dict.fromkeys(e[:3] for e in order if e[0] == "b")]}
    expected = {t: _settles_at(g, 0.05) for t, g in gaps.items()}
    assert {t: s.look.settled_at for t, s in by_type.items()} == expected
    functional = [e for e in order if e[0] == "f"]
    assert sorted(e for e in candidate.count() if e[0] == "f") == sorted(
        functional[:expected["functional"]])
    assert by_type["functional"].look.estimate == pytest.approx(
        sum(gaps["functional"][:expected["functional"]]) / expected["functional"])
    assert by_type["functional"].look.high < -0.05 and by_type["repeatability"].look.low > 0

    assert settled.verdict == "FAIL" and outcome.verdict == "FAIL"
    assert outcome.type_verdict("bias") == "PASS"
    look = by_type["functional"].look
    assert outcome.failures == (
        f"functional: worse by more than the margin at look {look.n} of 60, interval "
        f"[{look.low:+.3f}, {look.high:+.3f}] of the gap candidate - baseline, margin 0.05",)
    stored = tracker.reader.stored(outcome.run_id)
    assert (stored.tags["against"], stored.tags["against_margin"], stored.tags["sequential"]
            ) == (baseline.run_id, "0.05", "dataset")

    # its summary report says where each gap settled, against the margin, and fails it
    summary = render_reports(tracker.reader.fetch(outcome.run_id))["summary.md"]
    assert "- **Verdict:** **FAIL**" in summary
    assert (f"| functional | worse by more than the margin at {look.settled_at} of 60 | "
            f"[{look.low:+.3f}, {look.high:+.3f}] | candidate - baseline ≥ -0.05 |") in summary

    # evalkit history tells the run against a baseline from the baseline
    rows = {r.run_id: r for r in history(tracker.reader, baseline.experiment_name)}
    assert (rows[outcome.run_id].shown_mode, rows[baseline.run_id].shown_mode) == (
        "against", "evaluation")
    assert rows[outcome.run_id].to_json()["against"] == baseline.run_id

    # by experiment name: its latest finished run not itself made against another
    again = _evaluate(tmp_path, tracker, RecordingComponent(UNSTABLE),
                      Against(baseline.experiment_name), question="dataset",
                      EXPERIMENT_NAME=baseline.experiment_name)
    assert again.sequential.against == baseline.run_id

    # compare shows the run's own answer, from its sequence, and gives it as the margin's
    a, b = load_side(tracker.reader, baseline.run_id), load_side(tracker.reader, outcome.run_id)
    results = {r.test_type: r for r in compare(a, b)}
    assert {t: (r.margin.verdict, r.margin.sequence) for t, r in results.items()} == {
        t: ({"functional": MarginVerdict.WORSE}.get(t, MarginVerdict.NO_WORSE), s.look)
        for t, s in by_type.items()}
    assert margin_verdict(tuple(results.values())) is MarginVerdict.WORSE
    # the other way round, A is no run against B: no sequence, and no margin was asked
    assert all(r.margin is None for r in compare(b, a))


def test_the_plan_keeps_the_baselines_items_and_their_types(
        tmp_path: Path, tracker: Tracker) -> None:
    # the baseline evaluated functional only, on the entries of group "billing"
    entries = {f"e{i}": entry("functional", "smoke", input=f"q{i}",
                              group="billing" if i < 6 else "other") for i in range(10)}
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", entries),
                        EVAL_MIN_ACCURACY=0.5)
    context = RunContext(tracker=tracker, runs_dir=tmp_path / "runs")
    baseline = evaluate(config, RecordingComponent(),
                        Selection.parse("functional", "billing"), context)
    candidate = RecordingComponent()
    outcome = evaluate(config, candidate, Selection.parse("all"), context,
                       Against(baseline.run_id, Margins(0.10)))
    assert set(candidate.count()) <= {f"e{i}" for i in range(6)}
    assert [(t.test_type, t.units) for t in outcome.sequential.types] == [("functional", 6)]
    assert outcome.sequential.entries == 6
    assert [m.test_type for m in outcome.metrics] == ["functional"]


def test_an_interrupted_run_against_a_baseline_resumes_against_it(
        tmp_path: Path, tracker: Tracker) -> None:
    entries = {f"e{i:02d}": entry("functional", input=f"q{i}") for i in range(40)}
    baseline = _evaluate(tmp_path, tracker, RecordingComponent(), test_type="functional",
                         entries=entries)
    config = config_for(tmp_path, tmp_path / "ds", REPEAT_COUNT=3, MAX_CONCURRENCY=1,
                        EVAL_MIN_ACCURACY_BIAS=0.5)
    context = RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs")

    def breaks_at_the_fifth(item: Entry, call: Call) -> str:
        if len(first.calls) == 4:
            raise KeyboardInterrupt
        return first(item, call)
    first = RecordingComponent()
    with pytest.raises(RunInterrupted):
        evaluate(config, breaks_at_the_fifth,
                 Selection.parse("functional", sequential="dataset"), context,
                 Against(baseline.run_id, Margins(0.02)))
    (run,) = [r for r in tracker.reader.evaluation_runs(config.experiment_name)
              if r.status != "FINISHED"]
    with pytest.raises(ConfigError, match=f"run {run.run_id} is KILLED, not finished: its "
                                          "recorded items are not final"):
        evaluate(config, RecordingComponent(), Selection.parse("functional"), context,
                 Against(run.run_id))
    second = RecordingComponent()
    outcome = resume(config, second, run.run_id, context)
    assert outcome.sequential.against == baseline.run_id
    assert [t.margin for t in outcome.sequential.types] == [0.02]
    order = list(outcome.sequential.order)
    called = [e for e, _ in first.calls] + [e for e, _ in second.calls]
    assert called == order[:len(called)]
    n = _settles_at([0.0] * 40, 0.02)
    assert outcome.sequential.types[0].look.settled_at == n == len(called)


def test_what_a_run_against_a_baseline_cannot_use_is_refused(
        tmp_path: Path, tracker: Tracker) -> None:
    entries = {f"e{i}": entry("functional", input=f"q{i}") for i in range(4)}
    baseline = _evaluate(tmp_path, tracker, RecordingComponent(), test_type="functional",
                         entries=entries)
    elsewhere = {f"other{i}": entry("functional", input=f"q{i}") for i in range(4)}
    with pytest.raises(ConfigError, match="the baseline has no item of this run's selection"):
        _evaluate(tmp_path / "b", tracker, RecordingComponent(), Against(baseline.run_id),
                  entries=elsewhere)
    with pytest.raises(ConfigError, match="--margin names bias, which this run and the "
                                          "baseline do not share"):
        _evaluate(tmp_path, tracker, RecordingComponent(),
                  Against(baseline.run_id, Margins(0.05, {"bias": 0.1})), entries=entries)
    with pytest.raises(ConfigError, match="--against cannot be used with LABELS_PATH or "
                                          "LABEL_SAMPLE"):
        _evaluate(tmp_path, tracker, RecordingComponent(), Against(baseline.run_id),
                  entries=entries, LABEL_SAMPLE=2)
    # no threshold is checked against a baseline: an F1 threshold is no reason to refuse
    outcome = _evaluate(tmp_path, tracker, RecordingComponent(), Against(baseline.run_id),
                        test_type="functional", entries=entries, EVAL_MIN_F1=0.5)
    assert outcome.sequential is not None and outcome.sequential.against == baseline.run_id


@pytest.mark.parametrize(("options", "message"), [
    (("--type=all", "--margin", "0.02"), "--margin is the margin of a comparison: give "
                                         "--against RUN_ID too"),
    (("--type=all", "--against", "abcd1234", "--replicates"), "cannot be used with "
                                                              "--replicates, --calibrate"),
    (("--resume", "abcd1234", "--against", "abcd1234"), "and a sequential run's "
                                                         "--sequential and --against"),
    (("--type=all", "--against", "abcd1234", "--margin", "huge"), "--margin 'huge': must read "
                                                                  "MARGIN or TYPE=MARGIN"),
])
def test_bad_against_options_are_usage_errors(
        tmp_path: Path, options: tuple[str, ...], message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write_dataset(tmp_path / "ds", {"e": entry("functional")})
    script = {"EXPERIMENT_NAME": "against/refused", "DATASET_PATH": str(dataset),
              "EVAL_MIN_ACCURACY": 0.5, "TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db"}
    assert eval_script(script, RecordingComponent(), *options) == ExitStatus.USAGE
    assert message in " ".join(capsys.readouterr().err.split())


def test_the_default_question_is_the_population_and_a_coarse_type_is_warned_of(
        tmp_path: Path, tracker: Tracker, caplog: pytest.LogCaptureFixture) -> None:
    # six items, one flipped between two runs: on the six items themselves the gap is exactly
    # -1/6, worse than a margin of 0.05; as a sample of a population it is not settled
    entries = {f"e{i}": entry("functional", input=f"q{i}") for i in range(6)}
    baseline = _evaluate(tmp_path, tracker, RecordingComponent(), test_type="functional",
                         entries=entries)
    flipped = RecordingComponent({"e3": "x"})
    outcome = _evaluate(tmp_path, tracker, flipped, Against(baseline.run_id),
                        test_type="functional", entries=entries)
    (settled,) = outcome.sequential.types
    assert outcome.sequential.question == "population"
    assert (settled.verdict, settled.look.n, outcome.verdict) == ("INCONCLUSIVE", 6,
                                                                   "INCONCLUSIVE")
    assert ("functional has 6 items against a margin of 0.05: one item that flips moves its "
            "gap by 0.167, more than the margin") in caplog.text
    exact = _evaluate(tmp_path, tracker, flipped, Against(baseline.run_id),
                      test_type="functional", entries=entries, question="dataset")
    assert str(exact.sequential.types[0].look.verdict) == "worse by more than the margin"
    assert exact.sequential.types[0].look.estimate == pytest.approx(-1 / 6)
