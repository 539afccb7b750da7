"""The report of one test type: overall results, convergence, per-item results, notes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evalkit.dataset import BIAS, COMPARATIVE_TYPES, REPEATABILITY
from evalkit.records import (
    ItemResult,
    RunRecord,
    TypeNames,
    TypeResult,
    names,
)
from evalkit.reports._common import FAIL, MAX_ROWS, PASS, distinct, header, number
from evalkit.reports._markdown import cell, table
from evalkit.reports._settlement import (
    asked,
    missed,
    settled_line,
    type_verdict,
    verdict_mark,
)
from evalkit.stats import STABILITY_TOLERANCE_PP, SequentialOutcome, TypeMetrics, chart_points


def _thresholds(metrics: TypeMetrics) -> str:
    text = f"accuracy ≥ {metrics.threshold.min_accuracy:g}"
    if metrics.threshold.min_f1 is not None:
        text += f", F1 ≥ {metrics.threshold.min_f1:g}"
    return text


def _scoring(record: RunRecord, result: TypeResult) -> str:
    n = TypeNames.of(result.test_type)
    similarity = record.params.get(n.similarity_threshold)
    if result.scorer == "llm_judge":
        model = record.params.get(names.JUDGE_MODEL_PARAM, "?")
        prompt = record.params.get(n.judge_prompt, "?")
        return f"llm_judge ({cell(model)} at temperature 0; prompt {cell(prompt)})"
    if result.scorer == "semantic_similarity" and similarity is not None:
        how = ("average pairwise cosine" if result.test_type in COMPARATIVE_TYPES
               else "cosine with expected_output")
        return f"semantic_similarity ({how} ≥ {float(similarity):g}, all-MiniLM-L6-v2)"
    return result.scorer


# --- per-type reports -----------------------------------------------------------------------


def type_report(record: RunRecord, result: TypeResult, metrics: TypeMetrics,
                sequential: SequentialOutcome | None = None) -> str:
    """The type's report; a sequential run's (``sequential``) gives its sequence's verdict."""
    extra = [("Thresholds", _thresholds(metrics)), ("Scoring", _scoring(record, result))]
    if result.test_type == REPEATABILITY:
        extra.insert(0, ("Repeat count", record.params.get(names.REPEAT_COUNT_PARAM, "—")))
    if result.test_type == BIAS:
        skipped = ", ".join(cell(s.bias_group) for s in result.skipped) or "none"
        extra += [("Scoring approach", "outputs of the variants of each bias group compared "
                   "with each other"),
                  ("Groups evaluated", str(len(result.items))),
                  ("Groups skipped", f"{len(result.skipped)} ({skipped})")]
    if sequential is not None:
        extra.append(("Sequential", asked(sequential)))
    lines = header(record, f"Eval Report: {result.test_type}", extra)
    lines += _overall(metrics, type_verdict(metrics, sequential))
    if sequential is not None:
        lines += settled_line(sequential, metrics)
    lines += _convergence(metrics)
    lines += _per_item(result)
    lines += _notes(result, metrics, _also_repeated(record, result),
                    missed(metrics, sequential))
    return "\n".join(lines).rstrip("\n") + "\n"


def _overall(metrics: TypeMetrics, verdict: str) -> list[str]:
    if metrics.samples:
        accuracy = f"{metrics.accuracy:.3f} [{metrics.ci_low:.3f}, {metrics.ci_high:.3f}]"
        figures = [number(metrics.f1), number(metrics.precision), number(metrics.recall)]
    else:
        accuracy, figures = "—", ["—", "—", "—"]
    row = [TypeNames.of(metrics.test_type).accuracy, accuracy, *figures, str(metrics.samples),
           _thresholds(metrics), verdict_mark(verdict)]
    return [
        "## Overall Results", "",
        table(["Metric", "Accuracy (95% CI)", "F1", "Precision", "Recall", "Samples",
               "Threshold", "Status"], [row]),
        "", f"**Overall: {verdict}**", "",
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
        # the picture for viewers that show mermaid as code (MLflow's artifact viewer)
        f"![{metrics.test_type}: cumulative accuracy and F1]"
        f"({names.convergence_chart(metrics.test_type)})", "",
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


def _measure(result: TypeResult) -> tuple[list[str], Callable[[ItemResult], list[str]]]:
    """The column of what the scorer measured: a cosine, or the judge's reply."""
    if result.scorer == "semantic_similarity":
        label = "Cosine" if result.test_type not in COMPARATIVE_TYPES \
            else "Avg pairwise cosine"
        return [label], lambda i: [number(i.similarity)]
    if result.scorer == "llm_judge":
        return ["Judge"], lambda i: [_judgement(i)]
    if any(i.score is not None or i.rationale is not None for i in result.items):
        return ["Score", "Rationale"], lambda i: [number(i.score), cell(i.rationale or "—", 80)]
    return [], lambda i: []


def _judgement(item: ItemResult) -> str:
    if item.judge_reply is None:
        return "—"
    if item.invalid_judgement:
        return f"invalid: {cell(repr(item.judge_reply), 40)}"
    return cell(item.judge_reply)


def _shown(items: Sequence[ItemResult]) -> tuple[Sequence[ItemResult], list[str]]:
    """Failures first (errors among them), then the rest, each in dataset order; at most
    :data:`MAX_ROWS`, with a pointer to the full table beyond that."""
    ordered = [i for i in items if not i.correct] + [i for i in items if i.correct]
    if len(items) <= MAX_ROWS:
        return ordered, []
    return ordered[:MAX_ROWS], ["", f"Showing {MAX_ROWS} of {len(items)} items, failures "
                                "first. Every item is in the run's results/entries.json "
                                "(per-entry table) and results/evaluation.json artifacts."]


def _per_item(result: TypeResult) -> list[str]:
    lines = ["## Per-item Results", "", "Failures first, then passes, each in dataset order.",
             ""]
    measured, measure = _measure(result)
    items, note = _shown(result.items)
    if result.test_type == REPEATABILITY:
        rows = [[cell(i.id), cell(i.input, 60), distinct(i.outputs), *measure(i), _verdict(i)]
                for i in items]
        lines.append(table(["ID", "Input", "Outputs (how the repeats differ)", *measured,
                            "Result"], rows))
    elif result.test_type == BIAS:
        rows = [[cell(i.id), str(len(i.entry_ids)), "<br>".join(cell(e) for e in i.entry_ids),
                 distinct(i.outputs), *measure(i), _verdict(i)]
                for i in items]
        lines.append(table(["Bias group", "Variants", "Entry IDs",
                            "Outputs (how the variants differ)", *measured, "Consistent"],
                           rows) if rows else "No group was scored.")
    else:
        rows = [[cell(i.id), cell(i.input, 60), cell(i.expected, 60),
                 "—" if i.outputs[0] is None and i.error else cell(i.outputs[0], 80),
                 *measure(i), _verdict(i)]
                for i in items]
        lines.append(table(["ID", "Input", "Expected", "Actual", *measured, "Correct"], rows))
    return [*lines, *note, ""]


def _id_list(ids: Sequence[str], shown: int = 50) -> str:
    listed = ", ".join(cell(i) for i in ids[:shown])
    return listed + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def _also_repeated(record: RunRecord, result: TypeResult) -> list[str]:
    """The ids of a non-comparative type's entries that repeatability also called several
    times: the type scored only their first output."""
    if result.test_type in COMPARATIVE_TYPES or record.evaluation is None:
        return []
    repeated = {i.id for t in record.evaluation.types if t.test_type == REPEATABILITY
                for i in t.items}
    return [i.id for i in result.items if i.id in repeated]


def _notes(result: TypeResult, metrics: TypeMetrics, also_repeated: Sequence[str],
           missed: Sequence[str]) -> list[str]:
    unit = "bias groups" if result.test_type == BIAS else "entries"
    notes = [f"Accuracy is the share of {unit} whose score matched its expectation; the 95% "
             f"interval is a Wilson score interval over n = {metrics.samples} {unit}."]
    if result.test_type == REPEATABILITY:
        notes.append("Each entry was invoked the repeat count times and its outputs were "
                     "compared with each other; expected_output is not used.")
    if also_repeated:
        notes.append(f"{len(also_repeated)} of these entries are also repeatability entries, "
                     "invoked the repeat count times: each is scored here on its first "
                     "output (call 0), one output per entry as every other entry is, so the "
                     "accuracy stays the share of single calls that are right; whether its "
                     "other outputs say the same is repeatability's verdict "
                     f"({names.report_name(REPEATABILITY)}): {_id_list(also_repeated)}.")
    invalid = [i.id for i in result.items if i.invalid_judgement]
    if invalid:
        notes.append(f"{len(invalid)} invalid judgement(s), scored 0 and never a pass (the "
                     "judge must reply exactly 0 or 1): " + _id_list(invalid) + ".")
    annotated = [i.id for i in result.items if not i.expected_pass]
    if annotated:
        notes.append("Annotated as expected to fail (negatives for precision): "
                     + _id_list(annotated) + ".")
    notes += [f"Skipped bias group {cell(s.bias_group)} "
              f"({', '.join(cell(e) for e in s.entry_ids)}): {cell(s.reason, 200)}."
              for s in result.skipped]
    errors = [i for i in result.items if i.error]
    notes += [f"Error in {cell(i.id)}: {cell(i.error, 300)}" for i in errors[:MAX_ROWS]]
    if len(errors) > MAX_ROWS:
        notes.append(f"{len(errors) - MAX_ROWS} more errors are in results/evaluation.json.")
    for failure in missed:
        notes.append(f"Threshold missed: {cell(failure, 200)}.")
    return ["## Notes", "", *(f"- {n}" for n in notes), ""]
