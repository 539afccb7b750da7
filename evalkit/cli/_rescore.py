"""``evalkit rescore``: a run's recorded outputs scored again by the eval script's current
scorers, as a new run; the script is run with ``--rescore RUN_ID`` (it holds the constants and
the judge prompts), and its component is never called."""

from __future__ import annotations

import argparse
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

from evalkit._errors import ConfigError, ExitStatus

DESCRIPTION = (
    "Score the outputs RUN_ID recorded again, with the eval script's current scorers, judge "
    "prompts, thresholds and COMPARED_FIELDS, as a new MLflow run tagged rescored_from=RUN_ID "
    "(its reports and summary.md say so); RUN_ID itself is left as it is. No component call is "
    "made; an LLM judge is asked again. Runs SCRIPT --rescore RUN_ID. Refused (exit 2) when "
    "the outputs cannot be matched to the script's entries: another dataset (digest) or, with "
    "repeatability, REPEAT_COUNT; a run missing calls (resume it first) or without raw "
    "results; a replicate series or one of its replicates.")


def add_rescore_parser(commands: argparse._SubParsersAction, run_help: str) -> None:
    rescore = commands.add_parser(
        "rescore", help="score a run's recorded outputs again as a new run, calling nothing",
        description=DESCRIPTION)
    rescore.add_argument("run_id", metavar="RUN_ID", help=run_help)
    rescore.add_argument("--script", type=Path, default=Path("eval.py"),
                         help="the eval script whose scorers and constants to use "
                              "(default: eval.py)")


def rescore_command(args: argparse.Namespace) -> int:
    return run_script(args.script, ["--rescore", args.run_id])


def run_script(script: Path, argv: Sequence[str]) -> int:
    """Run an eval script with ``argv`` as ``python SCRIPT ARGV`` would, in this process: its
    folder first on ``sys.path`` (its sibling modules import), its exit status returned."""
    if not script.is_file():
        raise ConfigError(f"{script} not found: pass the eval script with --script")
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *argv]
    sys.path.insert(0, str(script.parent.resolve()))
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as done:
        return int(done.code or 0) if not isinstance(done.code, str) else ExitStatus.USAGE
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
    return ExitStatus.OK
