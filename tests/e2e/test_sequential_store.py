"""Sequential runs end to end: eval.py's command line on a real local MLflow store, a
generated dataset of 2,000 entries and a deterministic component.

The run calls the entries in its seeded order and stops once the type's confidence sequence
settles; the verdict line, ``--json``, the run's metrics, ``sequential.json``, the reports and
the JUnit XML say where.
An interrupt and ``--resume`` continue the same order and settle where an uninterrupted pass
over that order settles (the sequence fed by hand, below).
A run ``--against`` a recorded baseline calls only the candidate, stops once the paired gap
settles, and ``evalkit compare`` gives that run's verdict.
"""

from __future__ import annotations

import json
import re
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry, RunInterrupted
from evalkit.calls import Selection
from evalkit.config import EvalConfig
from evalkit.evaluation import evaluate
from evalkit.stats import MeanSequence, PairedSequence, Scope
from tests.support.builders import entry, write_dataset
from tests.support.commands import eval_script, evalkit_command

ENTRIES = 2000
THRESHOLD = 0.8


def _right(entry_id: str) -> bool:
    """Nine entries in ten are answered right (accuracy 0.9, threshold 0.8)."""
    return int(entry_id[1:]) % 10 != 3


class Component:
    """Answers ``a`` (the expected output) or ``x``, by entry; remembers the order called,
    and raises KeyboardInterrupt (a Ctrl-C) at call ``interrupt_at`` once."""

    def __init__(self, interrupt_at: int | None = None) -> None:
        self.called: list[str] = []
        self.interrupt_at = interrupt_at

    def __call__(self, entry: Entry, call: Call) -> str:
        if self.interrupt_at is not None and len(self.called) == self.interrupt_at:
            self.interrupt_at = None
            raise KeyboardInterrupt
        self.called.append(entry.id)
        return "a" if _right(entry.id) else "x"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("seq") / "ds",
                         {f"e{i:04d}": entry("functional", input=f"q{i}")
                          for i in range(ENTRIES)})


def _constants(tmp_path: Path, dataset: Path, **more: Any) -> dict[str, Any]:
    return {"EXPERIMENT_NAME": f"seq/{uuid.uuid4().hex[:10]}", "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": THRESHOLD,
            "TRACE_CALLS": False, "MAX_CONCURRENCY": 1, **more}


def _run(tracking_uri: str, experiment: str) -> Any:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    (run,) = client.search_runs([found.experiment_id])
    path = client.download_artifacts(run.info.run_id, "sequential.json")
    return run, json.loads(Path(path).read_text(encoding="utf-8"))


def _settles_at(order: list[str], scope: Scope) -> int:
    """Where the sequence settles fed the component's outcomes in ``order``, by hand."""
    sequence = MeanSequence(ENTRIES, THRESHOLD, scope=scope)
    for n, entry_id in enumerate(order, 1):
        if sequence.update(float(_right(entry_id))).verdict.settled:
            return n
    return ENTRIES


def test_a_sequential_run_stops_early_and_says_so(
        tmp_path: Path, dataset: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    constants = _constants(tmp_path, dataset, SEQUENTIAL=True)
    component = Component()
    out_json, junit = tmp_path / "out.json", tmp_path / "junit.xml"
    assert eval_script(constants, component, "--type=functional", "--json",
                       str(out_json), "--junit-xml", str(junit)) == 0
    shown = capsys.readouterr().out
    run, recorded = _run(tracking_uri, constants["EXPERIMENT_NAME"])
    n = len(component.called)
    assert sorted(recorded["order"]) == [f"e{i:04d}" for i in range(ENTRIES)]
    assert recorded["order"] != sorted(recorded["order"])  # drawn, not dataset order
    assert component.called == recorded["order"][:n]  # called in the recorded order
    assert n == _settles_at(recorded["order"], Scope.DATASET) < ENTRIES / 2
    assert f"PASS: 1/1 types passed; settled after {n} of {ENTRIES} entries " \
           f"({ENTRIES - n} calls saved)" in shown
    (functional,) = recorded["types"]
    assert (functional["verdict"], functional["settled_at"], functional["n"]) == ("PASS", n, n)
    assert functional["low"] >= THRESHOLD and functional["scope"] == "dataset"
    summary = json.loads(out_json.read_text(encoding="utf-8"))
    assert summary["verdict"] == "PASS" and summary["exit_status"] == 0
    assert summary["sequential"]["calls_saved"] == ENTRIES - n
    assert summary["sequential"]["summary"] == recorded["summary"]
    metrics = run.data.metrics
    assert metrics["sequential_entries_called"] == n
    assert metrics["sequential_calls_saved"] == ENTRIES - n
    assert metrics["functional_settled_at"] == n
    assert metrics["calls"] == n  # only the entries called are scored
    assert run.data.tags["sequential"] == "dataset" and run.data.tags["verdict"] == "PASS"

    # the reports written and the JUnit XML carry the settle point and the interval there
    settled = f"PASS at {n} of {ENTRIES}"
    interval = f"[{functional['low']:.3f}, {functional['high']:.3f}]"
    stop = f"settled after {n} of {ENTRIES} entries ({ENTRIES - n} calls saved)"
    reports = tmp_path / "reports"
    summary_report = (reports / "summary.md").read_text(encoding="utf-8")
    assert f"- **Sequential:** dataset (*would the whole dataset pass?*) at 95%; {stop}\n" \
        in summary_report
    assert (f"| functional | {settled} | {interval} | accuracy ≥ 0.8 | {ENTRIES - n} |\n"
            in summary_report)
    assert f"**Sequential verdict:** {settled}, confidence sequence {interval} at 95%" in \
        (reports / "report-functional.md").read_text(encoding="utf-8")
    (suite,) = ET.parse(junit).getroot()
    assert (suite.attrib["tests"], suite.attrib["skipped"]) == (str(ENTRIES + 1),
                                                                str(ENTRIES - n))
    properties = {p.attrib["name"]: p.attrib["value"] for p in suite.iter("property")}
    assert (properties["sequential.settled"], properties["sequential.interval"]) == (
        settled, interval)
    assert properties["sequential"].endswith(stop)
    skipped = [c.attrib["name"] for c in suite.iter("testcase") if c.find("skipped") is not None]
    assert skipped == recorded["order"][n:]
    # evalkit report renders the same from the store alone
    assert evalkit_command("report", run.info.run_id, "--output", tmp_path / "again") == 0
    for name in ("summary.md", "report-functional.md"):
        assert (tmp_path / "again" / name).read_text(encoding="utf-8") == \
            (reports / name).read_text(encoding="utf-8")


def test_an_interrupted_sequential_run_resumes_in_the_same_order(
        tmp_path: Path, dataset: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # the raw results' folder, .evalkit/runs
    constants = _constants(tmp_path, dataset)
    component = Component(interrupt_at=10)
    # interrupted through the library: the command line ends its process on an interrupt
    with pytest.raises(RunInterrupted) as stopped:
        evaluate(EvalConfig.from_constants(constants, "eval.py"), component,
                 Selection.parse("functional", sequential="population"))
    run_id = re.search(r"--resume (\w+)", str(stopped.value)).group(1)  # type: ignore[union-attr]
    assert len(component.called) == 10
    assert eval_script(constants, component, "--resume", run_id) == 0
    shown = capsys.readouterr().out
    run, recorded = _run(tracking_uri, constants["EXPERIMENT_NAME"])
    n = _settles_at(recorded["order"], Scope.POPULATION)
    # the first attempt's 10 calls and the resume's continue one order, and stop where an
    # uninterrupted pass over it stops
    assert component.called == recorded["order"][:n]
    assert run.info.status == "FINISHED" and run.data.tags["resumed"] == "true"
    assert recorded["types"][0]["settled_at"] == n and recorded["verdict"] == "PASS"
    assert f"settled after {n} of {ENTRIES} entries ({ENTRIES - n} calls saved)" in shown


class Worse(Component):
    """Wrong also on one entry in five the baseline got right: a gap of -0.2 on those."""

    def __call__(self, entry: Entry, call: Call) -> str:
        answer = super().__call__(entry, call)
        return "x" if int(entry.id[1:]) % 5 == 1 else answer


def test_a_run_against_a_recorded_baseline_stops_early_and_compare_gives_its_verdict(
        tmp_path: Path, dataset: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    constants = _constants(tmp_path, dataset)
    baseline = Component()
    assert eval_script(constants, baseline, "--type=functional", "--json",
                       str(tmp_path / "a.json")) == 0
    base_id = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))["run_id"]
    assert len(baseline.called) == ENTRIES

    # the same component again: within the margin, long before the last item, baseline
    # not called again
    same = Component()
    assert eval_script(constants, same, "--type=functional", "--against", base_id,
                       "--margin", "0.05", "--json", str(tmp_path / "b.json"),
                       "--summary-md", str(tmp_path / "b.md")) == 0
    shown = capsys.readouterr().out
    summary = json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))
    settled, n = summary["sequential"], len(same.called)
    assert settled["against"] == base_id and settled["entries_called"] == n
    assert same.called == settled["order"][:n] and len(baseline.called) == ENTRIES
    # the population's question: the default against a baseline
    sequence = PairedSequence(ENTRIES, 0.05, scope=Scope.POPULATION)
    by_hand = next(k for k in range(1, ENTRIES + 1) if sequence.update(0.0).verdict.settled)
    (functional,) = settled["types"]
    assert (functional["verdict"], functional["settled_at"], functional["margin"]) == (
        "within the margin", by_hand, 0.05)
    assert n == by_hand < ENTRIES / 4
    assert f"sequential against run {base_id} (population: is the candidate no worse " in shown
    job = (tmp_path / "b.md").read_text(encoding="utf-8")
    assert (f"| within the margin at {n} of {ENTRIES}; [{functional['low']:+.3f}, "
            f"{functional['high']:+.3f}] | PASS |") in job
    assert f"sequential against run {base_id} (population: " in job
    assert f"settled after {n} of {ENTRIES} entries ({ENTRIES - n} calls saved)" in shown

    # evalkit compare A B answers from B's sequence (no --margin needed) and exits with it
    b_id = summary["run_id"]
    assert evalkit_command("compare", base_id, b_id, "--json") == 0
    compared = json.loads(capsys.readouterr().out)
    assert compared["margin_verdict"] == "no worse"
    (metric,) = compared["metrics"]
    assert metric["margin"]["sequence"]["settled_at"] == by_hand
    assert metric["shared_items"] == n
    assert evalkit_command("compare", base_id, b_id) == 0
    assert (f"B - A [{functional['low']:+.3f}, {functional['high']:+.3f}] (95% confidence "
            f"sequence of B's run against A, settled at {n} of {ENTRIES} items) against "
            "margin 0.050: within the margin") in " ".join(capsys.readouterr().out.split())

    # a worse candidate: worse by more than the margin, exit status 1, in compare too
    worse = Worse()
    assert eval_script(constants, worse, "--type=functional", "--against", base_id,
                       "--json", str(tmp_path / "c.json")) == 1
    summary = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    (functional,) = summary["sequential"]["types"]
    assert functional["verdict"] == "worse by more than the margin"
    assert functional["high"] < -0.05 and len(worse.called) < ENTRIES / 4
    assert evalkit_command("compare", base_id, summary["run_id"]) == 1
    assert "margin verdict: B worse than A by more than the margin on functional" in \
        capsys.readouterr().out
