"""``evalkit compare A B``: the comparison as the terminal shows it, and its exit status."""

from __future__ import annotations

import argparse
import json
import sys

from evalkit.cli._exit import ExitStatus
from evalkit.cli._job_summary import write_markdown
from evalkit.reports import COMPARE_COMMENT_MARKER
from evalkit.review import (
    Difference,
    MetricComparison,
    Side,
    compare,
    compare_markdown,
    floor_text,
    load_side,
    no_winner,
    shown_value,
    what_differs,
)
from evalkit.tracking import RunReader

COMPARE_EPILOG = (
    "exit status follows the types that changed: 0 some type's gap clears the noise floor "
    "(A better or A worse; types inside the noise did not change), or no gap is gated "
    "(neither run has replicates); 5 no type's gap clears the noise floor and at least one "
    "is inside it (no winner can be called); 2 A and B share no test type, or one did not "
    "finish (the error names its resume); 4 runtime failure")
MAX_LISTED = 20


def compare_command(args: argparse.Namespace, reader: RunReader) -> int:
    a, b = load_side(reader, args.a), load_side(reader, args.b)
    results = compare(a, b)
    changed = what_differs(reader, a.run_id, b.run_id)
    if args.json:
        print(json.dumps({"a": {"run_id": a.run_id, "label": a.label,
                                "usage": a.usage.to_json()},
                          "b": {"run_id": b.run_id, "label": b.label,
                                "usage": b.usage.to_json()},
                          "differences": [d.to_json() for d in changed],
                          "metrics": [r.to_json() for r in results]}, indent=1))
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
    """The exit status follows the types that changed: a type whose gap clears the noise
    floor decides (0), so a type inside the noise beside it (one that did not change) does not
    fail a CI step; only when no type is decided and some gap was gated is it 5."""
    if not results:
        return ExitStatus.USAGE
    return ExitStatus.INCONCLUSIVE if no_winner(results) else ExitStatus.OK


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
    return "\n".join(lines)
