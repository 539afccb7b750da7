"""The command line of an eval script: ``python eval.py --type=... [--groups=...]``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalkit.calls import ALL_TYPES, Component, Selection, Stop
from evalkit.cli._common import guarded, process_configured
from evalkit.cli._display import ProgressDisplay
from evalkit.cli._executor import add_executor_options, executor_for
from evalkit.cli._exit import EXIT_STATUSES, ExitStatus
from evalkit.cli._job_summary import add_markdown_options, write_markdown
from evalkit.cli._outputs import (
    RunSummary,
    sequential_lines,
    write_estimate_json,
    write_json,
    write_junit,
)
from evalkit.cli._parser import Parser
from evalkit.cli._signals import end_now, stopping_on_signals
from evalkit.config import DEFAULT_SEQUENTIAL_QUESTION, SEQUENTIAL_QUESTIONS, EvalConfig
from evalkit.dataset import TEST_TYPES
from evalkit.evaluation import (
    DEFAULT_MARGIN,
    Against,
    EvaluationOutcome,
    ReplicatesOutcome,
    RunContext,
    check_budget,
    estimate_run,
    evaluate,
    evaluate_calibration,
    evaluate_replicates,
    rescore,
    resume,
)
from evalkit.reports import EVAL_COMMENT_MARKER, run_markdown
from evalkit.review import Margins
from evalkit.tracking import shown_uri


def run_eval_script(constants: Mapping[str, Any], component: Component,
                    argv: Sequence[str] | None = None, script: str | None = None) -> int:
    """The command line of an eval script: ``python eval.py --type=... [--groups=...]``.

    ``constants`` is the script's ``globals()``; ``script`` is the path the script was
    invoked by (default: ``sys.argv[0]``), named in messages, in the run's source tag and in
    the command that resumes an interrupted run. Returns the process exit status.
    """
    script = script or sys.argv[0]
    parser = Parser(
        prog=script, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Evaluate the component against the golden dataset named in this script, "
                    "log the run to MLflow, write reports/report-<type>.md and "
                    "reports/summary.md, and end with a verdict line and the run's URL. Scoring "
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
    parser.add_argument("--sequential", nargs="?", metavar="QUESTION",
                        const=DEFAULT_SEQUENTIAL_QUESTION, choices=list(SEQUENTIAL_QUESTIONS),
                        help="call the entries in a seeded random order and stop once every "
                             "type's verdict is settled at SEQUENTIAL_CONFIDENCE (default "
                             "0.95); QUESTION: 'dataset' (the default: would the whole "
                             "dataset pass? settles by the last entry) or 'population' (does "
                             "the component pass on the population the dataset samples? may "
                             "end INCONCLUSIVE, exit status 5); as SEQUENTIAL in the script")
    parser.add_argument("--against", metavar="RUN_ID",
                        help="a sequential comparison with a recorded run (a run id or its "
                             "first 4+ hex digits, or an experiment name: its latest finished "
                             "run not made --against another): only this component is called, "
                             "on the baseline's items in a seeded random order, until each "
                             "type's paired gap is settled better, worse by more than its "
                             "margin (exit status 1) or within it (0), at "
                             "SEQUENTIAL_CONFIDENCE; --sequential's QUESTION applies "
                             "('population' by default here: may end INCONCLUSIVE, 5); "
                             "refused with LABELS_PATH and JUDGE_REPEATS > 1")
    parser.add_argument("--margin", metavar="MARGIN|TYPE=MARGIN,...", action="append",
                        help="with --against: how much worse than the baseline a type may be, "
                             f"an accuracy difference from 0 to 1 (default {DEFAULT_MARGIN:g} "
                             "for every type not named); 0.02 sets every type's, "
                             "functional=0.02 one type's; repeatable")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--replicates", action="store_true",
                       help="run the selection REPLICATES times (a constant, default 2) with "
                            "per-replicate seeds, as nested MLflow runs; writes "
                            "report-stability.md, stability.json and replicates.lock.json")
    modes.add_argument("--calibrate", action="store_true",
                       help="calibrate REPEAT_COUNT: run the repeatability entries "
                            "CALIBRATION_REPEAT_COUNT times (a constant, default 20), re-score "
                            "every prefix k = 2..N without new calls; writes "
                            "report-calibration.md and calibration.svg")
    modes.add_argument("--resume", metavar="RUN_ID",
                       help="continue an interrupted run: its recorded calls are reused, only "
                            "the missing ones are made (selection and constants as the run's)")
    modes.add_argument("--rescore", metavar="RUN_ID",
                       help="score a run's recorded outputs again with this script's scorers, "
                            "judge prompts, thresholds and COMPARED_FIELDS, as a new run tagged "
                            "rescored_from=RUN_ID; the component is not called (the run's "
                            "selection; same dataset and REPEAT_COUNT)")
    parser.add_argument("--estimate", action="store_true",
                        help="call nothing: print the calls the run would make (component and "
                             "judge), and its tokens and cost with a 95%% interval, predicted "
                             "from the usage per call of the experiment's last finished run "
                             "priced by TOKEN_PRICES (with --replicates: the series; with "
                             "--sequential or SEQUENTIAL: also the range a sequential run "
                             "calls and costs); with --json, write them there")
    parser.add_argument("--ignore-estimate", action="store_true",
                        help="start the run even when its estimate is above MAX_COST_USD "
                             "(refused otherwise, exit status 7); MAX_COST_USD still stops it")
    add_executor_options(parser)
    # --- CI outputs (issue 13) ---
    parser.add_argument("--json", metavar="PATH", type=Path, dest="json_path",
                        help="also write a machine-readable summary: per type the metrics, "
                             "interval, threshold and verdict; the run id and URL; the exit "
                             "status")
    parser.add_argument("--junit-xml", metavar="PATH", type=Path, dest="junit_path",
                        help="also write JUnit XML: a test case per entry and test type (bias: "
                             "per group), a failure carrying its reason")
    add_markdown_options(parser, "the verdict table (per type the metric, its interval, the "
                                 "threshold and the verdict; the run's link)")
    args = parser.parse_args(argv)
    earlier = args.resume or args.rescore
    if args.test_type is None and earlier is None:
        parser.error("the following arguments are required: --type (or --resume/--rescore "
                     "RUN_ID)")
    if earlier is not None and (args.test_type or args.groups or args.human_review
                                or args.sequential or args.against):
        parser.error(f"--{'resume' if args.resume else 'rescore'} takes the run's own --type, "
                     "--groups and --human-review, and a sequential run's --sequential and "
                     "--against")
    if args.margin and not args.against:
        parser.error("--margin is the margin of a comparison: give --against RUN_ID too (or "
                     "use evalkit compare --margin on two finished runs; a resume takes the "
                     "run's own margins)")
    if args.against and (args.replicates or args.calibrate or args.estimate):
        parser.error("--against is one sequential run against a recorded one: it cannot be "
                     "used with --replicates, --calibrate or --estimate")
    if args.estimate and (earlier or args.calibrate):
        parser.error("--estimate estimates a new run: give --type (and --groups, "
                     "--human-review, --replicates), not --resume, --rescore or --calibrate")
    stop = Stop()
    with process_configured(), stopping_on_signals(stop):
        status = guarded(lambda: _run(constants, component, script, args,
                                      RunContext(stop=stop, progress=ProgressDisplay())))
    if status == ExitStatus.INTERRUPTED:
        end_now(status)
    return status


def _run(constants: Mapping[str, Any], component: Component, script: str,
         args: argparse.Namespace, context: RunContext) -> int:
    """The run the options ask for; ``context`` is how this process takes part in it (its
    stop requests and its progress display)."""
    started = time.monotonic()
    # Problems with the constants are raised with those of the selected types, in one error.
    config = EvalConfig.read_constants(constants, script)
    if args.estimate:  # no call is made: no executor
        return _estimate(config, args, context)
    if args.rescore is not None:  # no call is made: no executor
        outcome = rescore(config, args.rescore, context)
        _print_outcome(outcome)
        return _finish(args, started, "evaluation", outcome)
    with executor_for(args, config, constants, component) as executor:
        return _run_calls(config, component, args, replace(context, executor=executor),
                          started)


def _run_calls(config: EvalConfig, component: Component, args: argparse.Namespace,
               context: RunContext, started: float) -> int:
    """A run that makes calls: ``context`` now names where they run too."""
    if args.resume is not None:
        outcome = resume(config, component, args.resume, context)
        _print_outcome(outcome)
        return _finish(args, started, "evaluation", outcome)
    # SEQUENTIAL in the script applies unless --sequential names the question
    selection = Selection.parse(args.test_type, args.groups, args.human_review,
                                args.sequential)
    if not args.ignore_estimate and not args.calibrate:
        check_budget(config, selection, args.replicates, context)
    if args.replicates:
        series = evaluate_replicates(config, component, selection, context)
        _print_replicates(series)
        return _finish(args, started, "replicates", series)
    if args.calibrate:
        calibrated = evaluate_calibration(config, component, selection, context)
        for point in calibrated.calibration.points:
            print(f"k={point.k:<3} pass rate {point.rate:.3f} ({point.passed}/{point.entries})")
        print(f"recommended REPEAT_COUNT: {calibrated.calibration.recommended}")
        for path in calibrated.reports:
            print(f"wrote: {path}")
        print(f"mlflow: calibration run {calibrated.run.run_id} in "
              f"{calibrated.run.experiment_name} ({shown_uri(calibrated.run.tracking_uri)})")
        # A calibration measures; its exit status does not depend on the thresholds.
        return _finish(args, started, "calibration", calibrated.run, always_ok=True)
    against = None if args.against is None else Against(
        args.against, Margins.parse(args.margin or [], DEFAULT_MARGIN))
    outcome = evaluate(config, component, selection, context, against)
    _print_outcome(outcome)
    return _finish(args, started, "evaluation", outcome)


def _estimate(config: EvalConfig, args: argparse.Namespace, context: RunContext) -> int:
    """``--estimate``: what the run would call and cost, printed (and written to --json)."""
    selection = Selection.parse(args.test_type, args.groups, args.human_review,
                                args.sequential)
    estimate = estimate_run(config, selection, args.replicates, context)
    for line in estimate.lines():
        print(line)
    if config.max_cost_usd is not None and estimate.cost is not None:
        per_run = estimate.cost.estimate / estimate.runs
        print(f"estimate: MAX_COST_USD = {config.max_cost_usd:g}: the run would "
              + ("be refused (--ignore-estimate starts it)" if per_run > config.max_cost_usd
                 else "start")
              + (" (held to the full run's estimate: a sequential run may read every entry)"
                 if estimate.sequential is not None else ""))
    if args.json_path is not None:
        write_estimate_json(estimate, args.json_path)
        print(f"json: {args.json_path}")
    return ExitStatus.OK


def _finish(args: argparse.Namespace, started: float, mode: str,
            ran: EvaluationOutcome | ReplicatesOutcome, always_ok: bool = False) -> int:
    """Print the verdict line, write the CI outputs asked for, return the exit status. A
    series of replicates is named by its parent run."""
    runs = ran.replicates if isinstance(ran, ReplicatesOutcome) else (ran,)
    run_id = ran.parent_run_id if isinstance(ran, ReplicatesOutcome) else ran.run_id
    verdicts = {run.verdict for run in runs}
    status = (ExitStatus.OK if verdicts == {"PASS"} or always_ok
              else ExitStatus.THRESHOLD_FAILED if "FAIL" in verdicts
              else ExitStatus.INCONCLUSIVE)
    summary = RunSummary(mode, run_id, ran.run_url, ran.experiment_name,
                         runs, time.monotonic() - started, int(status),
                         ran.reliability if isinstance(ran, ReplicatesOutcome) else {})
    if args.json_path is not None:
        write_json(summary, args.json_path)
        print(f"json: {args.json_path}")
    if args.junit_path is not None:
        write_junit(summary, args.junit_path)
        print(f"junit: {args.junit_path}")
    verdict, _ = summary.verdict_lines()
    markdown = run_markdown(verdict, run_id, ran.run_url, ran.experiment_name,
                            [run.metrics for run in runs], summary.sequential)
    for line in write_markdown(args, markdown, EVAL_COMMENT_MARKER):
        print(line)
    for line in summary.verdict_lines():
        print(line)
    return status


def _print_replicates(series: ReplicatesOutcome) -> None:
    for s in series.stability:
        floor = "—" if s.noise_floor is None else f"{s.noise_floor:.2%}"
        most = s.reliability.by_k[-1]  # k = the replicates: the widest gap between the two
        # two lines, so that a terminal of 80 columns does not wrap them
        print(f"{s.metric} mean {s.mean:.3f} sd {'—' if s.sd is None else f'{s.sd:.4f}'} "
              f"spread {s.spread:.3f} noise floor {floor}")
        print(f"  unstable items {s.unstable_items}/{s.repeated_items} "
              f"pass@{most.k} {most.pass_at.value:.3f} pass^{most.k} {most.pass_hat.value:.3f}")
    for path in (*series.reports, series.stability_path, series.lock_path):
        print(f"wrote: {path}")
    print(f"mlflow: parent run {series.parent_run_id} with {len(series.replicates)} "
          f"replicate runs in {series.experiment_name} ({shown_uri(series.tracking_uri)})")
    for failure in series.failures:
        print(f"threshold missed: {failure}", file=sys.stderr)


def _print_outcome(outcome: EvaluationOutcome) -> None:
    for m in outcome.metrics:
        if m.samples:
            figure = (f"{m.accuracy:.3f} [{m.ci_low:.3f}, {m.ci_high:.3f}] "
                      f"F1 {m.f1:.3f} n={m.samples}")
            if m.corrected is not None:
                c = m.corrected
                figure += (f"; corrected by {c.labels} labels {c.estimate:.3f} "
                           f"[{c.low:.3f}, {c.high:.3f}] (threshold checked on it)")
        else:
            figure = "no samples"
        print(f"{outcome.type_verdict(m.test_type)}  {m.test_type}_accuracy {figure}")
    if outcome.sequential is not None:
        for line in sequential_lines(outcome.sequential):
            print(line)
    for path in outcome.reports:
        print(f"report: {path}")
    print(f"mlflow: run {outcome.run_id} in {outcome.experiment_name} "
          f"({shown_uri(outcome.tracking_uri)})")
    for failure in outcome.failures:
        print(f"threshold missed: {failure}", file=sys.stderr)
