"""``evalkit label``: people's pass/fail labels on a finished run, in the terminal or from a
file; each label is written to MLflow as it is given."""

from __future__ import annotations

import argparse
import getpass
import shutil
import sys
import textwrap
from pathlib import Path

from evalkit._errors import ConfigError
from evalkit._secrets import Redactor
from evalkit.cli._exit import ExitStatus
from evalkit.cli._labeller import LabelCase, label_cases, terminal_keys
from evalkit.records import HumanLabel
from evalkit.review import LabelOutcome, LabelSession, import_labels
from evalkit.tracking import Tracker

DESCRIPTION = (
    "Label RUN's entries pass or fail, one at a time, as a person judges them: the input, the "
    "output(s), expected_output and what the scorer was asked, never the scorer's verdict. "
    "Keys: p pass, f fail, s skip, b back, q quit. Each label is written to MLflow at once "
    "(feedback on the entry's trace named <type>_label, e.g. functional_label, source "
    "HUMAN), so quitting "
    "loses nothing and the next call goes on where you stopped. --sample N first draws N "
    "entries at random, half among the scorer's passes and half among its failures, and "
    "records the draw on the run: only labels on drawn entries enter the corrected "
    "accuracy (report-judge.md); others count in the agreement. --from FILE imports labels "
    "from CSV or JSONL (columns entry_id, type, verdict, and optionally reviewer, comment): "
    "every bad row is named and nothing is imported until all are right. Afterwards the "
    "run's reports (summary.md, report-judge.md), description and verdict in MLflow count "
    "the labels.")


def add_label_parser(commands: argparse._SubParsersAction, run_help: str) -> None:
    label = commands.add_parser(
        "label", help="label a run's entries pass/fail: the judge measured against people",
        description=DESCRIPTION)
    label.add_argument("run", metavar="RUN", help=run_help)
    label.add_argument("--type", dest="test_type", metavar="TYPE",
                       help="the test type to label (default: the run's one LLM-judged type)")
    label.add_argument("--sample", type=int, metavar="N",
                       help="draw N entries at random (stratified by the scorer's verdict) "
                            "and label those; once per run and type")
    label.add_argument("--seed", type=int, help="seed of the draw (default: from the run id)")
    label.add_argument("--reviewer", help="your name on the labels (default: the OS user)")
    label.add_argument("--from", dest="from_file", type=Path, metavar="FILE",
                       help="import labels from a .csv or .jsonl file instead")


def label_command(args: argparse.Namespace, tracker: Tracker) -> int:
    if args.sample is not None and args.sample < 1:
        raise ConfigError(f"--sample {args.sample}: draw a positive number of entries")
    if args.from_file is not None:
        given, outcome = import_labels(tracker, args.run, args.from_file,
                                       reviewer_name(args.reviewer))
        _say(f"imported {given} labels from {args.from_file}")
        _print_outcome(outcome, args.run)
        return ExitStatus.OK
    session = LabelSession(tracker, args.run, args.test_type, args.sample or 0, args.seed)
    reviewer = reviewer_name(args.reviewer)
    width = min(100, shutil.get_terminal_size((80, 24)).columns)
    if session.draw is not None:
        _say(f"{len(session.draw.drawn)} {session.test_type} entries drawn for labels "
             f"(seed {session.draw.seed}); labelling as {reviewer}", width)
    else:
        _say(f"no draw for {session.test_type}: labels on its entries count in the agreement "
             f"only (draw with --sample N); labelling as {reviewer}", width)
    mine = session.given_by(reviewer)
    others = session.labelled_by_others(reviewer)
    if others:
        _say(f"{len(others)} of these entries already have a label from "
             f"{', '.join(sorted(set(others.values())))}: a label of yours replaces it (the "
             "latest label of an entry counts)", width)
    items = {i.id: i for i in session.result.items}
    rubric = session.rubric()
    cases = [LabelCase(e, session.test_type, items[e].input, items[e].outputs,
                       items[e].expected, rubric, mine.get(e)) for e in session.order]

    def write(case: LabelCase, passed: bool) -> None:
        session.give([HumanLabel(case.entry_id, case.test_type, passed, reviewer)])

    label_cases(cases, write, terminal_keys(sys.stdin), sys.stdout, width)
    _print_outcome(session.finish(), args.run, width)
    return ExitStatus.OK


def reviewer_name(given: str | None) -> str:
    """The reviewer a label is written for: ``--reviewer``, else the OS user; a secret in it
    redacted before it is shown, compared with the run's labels or written."""
    return Redactor.from_environment().text(given or _os_user())


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name (a container without a passwd entry)
        return "reviewer"


def _say(text: str, width: int = 80) -> None:
    """A line of the command's own, wrapped like the labeller's screen."""
    print(textwrap.fill(text, width, subsequent_indent="  "))


def _print_outcome(outcome: LabelOutcome, run: str, width: int = 80) -> None:
    for test_type, check in outcome.checks.items():
        c = check.corrected
        if c is not None:
            _say(f"{test_type}: corrected accuracy {c.estimate:.3f} [{c.low:.3f}, "
                 f"{c.high:.3f}] from {c.labels} drawn labels ({c.method})", width)
        else:
            needed = sum(check.more_needed.values())
            _say(f"{test_type}: {len(check.drawn_labels)} drawn and "
                 f"{len(check.chosen_labels)} chosen labels; "
                 + (f"{needed} more drawn labels before a corrected accuracy" if check.drawn
                    else f"no draw yet: evalkit label {run} --type {test_type} --sample N"),
                 width)
    if outcome.verdict != outcome.verdict_before:
        _say(f"the run's verdict is now {outcome.verdict} (it was {outcome.verdict_before} "
             "before these labels): " + ("; ".join(outcome.failures) or "every threshold met"),
             width)
    _say("the run's reports (summary.md, report-judge.md) and description in MLflow now "
         f"count these labels; a local copy of the reports: evalkit report {run}", width)
