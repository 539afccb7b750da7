"""The human-review checklist: entries for a person to check, with their full input and output."""

from __future__ import annotations

from collections.abc import Sequence

from evalkit.records import HumanReviewItem, RunRecord
from evalkit.reports._common import header
from evalkit.reports._markdown import cell, fenced


def human_review_report(record: RunRecord, items: Sequence[HumanReviewItem]) -> str:
    lines = header(record, "Human Review Checklist", [("Entries to review", str(len(items)))])
    lines += ["These entries are not auto-scored for human review; tick each one once a person "
              "has checked the output against the instructions. Their other test types are "
              "scored in their own reports.", ""]
    for item in items:
        lines += [f"- [ ] **{cell(item.id)}** — {cell(item.instructions, 500)}", "",
                  "  Input:", "", fenced(item.input, indent="  "), ""]
        if item.error:
            lines += [f"  The component raised: {cell(item.error, 300)}", ""]
        else:
            lines += ["  Actual output:", "", fenced(item.output, indent="  "), ""]
    return "\n".join(lines).rstrip("\n") + "\n"
