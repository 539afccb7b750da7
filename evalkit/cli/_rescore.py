"""``evalkit rescore``: a run's recorded outputs scored again by the eval script's current
scorers, as a new run; the script is run with ``--rescore RUN_ID`` (it holds the constants and
the judge prompts), and its component is never called."""

from __future__ import annotations

import argparse
from pathlib import Path

from evalkit.cli._common import run_script

DESCRIPTION = (
    "Score the outputs RUN_ID recorded again, with the eval script's current scorers, judge "
    "prompts, thresholds and COMPARED_FIELDS, as a new MLflow run tagged rescored_from=RUN_ID "
    "(its reports and summary.md say so); RUN_ID itself is left as it is. No component call is "
    "made; an LLM judge is asked again. Runs SCRIPT --rescore RUN_ID. Refused (exit 2) when "
    "the outputs cannot be matched to the script's entries: another dataset (digest) or, with "
    "repeatability, REPEAT_COUNT; an unfinished run missing calls (resume it first) or a "
    "run without raw results; raw results damaged after the run finished (the error names "
    "the line and the fix); a replicate series or one of its replicates.")


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
