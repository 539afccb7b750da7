"""Calibration mode: run the repeatability entries once at ``CALIBRATION_REPEAT_COUNT``, then
re-score every prefix of the recorded outputs (see :mod:`evalkit.stats._calibration`).

The calibration run is an ordinary MLflow run tagged ``mode=calibration``; its per-type report
stays in MLflow so that the routine ``report-repeatability.md`` is not overwritten. Locally it
writes ``report-calibration.md`` and ``calibration.svg``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.calls import Component, Selection
from evalkit.config import EvalConfig
from evalkit.dataset import REPEATABILITY
from evalkit.evaluation._context import RunContext
from evalkit.evaluation._evaluate import new_run, warn_unsynced
from evalkit.evaluation._evaluation import evaluation_in
from evalkit.evaluation._outcome import EvaluationOutcome
from evalkit.evaluation._prepare import RunRole, prepare, refuse_sequential_mode
from evalkit.records import CallRecord, Mode, names
from evalkit.scorers import OutputGroup, Scorer
from evalkit.stats import Calibration, CalibrationPoint


@dataclass(frozen=True)
class CalibrationOutcome:
    run: EvaluationOutcome
    calibration: Calibration
    reports: tuple[Path, ...]


def evaluate_calibration(config: EvalConfig, component: Component, selection: Selection,
                         context: RunContext | None = None) -> CalibrationOutcome:
    """One run of the repeatability entries at ``CALIBRATION_REPEAT_COUNT``, then the prefix
    re-scoring, logged to the same MLflow run with ``report-calibration.md`` and its chart."""
    context = context or RunContext()
    refuse_sequential_mode(config, selection, "--calibrate")
    calibrated = dataclasses.replace(config, repeat_count=config.calibration_repeat_count)
    # Only the repeatability entries, at the larger count; --groups and --human-review apply.
    prepared = prepare(calibrated, dataclasses.replace(selection, test_type=REPEATABILITY))
    role = RunRole(tags={names.MODE_TAG: Mode.CALIBRATION}, name_prefix="calib ",
                   local_reports=False,
                   rerun="a calibration run is not resumed: run --calibrate again")
    warn_unsynced(context.store)
    opening = new_run(context, prepared, prepared.run_name(role.name_prefix), prepared.params(),
                      {**prepared.tags(), **role.tags})
    with evaluation_in(opening, prepared, component, context, role) as evaluation:
        with evaluation.stops_reported():
            outputs = evaluation.make_calls()
            evaluation.score()
            calibration = prefix_pass_rates(
                [(o.entry.input, o.calls) for o in outputs],
                prepared.scorers.by_type[REPEATABILITY])
            evaluation.run.log_json(names.CALIBRATION_ARTIFACT, calibration.to_json())
            outcome = evaluation.publish(local=[names.CALIBRATION_REPORT, names.CALIBRATION_CHART])
        chart = config.reports_dir / names.CALIBRATION_CHART
    return CalibrationOutcome(outcome, calibration, (*outcome.reports, chart))


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
