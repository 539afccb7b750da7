"""``report-judge.md``: each scorer held against people's labels.

Per type: the raw accuracy (every verdict taken as right) beside the accuracy corrected for
the scorer's errors, each with its interval; the labels, where they came from and how many
more a correction or a narrower interval needs; how the scorer agrees with people; and the
entries where they disagree. Rendered from the run's scored items, its draws and the
labels on its traces, so ``evalkit report RUN_ID`` shows labels added after the run.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalkit.records import RunRecord, TypeNames, TypeResult, names
from evalkit.reports._common import header, number
from evalkit.reports._markdown import cell, table
from evalkit.stats import (
    BUDGET_HALF_WIDTH,
    MIN_LABELS_PER_CLASS,
    Agreement,
    CorrectedAccuracy,
    JudgeCheck,
    JudgeStability,
    TypeMetrics,
    latest_labels,
)

_VERDICT = {True: "pass", False: "fail"}


def judge_report(record: RunRecord, checks: Mapping[str, JudgeCheck],
                 metrics: Mapping[str, TypeMetrics]) -> str:
    corrected = sum(c.corrected is not None for c in checks.values())
    lines = header(record, "Judge Report: the scorers against people's labels", [
        ("Types held against labels", ", ".join(checks)),
        ("Corrected accuracies", str(corrected))])
    lines += [
        "Every accuracy evalkit reports takes each scorer verdict as right. Here people's "
        "labels measure how far that holds. Only labels on entries drawn at random "
        "(`evalkit label RUN --sample N`, or `LABEL_SAMPLE`) enter the corrected accuracy, "
        "weighted by their inclusion probabilities; labels given by choice count in the "
        "agreement only. A correction needs at least "
        f"{MIN_LABELS_PER_CLASS} labelled drawn entries among the scorer's passes and among "
        "its failures (all of them, where there are fewer).", ""]
    assert record.evaluation is not None
    for test_type, check in checks.items():
        lines += _type_section(check, metrics[test_type],
                               record.evaluation.type_result(test_type), record)
    return "\n".join(lines).rstrip("\n") + "\n"


def _type_section(check: JudgeCheck, m: TypeMetrics, result: TypeResult,
                  record: RunRecord) -> list[str]:
    lines = [f"## {cell(check.test_type)} (scorer: {cell(check.scorer)})", ""]
    rows = [["raw: every verdict taken as right", number(m.accuracy),
             f"[{number(m.ci_low)}, {number(m.ci_high)}]", f"Wilson over {m.samples} entries"]]
    rows += [_corrected_row(c) for c in (check.corrected, check.rogan_gladen) if c]
    if check.corrected is not None and check.rogan_gladen is None:
        rows.append(["corrected (Rogan-Gladen)", "—", "—", "undefined on these labels: it "
                     "needs drawn labels people passed and ones they failed, and the scorer's "
                     "sensitivity + specificity above 1"])
    lines += [table(["Accuracy", "Estimate", "95% interval", "Method"], rows), ""]
    lines += _labels_lines(check, record.run_id)
    if check.stability is not None:
        lines += _stability_lines(check.stability, check.test_type)
    if check.agreement is not None:
        lines += _agreement_lines(check.agreement)
        lines += _disagreements(check, result, record)
    return lines


def _corrected_row(c: CorrectedAccuracy) -> list[str]:
    return [f"corrected ({cell(c.method)})", number(c.estimate),
            f"[{number(c.low)}, {number(c.high)}]", f"{c.labels} labels, {c.entries} entries"]


def _labels_lines(check: JudgeCheck, run_id: str) -> list[str]:
    lines = [f"- **Labels:** {len(check.drawn_labels)} on drawn entries (of {check.drawn} "
             f"drawn), {len(check.chosen_labels)} by choice."]
    if check.corrected is None:
        if not check.drawn:
            lines.append("- **No correction yet:** no entries are drawn; draw them with "
                         f"`evalkit label {run_id} --type {check.test_type} --sample N`.")
        else:
            missing = ", ".join(f"{n} among the scorer's {_VERDICT[h]}es"
                                for h, n in sorted(check.more_needed.items(), reverse=True)
                                if n)
            lines.append(f"- **No correction yet:** it needs {missing}, labels on drawn "
                         f"entries: `evalkit label {run_id} --type {check.test_type}`, or in "
                         "the MLflow UI feedback named "
                         f"`{TypeNames.of(check.test_type).label}` on the traces that ask "
                         f"for it (`{names.LABEL_WANTED_ASSESSMENT}`).")
    budget = check.budget
    if budget is None:
        lines.append(f"- **Label budget for ±{BUDGET_HALF_WIDTH:g}:** out of reach with "
                     "this many entries: the entries, not the labels, hold the interval "
                     "wider; add entries.")
    else:
        per = ", ".join(f"{n} among the {_VERDICT[h]}es"
                        for h, n in sorted(budget.needed.items(), reverse=True))
        lines.append(f"- **Label budget for ±{BUDGET_HALF_WIDTH:g}:** {budget.total} labels "
                     f"({per}), {budget.more} more than given, at the agreement measured "
                     "so far.")
    return [*lines, ""]


def _stability_lines(s: JudgeStability, test_type: str) -> list[str]:
    error = "—" if s.majority_error is None else f"{s.majority_error:.4f}"
    p = "—" if s.disagreement is None else f"{s.disagreement.p:.4f}"
    lines = [f"### The judge's own stability ({s.repeats} verdicts per item)", "",
             table(["Items", "Verdict changed", "p (votes off the majority)",
                    f"Error of the majority of {s.repeats}", "Failures",
                    "Failures with a passing vote"],
                   [[str(s.items), f"{s.changed} ({s.flip_rate:.1%})", p, error,
                     str(s.failures), str(s.failures_from_judge)]]), ""]
    if test_type == "repeatability" and s.failures_from_judge:
        lines += [f"{s.failures_from_judge} of the {s.failures} repeatability failures had "
                  "a passing vote: there the judge changing its mind, not only the "
                  "component's answers, decided the failure.", ""]
    return lines


def _agreement_lines(a: Agreement) -> list[str]:
    c = a.confusion
    rates = [(name, rate) for name, rate in (
        ("true-positive rate (people's passes the scorer passed)", a.tpr),
        ("true-negative rate (people's failures the scorer failed)", a.tnr),
        ("precision (the scorer's passes people passed)", a.precision))]
    rows = [[name, "—" if r is None else f"{r.successes}/{r.n}",
             "—" if r is None else f"[{number(r.low)}, {number(r.high)}]"]
            for name, r in rates]
    rows += [[f"{coefficient.name}", number(coefficient.value),
              f"[{number(coefficient.low)}, {number(coefficient.high)}]"]
             for coefficient in (a.kappa, a.ac1) if coefficient is not None]
    return [f"### Agreement with people ({a.labels} labels, prevalence "
            f"{number(a.prevalence)})", "",
            table(["", "person: pass", "person: fail"],
                  [["scorer: pass", str(c.tp), str(c.fp)],
                   ["scorer: fail", str(c.fn), str(c.tn)]]), "",
            table(["Measure", "Value", "95% interval"], rows), ""]


def _disagreements(check: JudgeCheck, result: TypeResult, record: RunRecord) -> list[str]:
    rows = []
    latest = latest_labels(record.labels, check.test_type)
    for item in result.items:
        label = latest.get(item.id)
        if label is not None and label.passed != item.passed:
            drawn = "drawn" if item.id in check.drawn_labels else "by choice"
            rows.append([cell(item.id), _VERDICT[item.passed], _VERDICT[label.passed],
                         drawn, cell(label.reviewer), cell(label.comment or "", 200)])
    if not rows:
        return ["People and the scorer agree on every labelled entry.", ""]
    return ["### Where people and the scorer disagree", "",
            table(["Entry", "Scorer", "Person", "Label", "Reviewer", "Comment"], rows), ""]

