"""``summary.md``: every type of a run at a glance, failing types first, with links to each
report and to the run in the MLflow UI."""

from __future__ import annotations

from collections.abc import Sequence

from evalkit.records import (
    RunRecord,
    RunUsage,
    TypeResult,
    names,
)
from evalkit.reports._common import (
    accuracy_text,
    corrected_text,
    header,
    threshold_text,
)
from evalkit.reports._markdown import cell, table
from evalkit.reports._settlement import (
    asked,
    missed,
    sequential_section,
    type_verdict,
    verdict_mark,
)
from evalkit.stats import SequentialOutcome, TypeMetrics


def summary_report(record: RunRecord, results: Sequence[tuple[TypeResult, TypeMetrics]],
                   report_names: Sequence[str], judge: str | None = None,
                   sequential: SequentialOutcome | None = None) -> str:
    """The run's verdict and one row per test type (failing types first); ``report_names``
    are the type reports in the order of ``results``, ``judge`` the judge report if any.
    A sequential run's verdicts are its sequences' (``sequential``), and a section says where
    each settled."""
    verdicts = {m.test_type: type_verdict(m, sequential) for _, m in results}
    verdict = (sequential.verdict if sequential is not None
               else "PASS" if all(m.passed for _, m in results) else "FAIL")
    url = record.tags.get(names.RUN_URL_TAG)
    run_link = f"[{record.run_id}]({url})" if url else record.run_id
    metrics = record.metrics
    counts = ", ".join(f"{int(metrics[key])} {label}" for key, label in (
        (names.ENTRIES_METRIC, "entries"), (names.CALLS_METRIC, "calls"),
        (names.COMPONENT_ERRORS_METRIC, "component errors"))
        if key in metrics)
    usage = RunUsage.from_metrics(metrics).text()
    lines = header(record, "Eval Summary", [
        ("Verdict", f"**{verdict}**"), ("Calls", counts or "—"),
        *([("Sequential", asked(sequential))] if sequential is not None else []),
        *([("Tokens and cost", usage)] if usage else []), ("Run in the MLflow UI", run_link)])
    ordered = sorted(zip(results, report_names, strict=True),
                     key=lambda r: verdicts[r[0][1].test_type] == "PASS")
    corrected = any(m.corrected for (_, m), _ in ordered)
    rows = [[cell(m.test_type), verdict_mark(verdicts[m.test_type]), accuracy_text(m),
             *([corrected_text(m)] if corrected else []), threshold_text(m), _failed_items(result),
             f"[{name}]({name})"]
            for (result, m), name in ordered]
    lines += ["## Test Types", "",
              table(["Type", "Verdict", "Accuracy (95% CI)",
                     *(["Corrected by labels (95% CI)"] if corrected else []), "Threshold",
                     "Failed items", "Report"], rows), ""]
    if sequential is not None:
        lines += sequential_section(sequential, [m for (_, m), _ in ordered])
    misses = [f for (_, m), _ in ordered for f in missed(m, sequential)]
    if misses:
        lines += ["## Thresholds Missed", "", *(f"- {cell(f, 200)}" for f in misses), ""]
    called = " called" if sequential is not None else ""
    lines += [f"Accuracy intervals are 95% Wilson intervals over the type's entries{called} "
              "(bias: its groups). Each report lists its items failures first.", ""]
    if judge:
        lines += [("Corrected accuracies take the scorer's errors, measured by people's labels, "
                   "into account; a type with one is checked against its threshold by it. "
                   if corrected else "")
                  + f"How each scorer agrees with people: [{judge}]({judge}).", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _failed_items(result: TypeResult) -> str:
    failed = [i for i in result.items if not i.correct]
    errors = sum(i.error is not None for i in failed)
    text = f"{len(failed)} of {len(result.items)}"
    return text + (f" ({errors} errors)" if errors else "")
