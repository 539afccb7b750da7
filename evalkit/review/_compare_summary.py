"""The comparison as CI shows it: the Markdown ``evalkit compare`` appends to a GitHub Actions
job summary or writes as a pull request comment, and the texts it shares with the terminal.

A heading that is the comparison's verdict (the types where A is better or worse; else
INCONCLUSIVE when no gap clears the noise floor replicates measured; else not gated), the two
runs linked to the MLflow UI, one table row per shared test type (both accuracies, the gap
with its paired interval over the shared items, the noise floor, the items that flipped, the
verdict), then what differs between the runs as recorded. With margins the heading opens with
the non-inferiority answer and each row gains B − A with its interval against the margin.
Built from the same objects the terminal prints, with the blocks of :mod:`evalkit.reports`
that keep names from breaking the table; no item id is listed, so the summary stays one
screen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from evalkit.reports import fenced, inline, link, table
from evalkit.review._compare import (
    FLOOR_MULTIPLE,
    ComparisonVerdict,
    MetricComparison,
    Side,
    margin_verdict,
    no_winner,
)
from evalkit.review._differences import Difference, shown_value
from evalkit.stats import MarginCheck, MarginVerdict

_VERDICT_CELLS = {
    ComparisonVerdict.BETTER: "**A better**",
    ComparisonVerdict.WORSE: "**A worse**",
    ComparisonVerdict.INSIDE_NOISE: "INCONCLUSIVE: inside the noise",
    ComparisonVerdict.NO_FLOOR: "not gated (no replicates)",
}
_NOTHING_DIFFERS = "nothing recorded differs (params, prompts, code, dataset, judge, versions)"


def floor_text(r: MetricComparison) -> str:
    """The noise floor a type's gap must clear, as the terminal and the summary say it."""
    if r.floor is None:
        return "none (no replicates)"
    if r.floor_too_high:
        return (f"{r.floor:.2%}: too high to ever call a winner (a gap would have to exceed "
                "100%): add items or replicates")
    return f"{r.floor:.2%} (a gap must exceed {FLOOR_MULTIPLE * r.floor:.2%})"


_MARGIN_READING = {
    MarginVerdict.NO_WORSE: "no worse: the interval lies above",
    MarginVerdict.WORSE: "worse by more than the margin: the interval lies below",
    MarginVerdict.INCONCLUSIVE: "INCONCLUSIVE: the interval holds",
}


def margin_text(check: MarginCheck) -> str:
    """B - A over the shared items with its interval, read against ``-margin``; for B run
    against A (``--against``), its confidence sequence at the stop."""
    if check.sequence is not None:
        look = check.sequence
        at = (f"settled at {look.settled_at} of {look.total}" if look.settled_at
              else f"after {look.n} of {look.total}")
        return (f"B - A [{look.low:+.3f}, {look.high:+.3f}] ({look.confidence:.0%} confidence "
                f"sequence of B's run against A, {at} items) against margin "
                f"{check.margin:.3f}: {look.verdict}")
    if check.difference is None:
        return f"margin {check.margin:.3f}: INCONCLUSIVE: no item shared"
    d = check.difference
    return (f"B - A {d.gap:+.3f} [{d.low:+.3f}, {d.high:+.3f}] ({d.confidence:.0%} paired) "
            f"against margin {check.margin:.3f}: {_MARGIN_READING[check.verdict]} "
            f"{-check.margin:+.3f}")


def margin_line(results: Sequence[MetricComparison]) -> str | None:
    """The non-inferiority answer in one line (``None`` when no type was given a margin)."""
    verdict = margin_verdict(results)
    if verdict is None:
        return None
    on = {v: ", ".join(r.test_type for r in results if r.margin and r.margin.verdict is v)
          for v in MarginVerdict}
    if verdict is MarginVerdict.NO_WORSE:
        return f"B no worse than A by more than the margin on {on[verdict]}"
    if verdict is MarginVerdict.WORSE:
        return f"B worse than A by more than the margin on {on[verdict]}"
    return (f"INCONCLUSIVE against the margin on {on[verdict]} (B - A's interval holds "
            "-margin: more shared items would settle it)")


def comparison_verdict(results: Sequence[MetricComparison]) -> str:
    """The comparison in one line: where A is better or worse, else why no winner."""
    if not results:
        return "A and B share no test type with an accuracy"
    called = [f"{verdict} on {', '.join(r.test_type for r in results if r.verdict is verdict)}"
              for verdict in (ComparisonVerdict.BETTER, ComparisonVerdict.WORSE)
              if any(r.verdict is verdict for r in results)]
    if called:
        return "; ".join(called)
    if no_winner(results):
        return "INCONCLUSIVE: no test type's gap clears the noise floor replicates measured"
    return "not gated (no replicates measured a noise floor): each gap with its paired interval"


def _gap(r: MetricComparison) -> str:
    """The gap the noise gate reads, with the paired interval over the shared items (the
    same gap when every item is shared), and the gap corrected by labels where there is one."""
    shown = f"{r.gap:+.3f}"
    if r.paired is not None:
        p = r.paired
        paired = (f"[{p.low:+.3f}, {p.high:+.3f}] ({p.confidence:.0%} paired, {p.items} shared "
                  "items)")
        shown += f" {paired}" if math.isclose(p.gap, r.gap) else (
            f"; over the shared items {p.gap:+.3f} {paired}")
    if r.corrected is not None:
        c = r.corrected
        shown += f"; corrected by labels {c.gap:+.3f} [{c.low:+.3f}, {c.high:+.3f}]"
    return shown  # figures and fixed words only: nothing to escape


def _margin_cell(check: MarginCheck | None) -> str:
    if check is None:
        return "no margin given"
    text = margin_text(check)  # figures and fixed words only: nothing to escape
    return f"**{text}**" if check.verdict is MarginVerdict.WORSE else text


def _flipped(r: MetricComparison) -> str:
    shown = f"{len(r.right_in_a_only)} / {len(r.right_in_b_only)} of {r.shared_items}"
    return shown + (f" ({r.undecided_items} undecided)" if r.undecided_items else "")


def _side(name: str, side: Side) -> str:
    usage = f"; {inline(side.usage.text(), 200)}" if side.usage.reported else ""
    return f"{name}: run {link(side.run_id, side.run_url)} ({inline(side.label, 200)}){usage}"


def _differences(changed: Sequence[Difference]) -> list[str]:
    if not changed:
        return [f"What differs: {_NOTHING_DIFFERS}", ""]
    lines = ["What differs (A → B):", ""]
    for d in changed:
        a, b = (inline(shown_value(value), 200) for value in (d.a, d.b))
        lines.append(f"- {inline(d.section)} {inline(d.name, 200)}: {a} → {b}")
        if d.diff:
            lines.append(fenced("\n".join(d.diff), indent="  "))
    return [*lines, ""]


def compare_markdown(a: Side, b: Side, results: Sequence[MetricComparison],
                     changed: Sequence[Difference]) -> str:
    """The job summary of ``evalkit compare A B``: its verdict, the two runs, a row per shared
    type and what differs. Ends with a blank line, so that appended sections stay apart."""
    margined = margin_verdict(results) is not None
    rows = [[inline(r.test_type), f"{r.a:.3f}", f"{r.b:.3f}", _gap(r), floor_text(r),
             _flipped(r), _VERDICT_CELLS[r.verdict]]
            + ([_margin_cell(r.margin)] if margined else []) for r in results]
    heading = "; ".join(filter(None, (margin_line(results), comparison_verdict(results))))
    lines = [f"### evalkit compare: {inline(heading, 400)}", "",
             _side("A", a) + "<br>", _side("B", b), ""]
    if rows:
        lines += [table(["Type", "A", "B", "Gap A − B", "Noise floor",
                         "Right in A only / B only", "Verdict"]
                        + (["B − A against the margin"] if margined else []), rows), ""]
    return "\n".join([*lines, *_differences(changed)])
