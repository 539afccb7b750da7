"""Command lines: ``eval.py`` (via :func:`run_eval_script`) and the ``evalkit`` command.

Both are thin: they parse arguments, call the library, print, and map errors to exit statuses.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evalkit._config import EvalConfig
from evalkit._dataset import TEST_TYPES, lint_dataset
from evalkit._errors import EvalkitError, ExitStatus
from evalkit._evaluation import EvaluationOutcome, evaluate
from evalkit._loop import Component
from evalkit._plan import ALL_TYPES, Selection

EXIT_STATUSES = """\
exit status:
  0    every threshold of the run was met
  1    a metric is under its threshold (the reports say which)
  2    usage or configuration error (bad option, missing or misspelt constant in eval.py)
  3    the golden dataset is invalid (every violation is listed; nothing was run)
  4    runtime failure (MLflow unreachable, unexpected error)
  130  interrupted (SIGINT/SIGTERM): the MLflow run is marked KILLED, outputs are kept
"""


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
    parser.add_argument("--type", required=True, metavar="TYPE", dest="test_type",
                        choices=[ALL_TYPES, *TEST_TYPES],
                        help="test type to evaluate, or 'all': " + ", ".join(TEST_TYPES))
    parser.add_argument("--groups", metavar="A,B",
                        help="only entries whose 'group' is one of these (exact match; entries "
                             "without a group are excluded)")
    parser.add_argument("--human-review", action="store_true",
                        help="only entries with human_review: true; writes "
                             "report-human-review.md")
    args = parser.parse_args(argv)
    _configure_logging()
    return _guarded(lambda: _run(constants, component, script, args))


def _run(constants: Mapping[str, Any], component: Component, script: str,
         args: argparse.Namespace) -> int:
    config = EvalConfig.from_constants(constants, script)
    selection = Selection.parse(args.test_type, args.groups, args.human_review)
    outcome = evaluate(config, component, selection)
    _print_outcome(outcome)
    return ExitStatus.OK if outcome.passed else ExitStatus.THRESHOLD_FAILED


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


def main(argv: Sequence[str] | None = None) -> int:
    """The ``evalkit`` command."""
    parser = argparse.ArgumentParser(
        prog="evalkit", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="evalkit: lint golden datasets and re-render reports from MLflow. "
                    "Evaluations themselves run from an eval script: python eval.py --type=all.",
        epilog=EXIT_STATUSES)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    lint = commands.add_parser("lint", help="check datasets; list every violation")
    lint.add_argument("datasets", nargs="+", metavar="DATASET", help="dataset folder(s)")
    report = commands.add_parser(
        "report", help="re-render a past run's reports from MLflow alone",
        description="Render the reports of RUN_ID from what its MLflow run holds "
                    "(MLFLOW_TRACKING_URI, else the local store) and write them to --output.")
    report.add_argument("run_id", metavar="RUN_ID")
    report.add_argument("--output", type=Path, default=Path("reports"),
                        help="folder to write report-<type>.md to (default: reports)")
    args = parser.parse_args(argv)
    _configure_logging()
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "lint": _lint, "report": _report}
    return _guarded(lambda: handlers[args.command](args))


def _lint(args: argparse.Namespace) -> int:
    status = ExitStatus.OK
    for path in args.datasets:
        report = lint_dataset(path)
        print(report.render(), file=sys.stdout if report.ok else sys.stderr)
        if not report.ok:
            status = ExitStatus.DATASET_INVALID
    return status


def _report(args: argparse.Namespace) -> int:
    from evalkit._reports import render_reports
    from evalkit._tracking import Tracker

    reports = render_reports(Tracker().fetch(args.run_id))
    args.output.mkdir(parents=True, exist_ok=True)
    for name, text in reports.items():
        (args.output / name).write_text(text, encoding="utf-8")
        print(f"report: {args.output / name}")
    return ExitStatus.OK


def _guarded(action: Callable[[], int]) -> int:
    try:
        return action()
    except EvalkitError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_status
    except Exception:
        traceback.print_exc()
        return ExitStatus.RUNTIME_FAILURE


def _configure_logging() -> None:
    # This process is ours: keep third-party progress bars out of evalkit's plain output.
    for name, value in (("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false"),
                        ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
                        ("TRANSFORMERS_VERBOSITY", "error")):
        os.environ.setdefault(name, value)
    logger = logging.getLogger("evalkit")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("evalkit: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
