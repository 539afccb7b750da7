"""The human-review checklist: entries for a person to check, with their full input and output,
each ticked once a reviewer has given its ``human_review`` verdict in the MLflow UI."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from evalkit.records import HumanReviewItem, ReviewerVerdict, RunRecord, names, review_verdicts
from evalkit.reports._common import header
from evalkit.reports._markdown import cell, fenced, table


def human_review_report(record: RunRecord, items: Sequence[HumanReviewItem]) -> str:
    decided = review_verdicts(record.reviewer_verdicts)
    passed = sum(decided.get(item.id, (None,))[0] is True for item in items)
    failed = sum(decided.get(item.id, (None,))[0] is False for item in items)
    lines = header(record, "Human Review Checklist", [
        ("Entries to review", str(len(items))),
        ("Reviewed", f"{passed + failed} ({passed} pass, {failed} fail); "
                     f"pending {len(items) - passed - failed}")])
    lines += ["These entries are not auto-scored: a person checks each output against the "
              f"instructions and, on the entry's trace in the MLflow UI (tagged "
              f"`{names.REVIEW_TRACE_TAG}`), adds feedback named `{names.REVIEW_ASSESSMENT}`, "
              "Boolean: True (pass) or False (fail); the entry is ticked here once it has one. "
              "Their other test types are scored in their own reports.", ""]
    for item in items:
        verdict = decided.get(item.id)
        tick = "- [ ]" if verdict is None else (
            f"- [x] {'PASS' if verdict[0] else 'FAIL'} ({cell(verdict[1].reviewer)})")
        lines += [f"{tick} **{cell(item.id)}** — {cell(item.instructions, 500)}", "",
                  "  Input:", "", fenced(item.input, indent="  "), ""]
        if item.error:
            lines += [f"  The component raised: {cell(item.error, 300)}", ""]
        else:
            lines += ["  Actual output:", "", fenced(item.output, indent="  "), ""]
    if record.reviewer_verdicts:
        lines += _reviewer_verdicts(record.reviewer_verdicts)
    return "\n".join(lines).rstrip("\n") + "\n"


def _reviewer_verdicts(verdicts: Sequence[ReviewerVerdict]) -> list[str]:
    """What reviewers recorded on the entries' traces in the MLflow UI."""
    rows = [[cell(v.entry_id), cell(v.reviewer),
             f"{datetime.fromtimestamp(v.time_ms / 1000, UTC):%Y-%m-%d %H:%M UTC}",
             cell(v.name), cell(v.value), cell(v.comment or "", 300)] for v in verdicts]
    return ["## Reviewer verdicts", "",
            "Feedback added by people to the entries' traces in the MLflow UI (source HUMAN).",
            "", table(["Entry", "Reviewer", "When", "Assessment", "Verdict", "Comment"], rows),
            ""]
