"""What the reports say of a sequential run: a type's verdict is its confidence sequence's,
not its accuracy's threshold check (the accuracy covers only the entries called), and where
each type settled. For any other run (``sequential`` ``None``) every function here gives what
the reports said before sequential runs existed, word for word."""

from __future__ import annotations

from collections.abc import Sequence

from evalkit.reports._common import FAIL, PASS, threshold_text
from evalkit.reports._markdown import cell, table
from evalkit.stats import SequentialOutcome, TypeMetrics


def type_verdict(metrics: TypeMetrics, sequential: SequentialOutcome | None) -> str:
    """PASS or FAIL, or a sequential run's sequence verdict (INCONCLUSIVE too; against a
    baseline, better and within the margin pass)."""
    settled = None if sequential is None else sequential.settlement(metrics.test_type)
    if settled is not None:
        return settled.gate
    return "PASS" if metrics.passed else "FAIL"


def verdict_mark(verdict: str) -> str:
    """✓ or ✗; INCONCLUSIVE in words (no mark reads as undecided at a glance)."""
    return {"PASS": PASS, "FAIL": FAIL}.get(verdict, verdict)


def missed(metrics: TypeMetrics, sequential: SequentialOutcome | None) -> tuple[str, ...]:
    """Why a type did not pass: its threshold misses, or its sequence's verdict."""
    settled = None if sequential is None else sequential.settlement(metrics.test_type)
    if settled is None:
        return metrics.failures
    if settled.gate == "PASS":
        return ()
    return (settled.failure(metrics.threshold.min_accuracy),)


def asked(sequential: SequentialOutcome) -> str:
    """The question, the level and where the run stopped, for a report's header."""
    return (f"{cell(sequential.question)} (*{cell(sequential.asked())}*)"
            f"{cell(sequential.against_text())} at {sequential.confidence:.0%}; "
            f"{sequential.text()}")


def sequential_section(sequential: SequentialOutcome, metrics: Sequence[TypeMetrics]
                       ) -> list[str]:
    """The summary's section on a sequential run: per type where it settled and its
    interval there, in the order of ``metrics``."""
    rows = [[cell(m.test_type), settled.point(), settled.interval(),
             threshold_text(m) if settled.margin is None else
             f"candidate - baseline ≥ -{settled.margin:g}", str(len(settled.not_called))]
            for m in metrics if (settled := sequential.settlement(m.test_type)) is not None]
    level = f"{sequential.confidence:.0%}"
    return [
        "## Sequential Verdict", "",
        f"Asked: *{cell(sequential.asked())}* ({cell(sequential.question)})"
        f"{cell(sequential.against_text())}, at {level}. The "
        f"entries were called in a seeded random order until every type's verdict was "
        f"settled: {sequential.text()}.", "",
        table(["Type", "Verdict at the stop", f"Confidence sequence ({level})", "Threshold",
               "Units not called"], rows), "",
        "A type's verdict is its confidence sequence's (valid at whichever look the run "
        "stopped), not its accuracy's threshold check: that accuracy covers only the entries "
        "called. A type settles at the first look whose interval clears its threshold ("
        "against a baseline: lies above 0, inside the margin or below minus the margin); "
        "INCONCLUSIVE: every unit was seen and the interval still straddles it.", ""]


def settled_line(sequential: SequentialOutcome, metrics: TypeMetrics) -> list[str]:
    """A type report's line on its sequence (none for a type no sequence gated)."""
    settled = sequential.settlement(metrics.test_type)
    if settled is None:
        return []
    return [f"**Sequential verdict:** {settled.point()}, confidence sequence "
            f"{settled.interval()} at {sequential.confidence:.0%} at the stop "
            f"({len(settled.not_called)} units not called). The accuracy above covers the "
            "entries called; the verdict is the sequence's.", ""]
