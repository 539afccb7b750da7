"""A run's reports and their charts: logged to the run, written to the reports folder, and the
routine reports that an earlier run left there, which this run did not write, marked as such.

Marked rather than removed: a run of some types keeps the other types' reports readable, as
the reports folder has always promised ("overwritten for the types of the current run
only"), but a report of a type the dataset no longer has, or of a run that was judged or
labelled when this one is not, can no longer pass for the latest run's.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from evalkit.dataset import TEST_TYPES
from evalkit.records import RunRecord, names
from evalkit.reports import render_charts, render_reports
from evalkit.tracking import TrackedRun

ROUTINE_REPORTS = frozenset({*(names.report_name(t) for t in TEST_TYPES),
                             names.JUDGE_REPORT, names.HUMAN_REVIEW_REPORT})
"""The reports an evaluation run may write to the reports folder, besides summary.md (which
every one writes)."""
EARLIER_RUN_NOTE = "> **Not from the latest run.**"


@dataclass(frozen=True)
class PublishedReports:
    names: tuple[str, ...]
    """Every report of the run (logged to it), charts aside."""
    written: tuple[Path, ...]
    """The reports written to the reports folder."""


def publish_reports(run: TrackedRun, record: RunRecord, folder: Path | None,
                    local: Collection[str] | None) -> PublishedReports:
    """Render the run's reports and charts, log them, write them to ``folder`` (only those
    named in ``local``, when given) and, when all of them went there, mark the earlier
    reports they did not replace."""
    reports = render_reports(record)
    written = run.publish_reports(reports, folder, local)
    run.publish_reports(render_charts(record), folder, local)
    if folder is not None and local is None:
        mark_earlier_reports(folder, reports, record)
    return PublishedReports(tuple(reports), written)


def mark_earlier_reports(folder: Path, reports: Collection[str], record: RunRecord) -> None:
    """Put a note at the top of each routine report in ``folder`` that is not among
    ``reports`` (this run's), naming this run; an earlier run's note is replaced."""
    for name in sorted(ROUTINE_REPORTS - set(reports)):
        path = folder / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if text.startswith(EARLIER_RUN_NOTE):
            text = text.split("\n\n", 1)[1]
        note = (f"{EARLIER_RUN_NOTE} The latest run here, {record.run_name} (run "
                f"{record.run_id}), wrote no {name}: this one is from the earlier run its "
                "header names. `evalkit report RUN` writes any run's reports again.\n\n")
        path.write_text(note + text, encoding="utf-8")
