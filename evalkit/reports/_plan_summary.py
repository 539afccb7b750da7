"""What ``evalkit plan`` prints: the plan's conclusions in a few lines per source and per test
type, for a terminal. Every table behind them (vote errors for N = 1..max, variance components,
contrast intervals) is in ``report-planning.md``.
"""

from __future__ import annotations

import textwrap

from evalkit.reports._planning import signed_interval
from evalkit.stats import DECISION_CROSSOVER_P, MeasuredP, Plan

WIDTH = 100
_INDENT = "  "


def plan_summary(plan: Plan) -> str:
    """The measured p of each source with the N each vote rule needs, then per test type what
    the next unit of budget should buy, the labels still to give and the contrasts."""
    lines = [f"Plan for {plan.experiment} (target error {plan.target_error:g} of an "
             "aggregated verdict)", "", "Per-run disagreement p:"]
    for measured in plan.measured:
        lines += _measured(measured)
    if plan.allocations:
        lines += ["", f"Items or replicates, from replicate series {plan.allocation_run}:"]
        for test_type, allocation in plan.allocations.items():
            lines += _wrapped(f"{test_type}: buy {allocation.buy} — {allocation.advice()}.")
    if plan.labels:
        lines += ["", f"People's labels, from run {plan.labels[0].run_id} (for a corrected "
                  f"accuracy of ±{plan.labels[0].half_width:g}):"]
        for x in plan.labels:
            more = ("out of reach with these entries: add entries" if x.needed is None
                    else f"{x.more} more to give" if x.more else "enough given")
            lines += _wrapped(f"{x.test_type}: {x.labels_drawn} drawn labels now; {more}")
    if plan.against is not None:
        lines += ["", f"Contrast with {plan.against} (Bonferroni over {plan.contrast_count}):"]
        for c in plan.contrasts:
            needed = "" if c.replicates_needed is None else (
                f"; {c.replicates_needed} replicates for ±{plan.half_width:g}")
            population = "" if c.population_interval is None else (
                f"; over the population of items {signed_interval(c.population_interval)}")
            lines += _wrapped(f"{c.test_type}: A - B on these {c.items} items "
                              f"{signed_interval(c.t_interval)}{population}{needed}")
    return "\n".join(lines)


def _measured(measured: MeasuredP) -> list[str]:
    d = measured.disagreement
    rules = "; ".join(f"{rule} {_n(n)}" for rule, n in measured.table.recommended.items())
    upper = ", ".join(_n(n) for n in measured.conservative.recommended.values())
    text = (f"{measured.source} (run {measured.run_id}): p = {d.p:.4f} [{d.interval.low:.4f}, "
            f"{d.interval.high:.4f}], {d.minority} of {d.observations} answers in {d.groups} "
            f"groups. Smallest N for the target: {rules} (at p's upper end: {upper}).")
    if d.minority == 0:
        text += (" No disagreement was seen, which does not make p zero: these answers "
                 "cannot rule out p's upper end, so read the N at it.")
    if d.p >= DECISION_CROSSOVER_P:
        text += (f" p is at or above the crossover p* = {DECISION_CROSSOVER_P:g}: no "
                 "reasonable N rescues the decision.")
    return _wrapped(text)


def _n(n: int | None) -> str:
    return "unreachable" if n is None else str(n)


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=_INDENT, subsequent_indent=_INDENT * 2,
                         break_on_hyphens=False)
