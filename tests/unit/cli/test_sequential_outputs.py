"""What a sequential run's outputs say, ``eval.py`` in-process on the in-memory tracker: the
reports (as written and as rendered again from the run alone), the job summary and the JUnit
XML each give the sequence's verdict, where each type settled and its interval there; the
JUnit XML skips the entries never called, and a type left INCONCLUSIVE shows as one."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry
from evalkit.cli._exit import ExitStatus
from evalkit.cli._outputs import NOT_CALLED
from evalkit.reports import render_reports
from evalkit.stats import MeanSequence, Scope
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset
from tests.support.commands import eval_script
from tests.support.markdown import tables

# 30 functional entries and 12 bias groups of two variants, every one answered right;
# each threshold 0.5: both types settle long before their last unit
ENTRIES = {
    **{f"f{i:02d}": entry("functional", input=f"q{i}") for i in range(30)},
    **{f"b{i:02d}{v}": entry("bias", bias_group=f"g{i:02d}", input=f"variant {v} {i}")
       for i in range(12) for v in "xy"},
}
UNITS = {"functional": 30, "bias": 12}


def _settles_at(units: int) -> int:
    """The look at which a type all of whose units are right settles, fed by hand."""
    sequence = MeanSequence(units, 0.5, scope=Scope.DATASET)
    for n in range(1, units + 1):
        if sequence.update(1.0).verdict.settled:
            return n
    return units


@pytest.fixture
def project(tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("evalkit.evaluation._context.Tracker", lambda *args, **kwargs: tracker)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def _constants(folder: Path, entries: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"EXPERIMENT_NAME": "seq/outputs",
            "DATASET_PATH": str(write_dataset(folder / "ds", entries)),
            "REPORTS_DIR": str(folder / "reports"), "EVAL_MIN_ACCURACY": 0.5,
            "TRACE_CALLS": False, "MAX_CONCURRENCY": 1, **more}


def _suites(path: Path) -> dict[str, ET.Element]:
    return {s.attrib["name"]: s for s in ET.parse(path).getroot()}


def test_a_settled_run_says_where_in_its_reports_job_summary_and_junit(
        project: Path, tracker: Tracker) -> None:
    out = project / "out"
    # bias by exact match: the same verdicts, without loading the embedding model
    status = eval_script(_constants(project, ENTRIES, SEQUENTIAL=True,
                                    SCORER_BIAS="exact"), lambda e, c: "a",
                         "--type=all", "--json", str(out / "run.json"), "--junit-xml",
                         str(out / "junit.xml"), "--summary-md", str(out / "summary.md"))
    assert status == ExitStatus.OK
    summary = json.loads((out / "run.json").read_text(encoding="utf-8"))
    settled = {t["test_type"]: t for t in summary["sequential"]["types"]}
    at = {t: _settles_at(units) for t, units in UNITS.items()}
    assert {t: (s["settled_at"], len(s["not_called"])) for t, s in settled.items()} == {
        t: (at[t], UNITS[t] - at[t]) for t in UNITS}
    interval = {t: f"[{s['low']:.3f}, {s['high']:.3f}]" for t, s in settled.items()}
    called = summary["sequential"]["entries_called"]
    assert called == at["functional"] + 2 * at["bias"]
    stop = f"settled after {called} of 54 entries ({54 - called} calls saved)"

    # the summary report: the question, the level, the stop and each type's settlement
    reports = project / "reports"
    report = (reports / "summary.md").read_text(encoding="utf-8")
    assert (f"- **Sequential:** dataset (*would the whole dataset pass?*) at 95%; {stop}\n"
            in report)
    section = report[report.index("## Sequential Verdict"):]
    assert f"at 95%. The entries were called in a seeded random order until every type's " \
           f"verdict was settled: {stop}.\n" in section
    sequences = tables(section)[0]
    assert sequences.header == ("Type", "Verdict at the stop", "Confidence sequence (95%)",
                                "Threshold", "Units not called")
    assert set(sequences.rows) == {
        (t, f"PASS at {at[t]} of {UNITS[t]}", interval[t], "accuracy ≥ 0.5",
         str(UNITS[t] - at[t])) for t in UNITS}
    # the per-type report, briefly; both rendered again from the run alone, byte for byte
    typed = (reports / "report-bias.md").read_text(encoding="utf-8")
    assert (f"**Sequential verdict:** PASS at {at['bias']} of 12, confidence sequence "
            f"{interval['bias']} at 95% at the stop ({12 - at['bias']} units not called).") \
        in typed
    rendered = render_reports(tracker.reader.fetch(summary["run_id"]))
    assert rendered["summary.md"] == report and rendered["report-bias.md"] == typed

    # the job summary: the column and the line under the table
    markdown = (out / "summary.md").read_text(encoding="utf-8")
    (table,) = tables(markdown)
    assert {row[0]: row[4:] for row in table.rows} == {
        t: (f"PASS at {at[t]} of {UNITS[t]}; {interval[t]}", "PASS") for t in UNITS}
    assert markdown.endswith(
        f"\n\nsequential (dataset: would the whole dataset pass?) at 95%: {stop}\n")

    # the JUnit XML: the settlement, the verdict case, a skipped case per unit not called
    suites = _suites(out / "junit.xml")
    order = summary["sequential"]["order"]
    for test_type, suite in suites.items():
        skipped = settled[test_type]["not_called"]
        assert suite.attrib == {"name": test_type, "tests": str(1 + UNITS[test_type]),
                                "failures": "0", "errors": "0", "skipped": str(len(skipped))}
        properties = {p.attrib["name"]: p.attrib["value"] for p in suite.iter("property")}
        assert properties == {
            "sequential": f"sequential (dataset: would the whole dataset pass?) at 95%: {stop}",
            "sequential.verdict": "PASS",
            "sequential.settled": f"PASS at {at[test_type]} of {UNITS[test_type]}",
            "sequential.interval": interval[test_type],
            "sequential.not_called": str(len(skipped))}
        cases = suite.findall("testcase")
        assert cases[0].attrib["name"] == f"{test_type} sequential verdict"
        assert not list(cases[0])  # passed
        assert [c.attrib["name"] for c in cases if c.find("skipped") is not None] == skipped
        assert {c.find("skipped").attrib["message"] for c in cases  # type: ignore[union-attr]
                if c.find("skipped") is not None} == {NOT_CALLED}
    # never called: the entries after the settling looks, in the drawn order
    assert settled["functional"]["not_called"] == [e for e in order if e.startswith("f")][
        at["functional"]:]
    groups = list(dict.fromkeys(f"g{e[1:3]}" for e in order if e.startswith("b")))
    assert settled["bias"]["not_called"] == groups[at["bias"]:]


def test_an_inconclusive_type_shows_as_one_everywhere(project: Path, tracker: Tracker) -> None:
    # 17 in 20 right, threshold 0.8: the population's question cannot settle it
    entries = {f"e{i:02d}": entry("functional", input=f"q{i}") for i in range(20)}
    wrong = {"e03", "e09", "e15"}

    def component(item: Entry, call: Call) -> str:
        return "x" if item.id in wrong else "a"
    out = project / "out"
    status = eval_script(_constants(project, entries, SEQUENTIAL="population",
                                    EVAL_MIN_ACCURACY=0.8), component, "--type=functional",
                         "--junit-xml", str(out / "junit.xml"), "--summary-md",
                         str(out / "summary.md"))
    assert status == ExitStatus.INCONCLUSIVE
    (suite,) = _suites(out / "junit.xml").values()
    assert suite.attrib == {"name": "functional", "tests": "21", "failures": "4",
                            "errors": "0", "skipped": "0"}
    verdict = suite.findall("testcase")[0]
    (failure,) = list(verdict)
    assert failure.attrib["type"] == "inconclusive"
    assert failure.attrib["message"].startswith("INCONCLUSIVE after 20 of 20, confidence "
                                                "sequence [")
    assert failure.attrib["message"].endswith(" at 95%: every unit was seen and it is not "
                                              "settled")
    (table,) = tables((out / "summary.md").read_text(encoding="utf-8"))
    assert table.rows[0][4].startswith("INCONCLUSIVE after 20 of 20; [")
    assert table.rows[0][5] == "INCONCLUSIVE"
    # the reports: the sequence's verdict, though 0.85 of the entries called is over 0.8
    report = (project / "reports" / "summary.md").read_text(encoding="utf-8")
    assert "- **Verdict:** **INCONCLUSIVE**\n" in report
    assert "| functional | INCONCLUSIVE | 0.850 [" in report
    assert "## Thresholds Missed\n\n- functional: INCONCLUSIVE at look 20 of 20, interval \\[" \
        in report
    typed = (project / "reports" / "report-functional.md").read_text(encoding="utf-8")
    assert "**Overall: INCONCLUSIVE**" in typed
