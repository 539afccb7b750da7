"""REPEAT_COUNT calibration and `evalkit plan`: the measurements in memory; the command on a
real local store is tests/e2e/test_plan_command.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalkit import (
    Call,
    ConfigError,
    Entry,
    EvalConfig,
    RunContext,
    RunInterrupted,
    Selection,
    TrackingError,
    evaluate,
)
from evalkit.calls import Stop
from evalkit.evaluation import evaluate_calibration, evaluate_replicates, resume
from evalkit.reports import render_reports
from evalkit.review import PlanOptions, build_plan, record_plan
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset
from tests.support.commands import evalkit_command

STABLE = [f"stable-{i}" for i in range(7)]
LATE = [f"late-{i}" for i in range(3)]


def late_changer(entry: Entry, call: Call) -> Any:
    """Stable entries always answer "a"; late ones change their answer from the fourth call."""
    return "b" if entry.id.startswith("late") and call.repeat >= 3 else "a"


def calibration_config(tmp_path: Path, **extra: Any) -> EvalConfig:
    dataset = write_dataset(tmp_path / "ds", {
        **{i: entry("repeatability") for i in STABLE + LATE},
        "other": entry("functional")})
    return EvalConfig.from_constants({
        "EXPERIMENT_NAME": "plan/calibration", "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.5, "REPEAT_COUNT": 3,
        "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5, "CALIBRATION_REPEAT_COUNT": 6, **extra},
        "test_eval.py")


def test_calibration_rescores_prefixes_without_new_calls(tmp_path: Path,
                                                         tracker: Tracker) -> None:
    calls: list[tuple[str, int]] = []

    def component(entry: Entry, call: Call) -> Any:
        calls.append((entry.id, call.repeat))
        return late_changer(entry, call)

    outcome = evaluate_calibration(calibration_config(tmp_path), component, Selection("all"),
                                   RunContext(tracker=tracker,
                                              runs_dir=tmp_path / ".evalkit" / "runs"))
    assert sorted(calls) == sorted((i, r) for i in STABLE + LATE for r in range(6))
    calibration = outcome.calibration
    assert [(p.k, p.passed) for p in calibration.points] == [
        (2, 10), (3, 10), (4, 7), (5, 7), (6, 7)]
    assert calibration.recommended == 4
    # k = N is the run's own repeatability accuracy.
    (metrics,) = outcome.run.metrics
    assert metrics.accuracy == calibration.points[-1].rate == 0.7

    report_path, chart_path = outcome.reports
    report = report_path.read_text()
    assert "**Recommended REPEAT_COUNT:** 4" in report
    assert "- **REPEAT_COUNT in the script:** 3" in report
    assert 'x-axis "Repeat count k" [2, 3, 4, 5, 6]' in report
    assert "line [1.000, 1.000, 0.700, 0.700, 0.700]" in report
    chart = chart_path.read_text(encoding="utf-8")
    assert chart.startswith("<svg ") and "recommended k = 4" in chart
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [
        "calibration.svg", "report-calibration.md"]  # the routine report is left alone
    artifacts = set(tracker.backend.journals[outcome.run.run_id].artifacts)
    assert {p for p in artifacts if p.startswith(("reports/", "calibration/"))} == {
        "reports/report-calibration.md", "reports/calibration.svg",
        "reports/report-repeatability.md", "reports/convergence-repeatability.svg",
        "reports/summary.md", "calibration/calibration.json"}
    assert tracker.backend.artifact(outcome.run.run_id, "reports/calibration.svg") == \
        chart.encode()
    record = tracker.reader.fetch(outcome.run.run_id)
    assert record.tags["mode"] == "calibration" and record.metrics["repeat_count"] == 6
    assert render_reports(record)["report-calibration.md"] == report


def test_calibration_counts_an_error_as_a_failure_from_its_repeat(tmp_path: Path,
                                                                  tracker: Tracker) -> None:
    def fails_on_fifth(entry: Entry, call: Call) -> Any:
        if entry.id == "stable-0" and call.repeat == 4:
            raise TimeoutError("provider timeout")
        return late_changer(entry, call)

    outcome = evaluate_calibration(calibration_config(tmp_path), fails_on_fifth, Selection("all"),
                                   RunContext(tracker=tracker,
                                              runs_dir=tmp_path / ".evalkit" / "runs"))
    assert [p.passed for p in outcome.calibration.points] == [10, 10, 7, 6, 6]


def seeded(entry: Entry, call: Call) -> Any:
    """Flaky items answer by the replicate's seed; the rest are fixed."""
    if entry.id.startswith("flaky"):
        return "a" if (call.seed or 0) % 3 != int(entry.id[-1]) % 3 else "wrong"
    return "a"


def test_a_stopped_calibration_says_to_run_it_again_not_to_resume_it(
        tmp_path: Path, tracker: Tracker) -> None:
    stop = Stop()

    def component(entry: Entry, call: Call) -> Any:
        stop.request()
        return "a"

    with pytest.raises(RunInterrupted) as stopped:
        evaluate_calibration(calibration_config(tmp_path, MAX_CONCURRENCY=1), component,
                             Selection("all"),
                             RunContext(tracker=tracker, runs_dir=tmp_path / "runs", stop=stop))
    assert "--resume" not in str(stopped.value)
    assert str(stopped.value).endswith("a calibration run is not resumed: run --calibrate again")


def test_plan_measures_p_from_repeats_and_replicates(tmp_path: Path,
                                                     tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {
        **{f"r{i}": entry("repeatability") for i in range(4)},
        **{f"fixed{i}": entry("functional") for i in range(6)},
        **{f"flaky{i}": entry("functional") for i in range(3)}})
    base = {"EXPERIMENT_NAME": "plan/p", "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0,
            "REPEAT_COUNT": 5, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0, "REPLICATES": 4}
    runs_dir = tmp_path / ".evalkit" / "runs"

    def answers(entry: Entry, call: Call) -> Any:
        # r0: 5 x "a"; r1: 4 x "a", 1 x "b"; r2: a a b b c (minority 3); r3: an error.
        if entry.id == "r3":
            raise ValueError("broken")
        pattern = {"r0": "aaaaa", "r1": "aaaab", "r2": "aabbc"}.get(entry.id)
        return pattern[call.repeat] if pattern else seeded(entry, call)

    evaluate(EvalConfig.from_constants(base, "eval.py"), answers, Selection("repeatability"),
             RunContext(tracker=tracker, runs_dir=runs_dir))
    series = evaluate_replicates(EvalConfig.from_constants(base, "eval.py"), seeded,
                                 Selection("functional"),
                                 RunContext(tracker=tracker, runs_dir=runs_dir))
    plan = build_plan(tracker, "plan/p", PlanOptions(target_error=0.01))
    repeats, replicates = plan.measured
    assert (repeats.disagreement.minority, repeats.disagreement.observations) == (4, 15)
    seeds = [int(tracker.reader.stored(c.run_id).tags["seed"]) for c in series.replicates]
    minority = 0
    for i in range(3):
        right = sum(s % 3 != i for s in seeds)
        minority += min(right, 4 - right)
    assert (replicates.disagreement.minority, replicates.disagreement.observations) == (
        minority, 9 * 4)
    assert repeats.table.recommended["majority (ties wrong)"] is not None
    assert "functional" in plan.allocations

    run_id, path, report = record_plan(tracker, plan, tmp_path / "reports",
                                       {"target_error": "0.01"})
    assert path.read_text() == report
    assert f"| repeats | {repeats.run_id} | 0.2667 [" in report
    assert render_reports(tracker.reader.fetch(run_id)) == {"report-planning.md": report}
    planning = tracker.reader.stored(run_id)
    assert planning.tags["mode"] == "planning"
    # beside the experiment, out of its run lists; its runs untouched
    assert tracker.backend.experiment_name(planning.experiment_id) == "plan/p/planning"
    assert run_id not in [r.run_id for r in tracker.reader.runs("plan/p")]
    assert planning.run_name.startswith("plan ")


def test_a_run_someone_else_logged_in_the_experiment_is_left_out(
        tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {f"r{i}": entry("repeatability") for i in range(3)})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "plan/shared", "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0, "REPEAT_COUNT": 3,
        "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0}, "eval.py")
    ours = evaluate(config, lambda item, call: "ab"[call.repeat % 2], Selection("repeatability"),
                    RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    with pytest.raises(RunInterrupted), tracker.run(  # newest, and unfinished: resumable?
            "plan/shared", "a-training-run", {}, {"mode": "training"}) as theirs:
        raise RunInterrupted("a user's own run, logged by their code")

    assert [r.run_id for r in tracker.reader.evaluation_runs("plan/shared")] == [ours.run_id]
    [repeats] = build_plan(tracker, "plan/shared").measured
    assert repeats.run_id == ours.run_id
    with pytest.raises(TrackingError, match=f"run {theirs.id} is tagged mode='training': it "
                                            "was not made by evalkit"):
        tracker.reader.fetch(theirs.id)
    with pytest.raises(ConfigError, match=f"run {theirs.id} was not made by evalkit"):
        resume(config, lambda item, call: "a", theirs.id,
               RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))


def test_contrast_between_two_systems_over_replicates(tmp_path: Path,
                                                      tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {f"q{i}": entry("functional") for i in range(8)})

    def system(skill: int) -> Any:
        def answer(entry: Entry, call: Call) -> Any:
            return "a" if (int(entry.id[1:]) + (call.seed or 0)) % 8 < skill else "wrong"
        return answer

    for name, skill in (("plan/sys-a", 6), ("plan/sys-b", 3)):
        config = EvalConfig.from_constants({
            "EXPERIMENT_NAME": name, "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(tmp_path / name), "EVAL_MIN_ACCURACY": 0.0, "REPLICATES": 3},
            "eval.py")
        evaluate_replicates(config, system(skill), Selection("all"),
                            RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    plan = build_plan(tracker, "plan/sys-a", PlanOptions(against="plan/sys-b", half_width=0.05))
    (contrast,) = plan.contrasts
    # Each system gets exactly `skill` of 8 items right in every replicate: A_r = (6-3)/8.
    assert contrast.differences == pytest.approx((0.375, 0.375, 0.375))
    assert contrast.t_interval.estimate == pytest.approx(0.375)
    assert contrast.items == 8 and contrast.t_interval.n == 3
    assert contrast.replicates_needed == 2  # zero SD: the floor of two
    assert contrast.whole_replicate_variance == pytest.approx(0.0)
    assert contrast.nested_variance > 0  # the items inside each row still vary
    # Resampling the items too widens the interval: the items differ from each other.
    population = contrast.population_interval
    assert population is not None and population.estimate == pytest.approx(0.375)
    assert population.high - population.low > contrast.t_interval.high - contrast.t_interval.low
    _, _, report = record_plan(tracker, plan, tmp_path / "reports", {})
    assert "t interval (these items)" in report
    assert "not on the population the items were drawn from" in report
    assert "(covers ≈ 0.75, not 0.95)" in report  # the bootstrap at 3 replicates


def test_plan_reads_a_series_named_by_its_id_and_refuses_a_series_against_itself(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write_dataset(tmp_path / "ds", {f"q{i}": entry("functional") for i in range(6)})
    series = {}
    for name, right in (("plan/ids-a", 5), ("plan/ids-b", 2)):
        config = EvalConfig.from_constants({
            "EXPERIMENT_NAME": name, "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(tmp_path / name), "EVAL_MIN_ACCURACY": 0.0, "REPLICATES": 2},
            "eval.py")
        series[name] = [evaluate_replicates(
            config, lambda e, c, right=right: "a" if int(e.id[1:]) < right else "x",
            Selection("all"), RunContext(tracker=tracker, runs_dir=tmp_path / "runs")
        ).parent_run_id for _ in range(2)]
    older_a, latest_a = series["plan/ids-a"]
    # A run id prefix reads that series, not the experiment's latest; B by prefix too.
    plan = build_plan(tracker, older_a[:8], PlanOptions(against=series["plan/ids-b"][0][:6]))
    assert plan.experiment == "plan/ids-a" and plan.allocation_run == older_a
    (contrast,) = plan.contrasts
    assert contrast.differences == pytest.approx((0.5, 0.5))  # (5 - 2) / 6 in each replicate
    assert build_plan(tracker, "plan/ids-a").allocation_run == latest_a

    monkeypatch.setattr("evalkit.cli._main.Tracker", lambda *args, **kwargs: tracker)
    for a, b in ((latest_a[:8], "plan/ids-a"), (latest_a, latest_a[:5])):
        capsys.readouterr()
        assert evalkit_command("plan", a, "--against", b, "--output", tmp_path / "r") == 2
        err = capsys.readouterr().err
        assert err == (f"error: {a!r} and --against {b!r} are the same replicate series "
                       f"({latest_a}): a system contrasted with itself differs by nothing; "
                       "name the other system's series\n")
    assert evalkit_command("plan", older_a[:8], "--against", latest_a[:8],
                           "--output", tmp_path / "r") == 0  # two series of one system
    assert "mlflow: planning run " in capsys.readouterr().out
    capsys.readouterr()
    assert evalkit_command("plan", "plan/ids-a", "--against", "ffff0000") == 2
    assert "no run at memory: has an id starting with 'ffff0000'" in capsys.readouterr().err


def test_plan_prints_a_summary_per_type_and_never_buys_replicates_for_calls_that_never_varied(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """smoke: every item the same in every replicate (half right, half wrong); functional:
    flaky items that change with the seed."""
    dataset = write_dataset(tmp_path / "ds", {
        **{f"s{i}": entry("smoke") for i in range(6)},
        **{f"flaky{i}": entry("functional") for i in range(6)},
        **{f"r{i}": entry("repeatability") for i in range(3)}})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "plan/quiet", "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0, "REPLICATES": 4,
        "REPEAT_COUNT": 3, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0}, "eval.py")

    def component(entry: Entry, call: Call) -> Any:
        if entry.id.startswith("s"):
            return "a" if int(entry.id[1:]) % 2 else "wrong"
        return seeded(entry, call)

    evaluate_replicates(config, component, Selection("all"),
                        RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    plan = build_plan(tracker, "plan/quiet")
    smoke, functional = plan.allocations["smoke"], plan.allocations["functional"]
    assert smoke.tau2 == 0 and smoke.sigma2 > 0 and smoke.buy == "items"
    assert functional.tau2 > 0
    # 6 items x 3 further replicates: zero changes in 18 chances bound the rate by 1 - 0.05^(1/18)
    assert smoke.chances == 18
    assert smoke.unseen_rate_bound == pytest.approx(1 - 0.05 ** (1 / 18))
    advice = smoke.advice()
    assert advice.startswith("no run-to-run variance seen: each of the 6 items scored the same "
                             "in all 4 replicates")
    assert "replicates" not in advice.split("; ")[1]
    assert "This does not show the component is deterministic: a per-call change rate up to " \
           f"{1 - 0.05 ** (1 / 18):.3f}" in advice

    monkeypatch.setattr("evalkit.cli._main.Tracker", lambda *args, **kwargs: tracker)
    capsys.readouterr()
    assert evalkit_command("plan", "plan/quiet", "--output", tmp_path / "r") == 0
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    assert len(lines) <= 30
    assert max(len(line) for line in lines if not line.startswith(("wrote:", "mlflow:"))) <= 100
    report = (tmp_path / "r" / "report-planning.md").read_text()
    assert len(report.splitlines()) > 2 * len(lines)  # the tables stay in the report
    assert "| N |" in report and "| N |" not in printed
    by_type = {line.split(":")[0].strip(): line for line in lines if line.startswith("  ")}
    assert by_type["smoke"] == "  smoke: buy items — no run-to-run variance seen: each of the 6 " \
                               "items scored the same in all 4"
    assert by_type["functional"].startswith(f"  functional: buy {functional.buy} — optimum ")
    assert "  replicates (run " in printed
    assert f"wrote: {tmp_path / 'r' / 'report-planning.md'} (every table; --details prints " \
           "it)" in printed
    assert evalkit_command("plan", "plan/quiet", "--output", tmp_path / "r", "--details") == 0
    detailed = capsys.readouterr().out
    report = (tmp_path / "r" / "report-planning.md").read_text()  # the second planning run's
    assert detailed.startswith(report)
    assert f"- smoke: {advice}." in report
