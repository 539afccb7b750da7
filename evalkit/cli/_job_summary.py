"""Where CI shows the verdict: the Markdown of :func:`evalkit.reports.run_markdown` and
:func:`evalkit.review.compare_markdown` appended to the job summary GitHub Actions names in
``GITHUB_STEP_SUMMARY`` (appended: every step of a job adds to the same page), written to
``--summary-md PATH`` without it, and written to ``--pr-comment PATH`` as a pull request
comment body under a hidden marker a CI step finds it by.

These are views of a run that is already recorded and judged: a destination that cannot be
written never changes the command's exit status. It gets one warning on stderr naming the path
and the reason, and the other destinations are still written.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from evalkit.cli._common import shown
from evalkit.reports import pr_comment

STEP_SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"


def add_markdown_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``--summary-md`` and ``--pr-comment``; ``what`` names what the Markdown shows."""
    parser.add_argument(
        "--summary-md", metavar="PATH", type=Path, dest="summary_md",
        help=f"also write {what} as Markdown (the table a CI job summary shows) to PATH; "
             f"with {STEP_SUMMARY_VARIABLE} set (GitHub Actions) it is appended there anyway")
    parser.add_argument(
        "--pr-comment", metavar="PATH", type=Path, dest="pr_comment",
        help="also write the same Markdown as a pull request comment body to PATH, its first "
             "line a hidden marker a CI step finds the comment by to update it")


@dataclass(frozen=True)
class _Destination:
    kind: str
    """What the file is, as the line printed after writing it names it."""
    path: Path
    content: str
    append: bool
    named_by: str
    """The option or variable that named the path (in the warning)."""


def write_markdown(args: argparse.Namespace, markdown: str, marker: str) -> list[str]:
    """Write ``markdown`` where the environment and the options ask; returns a line per file
    written for the caller to print. A file named twice (``--summary-md`` given the job
    summary's own path) is written once, appended."""
    markdown = shown(markdown)
    wanted = []
    step_summary = os.environ.get(STEP_SUMMARY_VARIABLE)
    if step_summary:
        # after a blank line: the step's earlier text may not end its last line
        wanted.append(_Destination("job summary", Path(step_summary), "\n" + markdown, True,
                                   STEP_SUMMARY_VARIABLE))
    if args.summary_md is not None:
        wanted.append(_Destination("summary-md", args.summary_md, markdown, False,
                                   "--summary-md"))
    if args.pr_comment is not None:
        wanted.append(_Destination("pr-comment", args.pr_comment,
                                   pr_comment(markdown, marker), False, "--pr-comment"))
    written, seen = [], set()
    for destination in wanted:
        where = destination.path.absolute()
        if where in seen:
            continue
        seen.add(where)
        if _written(destination):
            written.append(f"{destination.kind}: {destination.path}")
    return written


def _written(destination: _Destination) -> bool:
    try:
        if not destination.path.parent.exists():  # a file there: "Not a directory" below
            destination.path.parent.mkdir(parents=True)
        with destination.path.open("a" if destination.append else "w",
                                   encoding="utf-8") as out:
            out.write(destination.content)
    except OSError as err:
        print(shown(f"warning: cannot write the Markdown verdict to {destination.path} (named "
                    f"by {destination.named_by}): {err.strerror or err}; it is missing there, "
                    "the run and its exit status are as without it"), file=sys.stderr)
        return False
    return True
