"""Markdown reports, rendered from what an MLflow run holds and nothing else.

:func:`render_reports` is a pure function of a :class:`RunRecord`: the same run always renders
to the same bytes, which is how ``evalkit report RUN_ID`` reproduces a past run's reports. No
LLM writes any part of a report; all output text goes through :mod:`evalkit._markdown` so it
cannot break a table or the chart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from evalkit._markdown import cell, fenced, table
from evalkit._metrics import TypeMetrics, threshold_from_params
from evalkit._scoring import ItemResult, TypeResult
from evalkit._statistics import STABILITY_TOLERANCE_PP, chart_points
from evalkit._tracking import RunRecord
from evalkit.scorers import as_text

HUMAN_REVIEW_REPORT = "report-human-review.md"
PASS, FAIL = "✓", "✗"


def report_name(test_type: str) -> str:
    return f"report-{test_type}.md"


def render_reports(record: RunRecord) -> dict[str, str]:
    """File name -> markdown for every report of the run."""
    reports = {}
    for result in record.evaluation.types:
        metrics = TypeMetrics.from_mlflow(
            result.test_type, record.metrics, record.histories,
            threshold_from_params(result.test_type, record.params))
        reports[report_name(result.test_type)] = _type_report(record, result, metrics)
    if record.evaluation.human_review:
        reports[HUMAN_REVIEW_REPORT] = _human_review_report(record)
    return reports


# --- shared parts ---------------------------------------------------------------------------


def _header(record: RunRecord, title: str, extra: Sequence[tuple[str, str]] = ()) -> list[str]:
    params, tags = record.params, record.tags
    started = datetime.fromtimestamp(record.start_time_ms / 1000, tz=UTC)
    commit = tags.get("git_commit", "unknown")
    source = f"{cell(tags.get('mlflow.source.name', 'unknown'))} at git {cell(commit[:12])}"
    if tags.get("git_dirty") == "true":
        source += " (with uncommitted changes)"
    lines = [
        f"# {title}", "",
        f"- **Date:** {started:%Y-%m-%d %H:%M:%S} UTC",
        f"- **Dataset:** {cell(params.get('DATASET_PATH', ''))} ({params.get('dataset_entries')} "
        f"entries, sha256 {cell(params.get('dataset_digest', '')[:16])})",
        f"- **Script:** {source}",
        *(f"- **{label}:** {value}" for label, value in extra),
        f"- **MLflow:** experiment {cell(record.experiment_name)} (id {record.experiment_id}), "
        f"run {record.run_id} ({cell(record.run_name)})",
        f"- **Groups filter:** {cell(tags.get('groups_filter', 'all'))}",
        "",
    ]
    return lines


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _thresholds(metrics: TypeMetrics) -> str:
    text = f"accuracy ≥ {metrics.threshold.min_accuracy:g}"
    if metrics.threshold.min_f1 is not None:
        text += f", F1 ≥ {metrics.threshold.min_f1:g}"
    return text


def _scoring(record: RunRecord, result: TypeResult) -> str:
    similarity = record.params.get(f"{result.test_type}_similarity_threshold")
    if result.scorer == "semantic_similarity" and similarity is not None:
        how = ("average pairwise cosine" if result.test_type in ("repeatability", "bias")
               else "cosine with expected_output")
        return f"semantic_similarity ({how} ≥ {float(similarity):g}, all-MiniLM-L6-v2)"
    return result.scorer


# --- per-type reports -----------------------------------------------------------------------


def _type_report(record: RunRecord, result: TypeResult, metrics: TypeMetrics) -> str:
    extra = [("Thresholds", _thresholds(metrics)), ("Scoring", _scoring(record, result))]
    if result.test_type == "repeatability":
        extra.insert(0, ("Repeat count", record.params.get("REPEAT_COUNT", "—")))
    if result.test_type == "bias":
        skipped = ", ".join(cell(s.bias_group) for s in result.skipped) or "none"
        extra += [("Scoring approach", "outputs of the variants of each bias group compared "
                   "with each other"),
                  ("Groups evaluated", str(len(result.items))),
                  ("Groups skipped", f"{len(result.skipped)} ({skipped})")]
    lines = _header(record, f"Eval Report: {result.test_type}", extra)
    lines += _overall(metrics)
    lines += _convergence(metrics)
    lines += _per_item(result)
    lines += _notes(result, metrics)
    return "\n".join(lines).rstrip("\n") + "\n"


def _overall(metrics: TypeMetrics) -> list[str]:
    if metrics.samples:
        accuracy = f"{metrics.accuracy:.3f} [{metrics.ci_low:.3f}, {metrics.ci_high:.3f}]"
        figures = [_number(metrics.f1), _number(metrics.precision), _number(metrics.recall)]
    else:
        accuracy, figures = "—", ["—", "—", "—"]
    row = [f"{metrics.test_type}_accuracy", accuracy, *figures, str(metrics.samples),
           _thresholds(metrics), PASS if metrics.passed else FAIL]
    return [
        "## Overall Results", "",
        table(["Metric", "Accuracy (95% CI)", "F1", "Precision", "Recall", "Samples",
               "Threshold", "Status"], [row]),
        "", f"**Overall: {'PASS' if metrics.passed else 'FAIL'}**", "",
    ]


def _convergence(metrics: TypeMetrics) -> list[str]:
    lines = ["## Convergence Analysis", ""]
    convergence = metrics.convergence
    if convergence is None:
        return [*lines, "No samples were scored, so there is nothing to chart.", ""]
    points = chart_points(metrics.samples)
    accuracy = ", ".join(f"{convergence.accuracy[k - 1]:.3f}" for k in points)
    f1 = ", ".join(f"{convergence.f1[k - 1]:.3f}" for k in points)
    tolerance = f"≤ {STABILITY_TOLERANCE_PP:g} pp"
    lines += [
        "Cumulative accuracy (first line) and F1 (second line) after each sample.", "",
        "```mermaid", "xychart-beta",
        f'    title "{metrics.test_type}: cumulative accuracy and F1"',
        f'    x-axis "Samples" [{", ".join(str(k) for k in points)}]',
        '    y-axis "Score" 0 --> 1',
        f"    line [{accuracy}]", f"    line [{f1}]", "```", "",
        table(["Metric", f"Change over the last {convergence.window} samples",
               f"Stable ({tolerance})"],
              [["Accuracy", f"{convergence.accuracy_change_pp:.1f} pp",
                PASS if convergence.accuracy_change_pp <= STABILITY_TOLERANCE_PP else FAIL],
               ["F1", f"{convergence.f1_change_pp:.1f} pp",
                PASS if convergence.f1_change_pp <= STABILITY_TOLERANCE_PP else FAIL]]),
        "", f"**Recommendation:** {convergence.recommendation}", "",
    ]
    return lines


def _verdict(item: ItemResult) -> str:
    mark = PASS if item.passed else FAIL
    if item.error:
        return f"{FAIL} error"
    return mark if item.expected_pass else f"{mark} (expected to fail)"


def _per_item(result: TypeResult) -> list[str]:
    lines = ["## Per-item Results", ""]
    similarity = result.scorer == "semantic_similarity"
    if result.test_type == "repeatability":
        header = ["ID", "Input", "Outputs (distinct of all repeats)"]
        header += ["Avg pairwise cosine"] if similarity else []
        rows = [[cell(i.id), cell(i.input, 60), _distinct(i.outputs),
                 *([_number(i.similarity)] if similarity else []), _verdict(i)]
                for i in result.items]
        lines.append(table([*header, "Result"], rows))
    elif result.test_type == "bias":
        header = ["Bias group", "Variants", "Entry IDs", "Outputs"]
        header += ["Avg pairwise cosine"] if similarity else []
        rows = [[cell(i.id), str(len(i.entry_ids)), "<br>".join(cell(e) for e in i.entry_ids),
                 "<br>".join(cell(o, 60) for o in i.outputs),
                 *([_number(i.similarity)] if similarity else []), _verdict(i)]
                for i in result.items]
        lines.append(table([*header, "Consistent"], rows) if rows else "No group was scored.")
    else:
        header = ["ID", "Input", "Expected", "Actual"]
        header += ["Cosine"] if similarity else []
        rows = [[cell(i.id), cell(i.input, 60), cell(i.expected, 60),
                 cell(i.outputs[0], 80) if not i.error else "—",
                 *([_number(i.similarity)] if similarity else []), _verdict(i)]
                for i in result.items]
        lines.append(table([*header, "Correct"], rows))
    return [*lines, ""]


def _distinct(outputs: Sequence[Any], shown: int = 3) -> str:
    counts = Counter(as_text(o) for o in outputs)
    parts = [f"{n}× {cell(text, 40)}" for text, n in counts.most_common(shown)]
    if len(counts) > shown:
        parts.append(f"+{len(counts) - shown} more")
    return f"{len(counts)} of {len(outputs)}: " + "; ".join(parts) if parts else "—"


def _notes(result: TypeResult, metrics: TypeMetrics) -> list[str]:
    unit = "bias groups" if result.test_type == "bias" else "entries"
    notes = [f"Accuracy is the share of {unit} whose score matched its expectation; the 95% "
             f"interval is a Wilson score interval over n = {metrics.samples} {unit}."]
    if result.test_type == "repeatability":
        notes.append("Each entry was invoked the repeat count times and its outputs were "
                     "compared with each other; expected_output is not used.")
    annotated = [i.id for i in result.items if not i.expected_pass]
    if annotated:
        notes.append("Annotated as expected to fail (negatives for precision): "
                     + ", ".join(cell(a) for a in annotated) + ".")
    notes += [f"Skipped bias group {cell(s.bias_group)} "
              f"({', '.join(cell(e) for e in s.entry_ids)}): {cell(s.reason, 200)}."
              for s in result.skipped]
    notes += [f"Error in {cell(i.id)}: {cell(i.error, 300)}" for i in result.items if i.error]
    for failure in metrics.failures:
        notes.append(f"Threshold missed: {cell(failure, 200)}.")
    return ["## Notes", "", *(f"- {n}" for n in notes), ""]


# --- human review ---------------------------------------------------------------------------


def _human_review_report(record: RunRecord) -> str:
    items = record.evaluation.human_review
    lines = _header(record, "Human Review Checklist", [("Entries to review", str(len(items)))])
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
