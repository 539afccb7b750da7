"""``report-calibration.md``: the repeatability pass rate against the repeat count k."""

from __future__ import annotations

from evalkit.dataset import REPEATABILITY
from evalkit.records import RunRecord, TypeNames, names
from evalkit.reports._common import header
from evalkit.reports._markdown import table
from evalkit.stats import PLATEAU_RULE, Calibration


def calibration_report(record: RunRecord, calibration: Calibration) -> str:
    routine = record.params.get(names.REPEAT_COUNT_PARAM, "not declared")
    n = TypeNames.of(REPEATABILITY)
    points = calibration.points
    lines = header(record, "Calibration Report: REPEAT_COUNT", [
        ("Calibration repeat count", str(calibration.repeat_count)),
        ("REPEAT_COUNT in the script", routine),
        ("Scoring", f"{record.params.get(n.scorer, '—')}"
         + (f" (average pairwise cosine ≥ {float(t):g})"
            if (t := record.params.get(n.similarity_threshold)) else "")),
    ])
    lines += [
        "## Pass Rate by Repeat Count", "",
        f"Each repeatability entry was invoked {calibration.repeat_count} times; the pass rate "
        "at k scores only each entry's first k outputs, with the eval's own scorer and no new "
        "calls.", "",
        "```mermaid", "xychart-beta",
        '    title "Repeatability pass rate by repeat count"',
        f'    x-axis "Repeat count k" [{", ".join(str(p.k) for p in points)}]',
        '    y-axis "Pass rate" 0 --> 1',
        f"    line [{', '.join(f'{p.rate:.3f}' for p in points)}]", "```", "",
        f"![Pass rate by repeat count]({names.CALIBRATION_CHART})", "",
        table(["k", "Entries passing", "Pass rate"],
              [[str(p.k), f"{p.passed}/{p.entries}", f"{p.rate:.3f}"] for p in points]),
        "",
        f"**Recommended REPEAT_COUNT:** {calibration.recommended}", "",
        "## Notes", "",
        f"- Rule: {PLATEAU_RULE}.",
        "- Under exact scoring a repeat can only break an entry's agreement, so the pass rate "
        "falls with k until it settles. Under average pairwise cosine one odd output weighs "
        "less as k grows, so the rate can also rise back; either way a REPEAT_COUNT before the "
        "plateau measures something the component does not do reliably.",
        "- Recalibrate when the component, its temperature or its prompt changes.", "",
    ]
    return "\n".join(lines).rstrip("\n") + "\n"
