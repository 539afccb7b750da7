"""``evalkit compare A B``: the comparison as the terminal shows it, and its exit status."""

from __future__ import annotations

import argparse
import json
import sys

from evalkit.cli._exit import ExitStatus
from evalkit.cli._job_summary import add_markdown_options, write_markdown
from evalkit.reports import COMPARE_COMMENT_MARKER
from evalkit.review import (
    Difference,
    Margins,
    MetricComparison,
    Side,
    compare,
    compare_markdown,
    floor_text,
    load_side,
    margin_line,
    margin_text,
    margin_verdict,
    no_winner,
    shown_value,
    what_differs,
)
from evalkit.stats import MarginVerdict
from evalkit.tracking import RunReader

COMPARE_EPILOG = (
    "exit status follows the types that changed: 0 some type's gap clears the noise floor "
    "(A better or A worse; types inside the noise did not change), or no gap is gated "
    "(neither run has replicates); 5 no type's gap clears the noise floor and at least one "
    "is inside it (no winner can be called); 2 A and B share no test type, or one did not "
    "finish (the error names its resume), or a bad --margin; 4 runtime failure. "
    "With --margin the exit status is the margin's answer instead (the noise-floor verdicts "
    "are still shown): 0 B is no worse than A by more than the margin on every type given "
    "one; 1 B is worse by more than the margin on some type; 5 INCONCLUSIVE: on some type "
    "B - A's 95% paired interval holds -margin and on none is B worse")
MAX_LISTED = 20


def add_compare_parser(commands: argparse._SubParsersAction, run_help: str) -> None:
    """``evalkit compare A B`` and its options."""
    compare = commands.add_parser(
        "compare", help="compare two runs, refusing gaps inside the noise floor",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compare A with B: first what differs between them as recorded "
                    "(params, component prompts with a diff of their texts, git commit and "
                    "diff, the script's source hash, dataset digest, judge prompts, evalkit/"
                    "MLflow/Python versions), then per test type the accuracy gap, the items "
                    "that flipped "
                    "between them and the noise floor (the largest disagreement rate between "
                    "two replicates) measured behind A and/or B. A winner is named only when "
                    "the gap clears twice the floor; inside it the comparison is refused. "
                    "Without replicates on either side there is no floor: the gap is shown "
                    "with its paired interval over the shared items and is not gated. "
                    "--margin also asks whether B is no worse than A by more than a "
                    "margin, per type, from that paired interval.",
        epilog=COMPARE_EPILOG)
    for side in ("a", "b"):
        compare.add_argument(side, metavar=side.upper(), help=run_help)
    compare.add_argument("--json", action="store_true", help="machine-readable output")
    compare.add_argument(
        "--margin", metavar="MARGIN|TYPE=MARGIN,...", action="append",
        help="also ask, per test type, whether B (the candidate) is no worse than A (the "
             "baseline) by more than MARGIN (an accuracy difference from 0 to 1, e.g. 0.02), "
             "from the 95%% paired interval of B - A over the shared items: no worse, worse "
             "by more than the margin, or INCONCLUSIVE; 0.02 sets every type's margin, "
             "functional=0.02,smoke=0.05 one type's (a type's own beats the one for every "
             "type); with it the exit status is this answer's (below)")
    add_markdown_options(compare, "the comparison (per type both accuracies, the gap with its "
                                  "paired interval, the noise floor, the verdict, the "
                                  "margin's answer; what differs)")


_MARGIN_STATUS = {MarginVerdict.NO_WORSE: ExitStatus.OK,
                  MarginVerdict.WORSE: ExitStatus.THRESHOLD_FAILED,
                  MarginVerdict.INCONCLUSIVE: ExitStatus.INCONCLUSIVE}


def compare_command(args: argparse.Namespace, reader: RunReader) -> int:
    margins = Margins.parse(args.margin or [])
    a, b = load_side(reader, args.a), load_side(reader, args.b)
    results = compare(a, b, margins)
    changed = what_differs(reader, a.run_id, b.run_id)
    if args.json:
        print(json.dumps({"a": {"run_id": a.run_id, "label": a.label,
                                "usage": a.usage.to_json()},
                          "b": {"run_id": b.run_id, "label": b.label,
                                "usage": b.usage.to_json()},
                          "differences": [d.to_json() for d in changed],
                          "metrics": [r.to_json() for r in results],
                          "margin_verdict": _optional_text(margin_verdict(results))},
                         indent=1))
    else:
        print(render_differences(changed))
        print()
        print(render_comparison(a, b, results))
    # with --json, stdout is the JSON document alone
    for line in write_markdown(args, compare_markdown(a, b, results, changed),
                               COMPARE_COMMENT_MARKER):
        print(line, file=sys.stderr if args.json else sys.stdout)
    if not results:
        print("error: A and B share no test type with an accuracy: compare runs of the same "
              "test types", file=sys.stderr)
    return compare_status(results)


def compare_status(results: tuple[MetricComparison, ...]) -> ExitStatus:
    """With margins, the margin's answer (0 no worse on every type given one, 1 worse on
    one, 5 INCONCLUSIVE). Without, the exit status follows the types that changed: a type
    whose gap clears the noise floor decides (0), so a type inside the noise beside it (one
    that did not change) does not fail a CI step; only when no type is decided and some gap
    was gated is it 5."""
    if not results:
        return ExitStatus.USAGE
    verdict = margin_verdict(results)
    if verdict is not None:
        return _MARGIN_STATUS[verdict]
    return ExitStatus.INCONCLUSIVE if no_winner(results) else ExitStatus.OK


def _optional_text(value: object) -> str | None:
    return None if value is None else str(value)


def render_differences(changed: tuple[Difference, ...]) -> str:
    """What differs between A and B as recorded, before the numbers it may explain."""
    if not changed:
        return ("What differs: nothing recorded differs (params, prompts, code, dataset, "
                "judge, versions)")
    lines = ["What differs (A -> B):"]
    for d in changed:
        lines.append(f"  {d.section} {d.name}: {shown_value(d.a)} -> {shown_value(d.b)}")
        lines += [f"    {line}" for line in d.diff]
    return "\n".join(lines)


def render_comparison(a: Side, b: Side, results: tuple[MetricComparison, ...]) -> str:
    lines = [f"{name}: {side.run_id} ({side.label})"
             + (f"; {side.usage.text()}" if side.usage.reported else "")
             for name, side in (("A", a), ("B", b))]
    for r in results:
        lines += ["", f"{r.test_type}_accuracy: A {r.a:.3f}, B {r.b:.3f}, gap {r.gap:+.3f}; "
                      f"noise floor {floor_text(r)}"]
        if r.paired is not None and r.floor is None:
            p = r.paired
            lines.append(f"  over the {p.items} shared items: gap {p.gap:+.3f} "
                         f"[{p.low:+.3f}, {p.high:+.3f}] ({p.confidence:.0%}, paired; item "
                         "sampling only, not the noise of calling again)")
        lines.append(f"  items flipped over {r.shared_items} shared: {len(r.right_in_a_only)} "
                     f"right in A only, {len(r.right_in_b_only)} right in B only")
        if r.undecided_items:
            lines.append(f"  {r.undecided_items} undecided item(s) left out: a replicate "
                         "series split evenly on them (right in exactly half its replicates)")
        for label, ids in (("right in A only", r.right_in_a_only),
                           ("right in B only", r.right_in_b_only)):
            if ids:
                lines.append(f"    {label}: " + ", ".join(ids[:MAX_LISTED])
                             + (f" (+{len(ids) - MAX_LISTED} more)"
                                if len(ids) > MAX_LISTED else ""))
        if r.corrected is not None:
            c = r.corrected
            gated = ("" if r.floor is None
                     else "; the noise gate applies to this gap, not the raw one")
            lines.append(f"  corrected by people's labels: gap {c.gap:+.3f} [{c.low:+.3f}, "
                         f"{c.high:+.3f}]{gated}")
        lines.append(f"  verdict: {r.verdict}" + (
            "; run replicates (python eval.py --replicates) to gate it"
            if r.floor is None else ""))
        if r.margin is not None:
            lines.append(f"  against the margin: {margin_text(r.margin)}")
    answer = margin_line(results)
    if answer is not None:
        lines += ["", f"margin verdict: {answer}"]
    return "\n".join(lines)
