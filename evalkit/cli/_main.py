"""The ``evalkit`` command: init, dataset, lint, report, compare, plan, sync, resume, history,
label, rescore, ui."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from evalkit._distribution import DISTRIBUTION, VERSION
from evalkit._errors import ConfigError
from evalkit.cli._common import (
    guarded,
    process_configured,
    run_script,
    script_experiment,
    shown,
)
from evalkit.cli._compare import add_compare_parser, compare_command
from evalkit.cli._dataset import add_dataset_parser, dataset_command
from evalkit.cli._executor import IN_PROCESS, RAY
from evalkit.cli._exit import EXIT_STATUSES, ExitStatus
from evalkit.cli._files import OutputFile, write_all
from evalkit.cli._init import DEFAULT_TEMPLATE, TEMPLATES, init_command
from evalkit.cli._label import add_label_parser, label_command
from evalkit.cli._parser import Parser
from evalkit.cli._rescore import add_rescore_parser, rescore_command
from evalkit.cli._ui import serve_ui
from evalkit.dataset import lint_dataset
from evalkit.records import RunRecord, names
from evalkit.reports import plan_summary, render_charts, render_reports
from evalkit.review import PlanOptions, build_plan, feedback_taken_in, record_plan
from evalkit.stats import judge_checks
from evalkit.tracking import Tracker, history, render_history

RUN_REFERENCE = "run id, its first 4 or more characters, or experiment name (its latest run)"
SCRIPT_EXPERIMENT = "EXPERIMENT_NAME of ./eval.py, read without running it"
_UNSAFE_IN_PATH = re.compile(r"[^A-Za-z0-9._-]+")


def main(argv: Sequence[str] | None = None) -> int:
    """The ``evalkit`` command."""
    parser = Parser(
        prog="evalkit", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="evalkit: scaffold an evaluation into a repository, import and lint golden "
                    "datasets, browse runs in the MLflow UI, re-render reports from MLflow, "
                    "label a run's entries to measure its judge, list run history, compare runs "
                    "against the noise floor, plan how many runs a claim needs, resume "
                    "interrupted runs, rescore a run's outputs without calling again, and upload "
                    "bundles left by a tracking outage. Evaluations themselves run from an eval "
                    "script: python eval.py --type=all.",
        epilog=EXIT_STATUSES)
    parser.add_argument("--version", action="version", version=f"{DISTRIBUTION} {VERSION}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    init = commands.add_parser(
        "init", help="scaffold eval.py, a dataset, a Makefile and reports/ into DIR",
        description="Scaffold an evaluation into DIR (default: the current folder): eval.py "
                    "(the constants and a runnable invoke_component stub), datasets/DATASET/ "
                    "(README, schema, example entries), a Makefile (eval, eval-<type>, "
                    "eval-replicates, eval-calibrate, lint, ui; it uses the python on PATH, "
                    "or PYTHON=...) and reports/, and add the local store to .gitignore. "
                    "Nothing is overwritten: if a file exists, nothing is written and every "
                    "conflict is listed. Where evalkit's eval.py exists already, --dataset NAME "
                    "adds only datasets/NAME/ and prints the DATASET_PATH line to set.")
    init.add_argument("directory", nargs="?", type=Path, default=Path("."), metavar="DIR")
    init.add_argument("--component", help="component name, the first half of EXPERIMENT_NAME "
                                          "(default: DIR's folder name)")
    init.add_argument("--dataset",
                      help="dataset folder name under datasets/ (default: golden)")
    init.add_argument("--template", choices=TEMPLATES, default=DEFAULT_TEMPLATE,
                      help="default: a runnable stub component to replace with yours; agent: "
                           "a LangGraph agent with two tools, its tool calls scored "
                           "(experiment orders-agent/orders, datasets/orders; needs "
                           "pip install 'evalkit-mlflow[agent]')")
    add_dataset_parser(commands)
    lint = commands.add_parser("lint", help="check datasets; list every violation")
    lint.add_argument("datasets", nargs="+", metavar="DATASET", help="dataset folder(s)")
    report = commands.add_parser(
        "report", help="re-render a past run's reports from MLflow alone",
        description="Render the reports of RUN (a run id, its first 4 or more characters, or "
                    "an experiment name for its latest finished run) from what its MLflow run "
                    "holds (MLFLOW_TRACKING_URI, else the local store) and write them to "
                    "--output, by default a folder of the run's own: "
                    "reports/runs/<run name>-<first 8 characters of the run id>/ "
                    "(reports/ beside eval.py stays the latest run's). When people gave "
                    "labels or reviewers' verdicts in the MLflow UI since the run's reports "
                    "were rendered, the run in MLflow is brought up to date too: its reports "
                    "(summary.md), description, verdict and the judge's figures.")
    report.add_argument("run", metavar="RUN", help=RUN_REFERENCE)
    report.add_argument("--output", type=Path,
                        help="folder to write report-<type>.md to (default: "
                             "reports/runs/<run name>-<run id prefix>)")
    report.add_argument("--json", type=Path, metavar="PATH",
                        help="also write each judged or labelled type's check against "
                             "people's labels (corrected accuracy, its method, the label "
                             "entry ids, agreement) as JSON to PATH")
    add_compare_parser(commands, RUN_REFERENCE)
    plan = commands.add_parser(
        "plan", help="how many runs a claim needs, from an experiment's runs in MLflow",
        description="Measure p (the per-run disagreement rate) from the repeats of the latest "
                    "run with repeatability entries and from the latest replicate series; print "
                    "the N each of majority, unanimous and any-of votes needs, what each test "
                    "type's next unit of budget should buy (items or replicates), and, with "
                    "--against, intervals for the contrast between two systems. Calls no "
                    "component; logs a planning run and writes reports/report-planning.md, "
                    "which holds every table (vote errors for N = 1..20, variance components); "
                    "--details prints it.")
    plan.add_argument("experiment", metavar="EXPERIMENT", nargs="?",
                      help="experiment name (its latest runs), or a run id or its first 4 or "
                           "more characters: a replicate series' parent, or a run with "
                           "repeatability entries, read instead of the latest (default: "
                           f"{SCRIPT_EXPERIMENT})")
    plan.add_argument("--target-error", type=float, default=0.01,
                      help="error an aggregated verdict may have (default: 0.01)")
    plan.add_argument("--max-n", type=int, default=20, help="largest N in the table (20)")
    plan.add_argument("--replicate-cost", type=float, default=1.0,
                      help="cost a of one call (one replicate of one item); default 1")
    plan.add_argument("--item-cost", type=float, default=1.0,
                      help="cost b of one more item (writing and reviewing it); default 1")
    plan.add_argument("--against", metavar="OTHER",
                      help="a second system: experiment name (its latest replicate "
                           "series) or a series' parent run id or its first 4 or more "
                           "characters; not EXPERIMENT's own series")
    plan.add_argument("--contrasts", type=int, metavar="K",
                      help="contrasts in the family for Bonferroni (default: shared types)")
    plan.add_argument("--half-width", type=float, metavar="W",
                      help="target half-width of a contrast interval, for replicate planning")
    plan.add_argument("--output", type=Path, default=Path("reports"),
                      help="folder for report-planning.md (default: reports)")
    plan.add_argument("--details", action="store_true",
                      help="print all of report-planning.md, not the summary")
    plan.add_argument("--json", action="store_true", help="machine-readable output")
    sync = commands.add_parser(
        "sync", help="upload run bundles that a tracking outage left on local disk",
        description="Upload each BUNDLE (a folder under .evalkit/bundles/) to the tracking "
                    "server (MLFLOW_TRACKING_URI): into its own run when the server still has "
                    "it (an outage left it RUNNING), else into a new run of the same "
                    "experiment. Without BUNDLE, every bundle not yet uploaded.")
    sync.add_argument("bundles", nargs="*", metavar="BUNDLE", type=Path)
    resume = commands.add_parser(
        "resume", help="continue an interrupted run (runs SCRIPT --resume RUN_ID)",
        description="Continue an interrupted run: the calls it recorded are reused and only "
                    "the missing ones are made. Runs the eval script that made the run, which "
                    "holds the component, as python SCRIPT --resume RUN_ID does (the script's "
                    "folder first on the import path).")
    resume.add_argument("run_id", metavar="RUN_ID")
    resume.add_argument("--script", type=Path, default=Path("eval.py"),
                        help="the eval script that made the run (default: eval.py)")
    resume.add_argument("--executor", choices=[IN_PROCESS, RAY],
                        help="where the missing calls run (as the script's option)")
    resume.add_argument("--ray-address", metavar="HOST:PORT", help="as the script's option")
    history = commands.add_parser("history", help="list an experiment's runs, newest first")
    history.add_argument("experiment", metavar="EXPERIMENT", nargs="?",
                         help="experiment name, e.g. support-router/golden (default: "
                              f"{SCRIPT_EXPERIMENT})")
    history.add_argument("--limit", type=int, default=20, help="runs to list (default: 20)")
    history.add_argument("--json", action="store_true", help="machine-readable output")
    add_label_parser(commands, RUN_REFERENCE)
    add_rescore_parser(commands, RUN_REFERENCE)
    ui = commands.add_parser(
        "ui", help="the MLflow UI over evalkit's store, on 127.0.0.1",
        description="Start the MLflow UI over the store evalkit uses (MLFLOW_TRACKING_URI, "
                    "else the local sqlite:///mlflow.db) on 127.0.0.1 and print its URL; for a "
                    "tracking server, print the server's URL (it serves its own UI). Its port "
                    "is recorded in .evalkit/ui.json and kept after it stops: run links evalkit "
                    "prints and tags name it, also for runs that end while no UI serves, and "
                    "the next evalkit ui serves it again. Ctrl-C or SIGTERM stops it and every "
                    "process it started.")
    ui.add_argument("--port", type=int,
                    help="port (default: the one evalkit ui last served this store on, which "
                         "run links name; 5000 the first time)")
    args = parser.parse_args(argv)
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "init": lambda a: init_command(a.directory, a.component, a.dataset, a.template),
        "ui": lambda a: serve_ui(os.environ.get("MLFLOW_TRACKING_URI"), a.port),
        "dataset": dataset_command,
        "lint": _lint, "report": _report, "compare": _compare, "history": _history,
        "plan": _plan, "sync": _sync, "resume": _resume, "rescore": rescore_command,
        "label": lambda a: label_command(a, _reachable())}
    with process_configured():
        return guarded(lambda: handlers[args.command](args))


def _lint(args: argparse.Namespace) -> int:
    status = ExitStatus.OK
    for path in args.datasets:
        report = lint_dataset(path)
        print(report.render(), file=sys.stdout if report.ok else sys.stderr)
        if not report.ok:
            status = ExitStatus.DATASET_INVALID
    return status


def _reachable() -> Tracker:
    """The tracking store, checked to answer: a dead or hanging server fails in seconds with
    one line naming the URI and the fix, never as a missing run."""
    tracker = Tracker()
    tracker.check_reachable()
    return tracker


def _report(args: argparse.Namespace) -> int:
    tracker = _reachable()
    reader = tracker.reader
    record = reader.fetch(reader.resolve(args.run))
    reports = render_reports(record)
    # A past run's reports in a folder of its own (run names repeat within a second; ids
    # tell runs apart): reports/ holds the latest run's.
    output = args.output or Path("reports", "runs", "-".join(filter(None, (
        _UNSAFE_IN_PATH.sub("-", record.run_name).strip(".-"), record.run_id[:8]))))
    # everything rendered first and written all or none: an unwritable --json must not leave
    # the reports written and the charts missing
    files = [OutputFile("report", output / name, text.encode("utf-8"), "--output")
             for name, text in reports.items()]
    if args.json is not None:
        files.append(OutputFile("json", args.json, (json.dumps({"run_id": record.run_id, "types": {
            t: check.to_json() for t, check in judge_checks(record).items()}}, indent=1)
            + "\n").encode("utf-8"), "--json"))
    files += [OutputFile("chart", output / name, svg.encode("utf-8"), "--output")
              for name, svg in render_charts(record).items()]
    write_all(files)
    for file in files:
        print(f"{file.kind}: {file.path}")
    _take_in_feedback(tracker, record)
    return ExitStatus.OK


def _take_in_feedback(tracker: Tracker, record: RunRecord) -> None:
    """Bring the run in MLflow up to date with feedback people gave in the UI since its
    reports were rendered; a user who may only read the run keeps the local reports."""
    try:
        outcome = feedback_taken_in(tracker, record)
    except ConfigError as refused:
        print(f"warning: the run's reports and description in MLflow still lack the feedback "
              f"given since the run: {shown(str(refused))}", file=sys.stderr)
        return
    if outcome is not None:
        print(f"mlflow: run {record.run_id}'s reports, description and verdict "
              f"({outcome.verdict}) now count the feedback people gave since the run")


def _compare(args: argparse.Namespace) -> int:
    return compare_command(args, _reachable().reader)


def _plan(args: argparse.Namespace) -> int:
    tracker = _reachable()
    options = PlanOptions(target_error=args.target_error, max_n=args.max_n,
                          against=args.against, contrast_count=args.contrasts,
                          half_width=args.half_width, replicate_cost=args.replicate_cost,
                          item_cost=args.item_cost)
    plan = build_plan(tracker, args.experiment or script_experiment(), options)
    parameters = {name: str(value) for name, value in (
        ("target_error", args.target_error), ("max_n", args.max_n),
        ("replicate_cost", args.replicate_cost), ("item_cost", args.item_cost),
        ("against", args.against), ("contrasts", args.contrasts),
        ("half_width", args.half_width)) if value is not None}
    run_id, path, report = record_plan(tracker, plan, args.output, parameters)
    if args.json:
        print(json.dumps({"run_id": run_id, **plan.to_json()}, indent=1))
    else:
        print(report if args.details else plan_summary(plan))
        pointer = "" if args.details else " (every table; --details prints it)"
        print(f"\nwrote: {path}{pointer}\nmlflow: planning run {run_id} in "
              f"{names.planning_experiment(plan.experiment)}")
    return ExitStatus.OK


def _sync(args: argparse.Namespace) -> int:
    tracker = Tracker()
    bundles = args.bundles or tracker.unsynced_bundles()
    if not bundles:
        print("no bundle to upload")
    for bundle in bundles:
        run_id = tracker.upload(bundle)
        print(f"uploaded {bundle} as run {run_id} at {tracker.tracking_uri}")
    return ExitStatus.OK


def _resume(args: argparse.Namespace) -> int:
    where = [f"--{name}={value}" for name, value in (("executor", args.executor),
                                                      ("ray-address", args.ray_address)) if value]
    return run_script(args.script, ["--resume", args.run_id, *where])


def _history(args: argparse.Namespace) -> int:
    rows = history(_reachable().reader, args.experiment or script_experiment(), args.limit)
    if args.json:
        print(json.dumps([r.to_json() for r in rows], indent=1))
    else:
        print(render_history(rows))
    return ExitStatus.OK
