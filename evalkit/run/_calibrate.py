"""Calibration mode: run the repeatability entries once at ``CALIBRATION_REPEAT_COUNT``, then
re-score every prefix of the recorded outputs (see :mod:`evalkit.stats._calibration`).

The calibration run is an ordinary MLflow run tagged ``mode=calibration``; its per-type report
stays in MLflow so that the routine ``report-repeatability.md`` is not overwritten. Locally it
writes ``report-calibration.md`` and ``calibration.png``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.config import EvalConfig
from evalkit.records import CALIBRATION_ARTIFACT, REPORTS_ARTIFACT_DIR
from evalkit.reports import CALIBRATION_REPORT, CHART_FILE, plot_calibration, render_reports
from evalkit.run._call import CallRecord, Component
from evalkit.run._evaluation import RUNS_DIR, EvaluationOutcome, run_prepared
from evalkit.run._prepare import RunRole, prepare
from evalkit.run._raw import read_raw_results
from evalkit.run._selection import Selection
from evalkit.scorers import OutputGroup, Scorer
from evalkit.stats import Calibration, CalibrationPoint
from evalkit.tracking import Tracker


@dataclass(frozen=True)
class CalibrationOutcome:
    run: EvaluationOutcome
    calibration: Calibration
    reports: tuple[Path, ...]


def evaluate_calibration(config: EvalConfig, component: Component, selection: Selection, *,
                         tracker: Tracker | None = None,
                         runs_dir: Path = RUNS_DIR) -> CalibrationOutcome:
    """One run of the repeatability entries at ``CALIBRATION_REPEAT_COUNT``, then the prefix
    re-scoring, logged to the same MLflow run with ``report-calibration.md`` and its chart."""
    calibrated = dataclasses.replace(config, repeat_count=config.calibration_repeat_count)
    # Only the repeatability entries, at the larger count; --groups and --human-review apply.
    prepared = prepare(calibrated, dataclasses.replace(selection, test_type="repeatability"))
    tracker = tracker or Tracker()
    outcome = run_prepared(prepared, component, tracker, runs_dir, RunRole(
        tags={"mode": "calibration"}, name_suffix="-calibration", local_reports=False))
    recorded: dict[str, list[CallRecord]] = {}
    for call in read_raw_results(outcome.raw_results).records:
        recorded.setdefault(call.entry_id, []).append(call)
    calibration = prefix_pass_rates(
        [(item.entry.input, sorted(recorded[item.entry.id], key=lambda c: c.repeat))
         for item in prepared.plan.items],
        prepared.scorers.by_type["repeatability"])
    tracker.log_text(outcome.run_id, json.dumps(calibration.to_json(), indent=1) + "\n",
                     CALIBRATION_ARTIFACT)
    report = render_reports(tracker.fetch(outcome.run_id))[CALIBRATION_REPORT]
    config.reports_dir.mkdir(parents=True, exist_ok=True)
    paths = (config.reports_dir / CALIBRATION_REPORT, config.reports_dir / CHART_FILE)
    paths[0].write_text(report, encoding="utf-8")
    plot_calibration(calibration, paths[1])
    tracker.log_text(outcome.run_id, report, f"{REPORTS_ARTIFACT_DIR}/{CALIBRATION_REPORT}")
    tracker.log_file(outcome.run_id, paths[1], REPORTS_ARTIFACT_DIR)
    return CalibrationOutcome(outcome, calibration, paths)


def prefix_pass_rates(entries: Sequence[tuple[Any, Sequence[CallRecord]]],
                      scorer: Scorer) -> Calibration:
    """Score the first k recorded calls of every entry (its input, its calls in order), for
    k = 2..N, with no new calls.

    An entry whose first k calls include an error fails at k, as it would in a run."""
    counts = {len(calls) for _, calls in entries}
    if len(counts) != 1 or min(counts) < 2:
        raise ValueError("calibration needs entries with the same number (>= 2) of calls")
    (repeat_count,) = counts
    points = []
    for k in range(2, repeat_count + 1):
        clean = [(entry_input, calls[:k]) for entry_input, calls in entries
                 if all(c.error is None for c in calls[:k])]
        verdicts = scorer.among_outputs([
            OutputGroup((entry_input,) * k, tuple(c.output for c in calls))
            for entry_input, calls in clean])
        points.append(CalibrationPoint(k, sum(v.passed and v.error is None for v in verdicts),
                                       len(entries)))
    return Calibration(repeat_count, tuple(points))
