"""The command line of an eval script: ``python eval.py --type=... [--groups=...]``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalkit._errors import ExitStatus
from evalkit.cli._common import EXIT_STATUSES, configure_logging, guarded
from evalkit.config import EvalConfig
from evalkit.dataset import TEST_TYPES
from evalkit.run import (
    ALL_TYPES,
    Component,
    EvaluationOutcome,
    ReplicatesOutcome,
    Selection,
    evaluate,
    evaluate_calibration,
    evaluate_replicates,
    resume,
)


def run_eval_script(constants: Mapping[str, Any], component: Component,
                    argv: Sequence[str] | None = None, script: str | None = None) -> int:
    """The command line of an eval script: ``python eval.py --type=... [--groups=...]``.

    ``constants`` is the script's ``globals()``; returns the process exit status.
    """
    script = script or Path(sys.argv[0]).name
    parser = argparse.ArgumentParser(
        prog=script, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Evaluate the component against the golden dataset named in this script, "
                    "log the run to MLflow and write reports/report-<type>.md. Scoring "
                    "parameters are constants in this script, not options.",
        epilog=EXIT_STATUSES)
    parser.add_argument("--type", metavar="TYPE", dest="test_type",
                        choices=[ALL_TYPES, *TEST_TYPES],
                        help="test type to evaluate, or 'all' (required unless --resume): "
                             + ", ".join(TEST_TYPES))
    parser.add_argument("--groups", metavar="A,B",
                        help="only entries whose 'group' is one of these (exact match; entries "
                             "without a group are excluded)")
    parser.add_argument("--human-review", action="store_true",
                        help="only entries with human_review: true; writes "
                             "report-human-review.md")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--replicates", action="store_true",
                       help="run the selection REPLICATES times (a constant, default 2) with "
                            "per-replicate seeds, as nested MLflow runs; writes "
                            "report-stability.md, stability.json and replicates.lock.json")
    modes.add_argument("--calibrate", action="store_true",
                       help="calibrate REPEAT_COUNT: run the repeatability entries "
                            "CALIBRATION_REPEAT_COUNT times (a constant, default 20), re-score "
                            "every prefix k = 2..N without new calls; writes "
                            "report-calibration.md and calibration.png")
    modes.add_argument("--resume", metavar="RUN_ID",
                       help="continue an interrupted run: its recorded calls are reused, only "
                            "the missing ones are made (selection and constants as the run's)")
    args = parser.parse_args(argv)
    if args.test_type is None and args.resume is None:
        parser.error("the following arguments are required: --type (or --resume RUN_ID)")
    if args.resume is not None and (args.test_type or args.groups or args.human_review):
        parser.error("--resume takes the run's own --type, --groups and --human-review")
    configure_logging()
    status = guarded(lambda: _run(constants, component, script, args))
    if status == ExitStatus.INTERRUPTED:
        _end_now(status)
    return status


def _end_now(status: int) -> None:
    """End the process at once, as an interrupt promises: the run is closed and its outputs
    are on disk, while a normal exit would first garbage-collect every module (seconds for
    MLflow's) and wait for nothing useful; a call thread that never returns is abandoned."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _run(constants: Mapping[str, Any], component: Component, script: str,
         args: argparse.Namespace) -> int:
    config = EvalConfig.from_constants(constants, script)
    if args.resume is not None:
        outcome = resume(config, component, args.resume)
        _print_outcome(outcome)
        return ExitStatus.OK if outcome.passed else ExitStatus.THRESHOLD_FAILED
    selection = Selection.parse(args.test_type, args.groups, args.human_review)
    if args.replicates:
        series = evaluate_replicates(config, component, selection)
        _print_replicates(series)
        return ExitStatus.OK if series.passed else ExitStatus.THRESHOLD_FAILED
    if args.calibrate:
        calibrated = evaluate_calibration(config, component, selection)
        for point in calibrated.calibration.points:
            print(f"k={point.k:<3} pass rate {point.rate:.3f} ({point.passed}/{point.entries})")
        print(f"recommended REPEAT_COUNT: {calibrated.calibration.recommended}")
        for path in calibrated.reports:
            print(f"wrote: {path}")
        print(f"mlflow: calibration run {calibrated.run.run_id} in "
              f"{calibrated.run.experiment_name} ({calibrated.run.tracking_uri})")
        return ExitStatus.OK
    outcome = evaluate(config, component, selection)
    _print_outcome(outcome)
    return ExitStatus.OK if outcome.passed else ExitStatus.THRESHOLD_FAILED


def _print_replicates(series: ReplicatesOutcome) -> None:
    for s in series.stability:
        floor = "—" if s.noise_floor is None else f"{s.noise_floor:.2%}"
        print(f"{s.metric} mean {s.mean:.3f} sd {'—' if s.sd is None else f'{s.sd:.4f}'} "
              f"spread {s.spread:.3f} unstable items {s.unstable_items}/{s.repeated_items} "
              f"noise floor {floor}")
    for path in (*series.reports, series.stability_path, series.lock_path):
        print(f"wrote: {path}")
    print(f"mlflow: parent run {series.parent_run_id} with {len(series.replicates)} "
          f"replicate runs in {series.experiment_name} ({series.tracking_uri})")
    for failure in series.failures:
        print(f"threshold missed: {failure}", file=sys.stderr)


def _print_outcome(outcome: EvaluationOutcome) -> None:
    for m in outcome.metrics:
        if m.samples:
            figure = (f"{m.accuracy:.3f} [{m.ci_low:.3f}, {m.ci_high:.3f}] "
                      f"F1 {m.f1:.3f} n={m.samples}")
        else:
            figure = "no samples"
        print(f"{'PASS' if m.passed else 'FAIL'}  {m.test_type}_accuracy {figure}")
    for path in outcome.reports:
        print(f"report: {path}")
    print(f"mlflow: run {outcome.run_id} in {outcome.experiment_name} ({outcome.tracking_uri})")
    for failure in outcome.failures:
        print(f"threshold missed: {failure}", file=sys.stderr)
