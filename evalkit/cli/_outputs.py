"""What a finished run tells a person and a CI system: the verdict line, a JSON summary and
JUnit XML.

JUnit XML is written with the standard library's ``xml.etree.ElementTree``: the format needs
four elements and their attributes, and ElementTree escapes text and attributes correctly, so
a dependency (``junit-xml`` is unmaintained since 2020; ``junitparser`` is mostly a reader)
would add nothing.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.evaluation import EvaluationOutcome, RunEstimate
from evalkit.records import (
    ItemResult,
    RunUsage,
    TypeResult,
    as_text,
)
from evalkit.stats import PassK, SequentialOutcome, TypeMetrics, TypeSettlement

_REASON_LIMIT = 500


@dataclass(frozen=True)
class RunSummary:
    """One finished invocation of eval.py: its verdict, counts and where to open it."""

    mode: str
    """``evaluation``, ``replicates`` or ``calibration``."""
    run_id: str
    run_url: str
    experiment_name: str
    runs: tuple[EvaluationOutcome, ...]
    """The evaluated runs: one, or one per replicate."""
    duration_s: float
    exit_status: int
    reliability: Mapping[str, PassK] = field(default_factory=dict)
    """Over replicates, test type -> its pass@k and pass^k; empty for one run."""

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(m.test_type for m in self.runs[0].metrics)

    def type_passed(self, test_type: str) -> bool:
        return all(run.type_verdict(test_type) == "PASS" for run in self.runs)

    @property
    def passed(self) -> bool:
        return all(self.type_passed(t) for t in self.types)

    @property
    def verdict(self) -> str:
        """PASS, FAIL, or INCONCLUSIVE (a sequential run none of whose types failed)."""
        verdicts = {run.verdict for run in self.runs}
        return "FAIL" if "FAIL" in verdicts else "PASS" if verdicts == {"PASS"} \
            else "INCONCLUSIVE"

    @property
    def sequential(self) -> SequentialOutcome | None:
        """A sequential run's settlement (replicates are never sequential)."""
        return self.runs[0].sequential if len(self.runs) == 1 else None

    @property
    def entries(self) -> int:
        return len({e for t in self.runs[0].scored.types for i in t.items for e in i.entry_ids})

    def verdict_lines(self) -> list[str]:
        """The verdict, types passed and failed, counts and duration; then the run's URL."""
        failed = [t for t in self.types if not self.type_passed(t)]
        passed = len(self.types) - len(failed)
        sequential = self.sequential
        calls = sum(r.scored.calls for r in self.runs)
        errors = sum(r.scored.component_errors for r in self.runs)
        replicates = f" x {len(self.runs)} replicates" if self.mode == "replicates" else ""
        head = (f"{self.verdict}: {passed}/{len(self.types)} types passed"
                + (f" (not passed: {', '.join(failed)})" if failed and sequential else
                   f" (failed: {', '.join(failed)})" if failed else "")
                + (f"; {sequential.text()}" if sequential else ""))
        usage = self.usage.text()
        return [f"{head}; {self.entries} entries{replicates}, {calls} calls, {errors} errors, "
                f"{self.duration_s:.1f} s" + (f"; {usage}" if usage else ""),
                f"run: {self.run_url}"]

    @property
    def usage(self) -> RunUsage:
        """The tokens and cost of every evaluated run (each replicate's, summed)."""
        return RunUsage.total(r.usage for r in self.runs)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict, "exit_status": self.exit_status,
            "mode": self.mode, "run_id": self.run_id, "run_url": self.run_url,
            "experiment": self.experiment_name, "duration_s": round(self.duration_s, 3),
            "entries": self.entries, "calls": sum(r.scored.calls for r in self.runs),
            "component_errors": sum(r.scored.component_errors for r in self.runs),
            "usage": self.usage.to_json(),
            "replicate_run_ids": [r.run_id for r in self.runs] if self.mode == "replicates"
            else [],
            "types": [self._type_json(t) for t in self.types],
            "sequential": None if self.sequential is None else self.sequential.to_json(),
        }

    def _type_json(self, test_type: str) -> dict[str, Any]:
        """One type's figures, its judge's check (one run) or its pass@k and pass^k
        (replicates)."""
        doc = _type_json(test_type, [(m, r.scored.type_result(test_type)) for r in self.runs
                                     for m in r.metrics if m.test_type == test_type],
                         self.runs[0].type_verdict(test_type) if len(self.runs) == 1
                         else "PASS" if self.type_passed(test_type) else "FAIL")
        if len(self.runs) == 1 and test_type in self.runs[0].checks:
            doc["judge"] = self.runs[0].checks[test_type].to_json()
        if test_type in self.reliability:
            doc["reliability"] = self.reliability[test_type].to_json()
        return doc


def _type_json(test_type: str, runs: Sequence[tuple[TypeMetrics, TypeResult]],
               verdict: str) -> dict[str, Any]:
    """One type's figures; over replicates, one entry per replicate in ``replicates``.
    ``failing_ids`` names every item whose verdict missed its expectation (an error
    included), all of them: a CI step acts on each, as the JUnit XML lists each."""
    def figures(m: TypeMetrics, result: TypeResult) -> dict[str, Any]:
        return {"accuracy": m.accuracy, "ci_lower": m.ci_low, "ci_upper": m.ci_high,
                "f1": m.f1, "precision": m.precision, "recall": m.recall,
                "samples": m.samples, "failures": list(m.failures),
                "failing_ids": [i.id for i in result.items if not i.correct],
                "accuracy_corrected": None if m.corrected is None else {
                    "method": m.corrected.method, "estimate": m.corrected.estimate,
                    "low": m.corrected.low, "high": m.corrected.high}}

    threshold = runs[0][0].threshold
    doc = {"test_type": test_type, "verdict": verdict,
           "min_accuracy": threshold.min_accuracy, "min_f1": threshold.min_f1}
    if len(runs) == 1:
        return doc | figures(*runs[0])
    return doc | {"replicates": [figures(*run) for run in runs]}


def sequential_lines(outcome: SequentialOutcome) -> list[str]:
    """A sequential run's settlement: the question, then per type its verdict, the look it
    settled at and its interval there."""
    return [outcome.line(), *(f"  {t.test_type}: {t.point()} units, interval {t.interval()}"
                              + ("" if t.margin is None else
                                 f" (gap candidate - baseline, margin {t.margin:g})")
                              for t in outcome.types)]


def write_json(summary: RunSummary, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary.to_json(), indent=1) + "\n", encoding="utf-8")


def write_estimate_json(estimate: RunEstimate, path: Path) -> None:
    """``--estimate --json PATH``: the estimate, ``mode`` ``estimate`` and exit status 0."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mode": "estimate", "exit_status": 0, **estimate.to_json()},
                               indent=1) + "\n", encoding="utf-8")


NOT_CALLED = "not called: the verdict settled first"
"""Why a sequential run's JUnit XML skips an entry (bias: a group) it never called."""


def write_junit(summary: RunSummary, path: Path) -> None:
    """A ``testsuite`` per test type, a ``testcase`` per entry (bias: per group) and type;
    over replicates, a case per replicate of each. A failure or error carries its reason.

    A sequential run's suite also holds its type's settlement as ``properties`` and as a
    first case, the type's verdict, which fails unless the sequence passed it (INCONCLUSIVE
    too, as the exit status does), and skips each entry never called."""
    root = ET.Element("testsuites", name=f"evalkit {summary.experiment_name}",
                      time=f"{summary.duration_s:.3f}")
    for test_type in summary.types:
        suite = ET.SubElement(root, "testsuite", name=test_type)
        counts = Counter[str]()
        settled = None if summary.sequential is None \
            else summary.sequential.settlement(test_type)
        if summary.sequential is not None and settled is not None:
            _settlement_cases(suite, summary.sequential, settled, counts)
        for index, run in enumerate(summary.runs):
            suffix = f" [replicate {index}]" if summary.mode == "replicates" else ""
            for item in run.scored.type_result(test_type).items:
                _item_case(suite, test_type, item, suffix, counts)
        for entry_id in () if settled is None else settled.not_called:
            case = ET.SubElement(suite, "testcase", classname=f"evalkit.{test_type}",
                                 name=entry_id)
            ET.SubElement(case, "skipped", message=NOT_CALLED)
            counts.update(("tests", "skipped"))
        skipped = ("skipped",) if settled is not None else ()
        for count in ("tests", "failures", "errors", *skipped):
            suite.set(count, str(counts[count]))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _item_case(suite: ET.Element, test_type: str, item: ItemResult, suffix: str,
               counts: Counter[str]) -> None:
    """One scored item's case: passed, failed (with why) or in error."""
    case = ET.SubElement(suite, "testcase", classname=f"evalkit.{test_type}",
                         name=f"{item.id}{suffix}")
    counts["tests"] += 1
    if item.error is not None:
        counts["errors"] += 1
        ET.SubElement(case, "error", message=_short(item.error),
                      type="component_error").text = item.error
    elif not item.correct:
        counts["failures"] += 1
        reason = failure_reason(item)
        ET.SubElement(case, "failure", message=_short(reason), type="score").text = reason


def _settlement_cases(suite: ET.Element, outcome: SequentialOutcome, settled: TypeSettlement,
                      counts: Counter[str]) -> None:
    """A sequential run's type: its settlement as properties (they come first in a suite),
    and its verdict as a case of its own."""
    properties = ET.SubElement(suite, "properties")
    for name, value in (("sequential", outcome.line()), ("sequential.verdict", settled.verdict),
                        ("sequential.settled", settled.point()),
                        ("sequential.interval", settled.interval()),
                        ("sequential.not_called", str(len(settled.not_called)))):
        ET.SubElement(properties, "property", name=name, value=value)
    case = ET.SubElement(suite, "testcase", classname=f"evalkit.{settled.test_type}",
                         name=f"{settled.test_type} sequential verdict")
    counts["tests"] += 1
    if settled.gate != "PASS":
        counts["failures"] += 1
        text = (f"{settled.point()}, confidence sequence {settled.interval()} at "
                f"{outcome.confidence:.0%}" + ("" if settled.look.verdict.settled else
                                               ": every unit was seen and it is not settled"))
        ET.SubElement(case, "failure", message=text, type=settled.gate.lower()).text = text


def failure_reason(item: ItemResult) -> str:
    """Why an item's verdict did not match its expectation, in one paragraph."""
    if not item.expected_pass:
        return "annotated expected_pass: false, but it passed"
    parts = []
    if item.invalid_judgement:
        parts.append(f"invalid judgement {item.judge_reply!r} (the judge must reply 0 or 1)")
    elif item.judge_reply is not None:
        parts.append(f"the judge replied {item.judge_reply}")
    if item.similarity is not None:
        parts.append(f"similarity {item.similarity:.3f} under the threshold")
    if len(item.outputs) == 1:
        parts.append(f"expected {_short(as_text(item.expected))}, got "
                     f"{_short(as_text(item.outputs[0]))}")
    else:
        distinct = len({as_text(o) for o in item.outputs})
        parts.append(f"{distinct} distinct outputs of {len(item.outputs)}: "
                     + _short(" | ".join(dict.fromkeys(as_text(o) for o in item.outputs))))
    return "; ".join(parts)


def _short(text: str) -> str:
    return text if len(text) <= _REASON_LIMIT else text[: _REASON_LIMIT - 1] + "…"
