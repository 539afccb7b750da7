"""Results at a glance: the verdict line with the run's URL, the JSON summary and JUnit XML
for CI, summary.md, failures first and the field that differs. In-process, tracked in memory;
``tests/promises/test_cli.py`` runs eval.py with --json and --junit-xml in a process of its own."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from evalkit import Call, Entry, EvaluationOutcome, ExitStatus, RunContext, Selection, evaluate
from evalkit.cli._outputs import RunSummary, write_json, write_junit
from evalkit.cli._ui import serve_ui
from evalkit.evaluation import evaluate_replicates
from evalkit.reports import render_reports
from evalkit.reports._common import TEXT_LIMIT, distinct
from evalkit.tracking import ServedUi, Tracker, shown_uri, ui_port
from evalkit.tracking._links import run_url, ui_base
from tests.support.builders import config_for, entry, write_dataset


def component(item: Entry, call: Call) -> Any:
    if item.id == "broken":
        raise RuntimeError("provider said no")
    if item.id.startswith("greet"):
        # The reply changes with the name: only that field differs between the variants.
        return {"route": "billing", "reply": f"Hello {item.input}, we will refund you."}
    if item.id == "wobbly":
        return {"route": "billing", "priority": ["low", "high"][call.repeat % 2]}
    return item.expected_output if item.id != "wrong" else "nope"


class Project(NamedTuple):
    folder: Path
    tracker: Tracker
    outcome: EvaluationOutcome
    summary: RunSummary


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """One evaluation, tracked in memory, and its CI outputs as ``eval.py --json
    out/summary.json --junit-xml out/junit.xml`` writes them (that the options write them is
    tested end to end in tests/promises/test_cli.py)."""
    folder = tmp_path_factory.mktemp("ci")
    dataset = write_dataset(folder / "ds", {
        "right": entry("functional"), "wrong": entry("functional"),
        "broken": entry("functional"), "smoke-ok": entry("smoke"),
        "greet-ann": entry("bias", bias_group="refund", input="Ann"),
        "greet-bob": entry("bias", bias_group="refund", input="Bob"),
        "wobbly": entry("repeatability")})
    config = config_for(folder, dataset, EXPERIMENT_NAME="ci/glance", EVAL_MIN_ACCURACY_BIAS=0.0,
                        EVAL_MIN_ACCURACY_REPEATABILITY=0.0)
    tracker = Tracker.in_memory(folder / ".evalkit" / "bundles")
    outcome = evaluate(config, component, Selection("all"),
                       RunContext(tracker=tracker, runs_dir=folder / "runs"))
    summary = RunSummary("evaluation", outcome.run_id, outcome.run_url, outcome.experiment_name,
                         (outcome,), 12.34, 1)
    write_json(summary, folder / "out" / "summary.json")
    write_junit(summary, folder / "out" / "junit.xml")
    return Project(folder, tracker, outcome, summary)


def test_verdict_line_names_types_counts_and_the_run_url(project: Project) -> None:
    assert not project.outcome.passed  # functional: 1 of 3 right
    verdict, url = project.summary.verdict_lines()
    assert verdict == ("FAIL: 3/4 types passed (failed: functional); 7 entries, 10 calls, "
                       "1 errors, 12.3 s")
    stored = project.tracker.reader.stored(project.outcome.run_id)
    assert url == (f"run: http://127.0.0.1:5000/#/experiments/{stored.experiment_id}"
                   f"/runs/{stored.run_id}")
    assert stored.tags["run_url"] == url.removeprefix("run: ")


def test_json_summary(project: Project) -> None:
    doc = json.loads((project.folder / "out" / "summary.json").read_text())
    assert (doc["verdict"], doc["exit_status"], doc["mode"]) == ("FAIL", 1, "evaluation")
    assert (doc["run_id"], doc["run_url"]) == (project.outcome.run_id, project.outcome.run_url)
    assert (doc["experiment"], doc["duration_s"], doc["replicate_run_ids"]) == (
        "ci/glance", 12.34, [])
    assert (doc["entries"], doc["calls"], doc["component_errors"]) == (7, 10, 1)
    types = {t["test_type"]: t for t in doc["types"]}
    assert set(types) == {"functional", "smoke", "bias", "repeatability"}
    functional = types["functional"]
    assert functional["verdict"] == "FAIL" and functional["accuracy"] == pytest.approx(1 / 3)
    assert functional["min_accuracy"] == 0.5 and functional["samples"] == 3
    assert functional["ci_lower"] < 1 / 3 < functional["ci_upper"]
    assert functional["failures"] == ["functional_accuracy 0.333 < 0.5"]
    # the items behind it, in the run's order: a wrong verdict and a component error
    assert functional["failing_ids"] == ["broken", "wrong"]
    assert types["smoke"]["failing_ids"] == []
    assert types["repeatability"]["failing_ids"] == ["wobbly"]  # failing, under no threshold
    assert (functional["f1"], functional["precision"]) == (pytest.approx(0.5), 1.0)
    assert functional["recall"] == pytest.approx(1 / 3) and functional["min_f1"] is None
    assert types["smoke"]["verdict"] == "PASS" and types["smoke"]["accuracy"] == 1.0
    assert (types["bias"]["samples"], types["bias"]["min_accuracy"]) == (1, 0.0)


def test_junit_xml_has_a_case_per_entry_and_type(project: Project) -> None:
    root = ET.parse(project.folder / "out" / "junit.xml").getroot()
    assert (root.tag, root.get("name"), root.get("time")) == (
        "testsuites", "evalkit ci/glance", "12.340")
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"functional", "smoke", "bias", "repeatability"}
    cases = {(s, c.get("name")): c for s, suite in suites.items() for c in suite.iter("testcase")}
    assert set(cases) == {("functional", "right"), ("functional", "wrong"),
                          ("functional", "broken"), ("smoke", "smoke-ok"),
                          ("bias", "refund"), ("repeatability", "wobbly")}
    functional = suites["functional"]
    assert (functional.get("tests"), functional.get("failures"), functional.get("errors")) \
        == ("3", "1", "1")
    (failure,) = cases[("functional", "wrong")].findall("failure")
    assert failure.get("message") == "expected a, got nope"
    (error,) = cases[("functional", "broken")].findall("error")
    assert "provider said no" in (error.get("message") or "")
    assert not list(cases[("functional", "right")])  # a pass has no child
    (unstable,) = cases[("repeatability", "wobbly")].findall("failure")
    assert "2 distinct outputs of 4" in (unstable.get("message") or "")


def test_summary_lists_failing_types_first_with_links(project: Project) -> None:
    summary = (project.folder / "reports" / "summary.md").read_text()
    rows = [line for line in summary.splitlines() if line.startswith("| ")][1:]
    assert rows[0].startswith("| functional | ✗ | 0.333 [")
    assert "| 2 of 3 (1 errors) | [report-functional.md](report-functional.md) |" in rows[0]
    assert len(rows) == 4 and all("✓" in row for row in rows[1:])
    assert "- **Verdict:** **FAIL**" in summary
    run_id = project.outcome.run_id
    assert f"[{run_id}]({project.outcome.run_url})" in summary
    assert re.search(r"\[[0-9a-f]{32}\]\(http://127\.0\.0\.1:5000/#/experiments/\d+/runs/"
                     r"[0-9a-f]{32}\)", summary)
    # rendered again from what the run holds alone, it is the same file
    again = render_reports(project.tracker.reader.fetch(run_id))
    assert again["summary.md"] == summary


def test_failures_come_first_in_a_small_report(project: Project) -> None:
    report = (project.folder / "reports" / "report-functional.md").read_text()
    section = report.split("## Per-item Results\n", 1)[1].split("\n## ", 1)[0]
    ids = [line.split(" | ")[0].removeprefix("| ") for line in section.splitlines()
           if line.startswith("| ") and not line.startswith("| ID")]
    assert ids == ["broken", "wrong", "right"]  # dataset order is broken, right, wrong


def test_bias_and_repeatability_show_the_field_that_differs(project: Project) -> None:
    bias = (project.folder / "reports" / "report-bias.md").read_text()
    assert ("2 distinct of 2; 1 field differs, 1 agree:<br>field **reply**: "
            "1× Hello Ann, we will refund you.; 1× Hello Bob, we will refund you.") in bias
    repeatability = (project.folder / "reports" / "report-repeatability.md").read_text()
    assert "field **priority**: 2× low; 2× high" in repeatability  # ties: first seen first


def test_distinct_texts_in_full_up_to_the_limit() -> None:
    long = "word " * 80  # 400 characters: shown whole
    cell_text = distinct([long, long, "short"])
    assert "2 distinct of 3:<br>2× " + long.strip() in cell_text
    assert "<br>1× short" in cell_text
    too_long = "y" * (TEXT_LIMIT + 100)
    assert "y" * (TEXT_LIMIT - 1) + "…" in distinct([too_long, "z"])
    assert distinct(["same", "same"]) == "1 distinct of 2:<br>2× same"
    # JSON strings are compared field by field too; a missing field is shown as absent.
    assert distinct(['{"a": 1, "b": 2}', '{"a": 1}']) == (
        "2 distinct of 2; 1 field differs, 1 agree:<br>field **b**: 1× 2; 1× (absent)")


@pytest.mark.parametrize(("uri", "base"), [
    ("sqlite:////work/mlflow.db", "http://127.0.0.1:5000"),
    ("mlruns", "http://127.0.0.1:5000"),
    ("https://alice:s3cret@mlflow.example.com/", "https://mlflow.example.com"),
    ("http://bob:pw@10.0.0.5:5000/mlflow?token=abc#x", "http://10.0.0.5:5000/mlflow"),
    ("http://[::1]:8080", "http://[::1]:8080"),
])
def test_run_url_never_carries_credentials(uri: str, base: str) -> None:
    assert ui_base(uri) == base
    url = run_url(uri, "3", "f" * 32)
    assert url == f"{base}/#/experiments/3/runs/{'f' * 32}"
    assert "s3cret" not in url and "pw" not in url and "token" not in url
    printed = shown_uri(uri)
    assert "s3cret" not in printed and "pw" not in printed and "token" not in printed
    assert printed == (uri if not uri.startswith("http") else base)


STORE = "sqlite:////work/project/mlflow.db"
NO_SUCH_PID = 2 ** 22 + 1
"""Above the largest pid Linux hands out."""


@pytest.mark.parametrize(("served", "base"), [
    (None, "http://127.0.0.1:5000"),
    (ServedUi(STORE, "127.0.0.1", 5741, os.getpid()), "http://127.0.0.1:5741"),
    # ended: its port still, which a plain `evalkit ui` serves again
    (ServedUi(STORE, "127.0.0.1", 5741, NO_SUCH_PID), "http://127.0.0.1:5741"),
    (ServedUi("sqlite:////elsewhere/mlflow.db", "127.0.0.1", 5741, os.getpid()),
     "http://127.0.0.1:5000"),  # a UI over another store
])
def test_a_local_stores_links_and_evalkit_ui_agree_on_the_port_last_served(
        served: ServedUi | None, base: str) -> None:
    if served is not None:
        served.record()
    assert ui_base(STORE) == base
    assert f"http://127.0.0.1:{ui_port(STORE)}" == base
    assert ui_base("https://mlflow.example.com") == "https://mlflow.example.com"


def test_a_ui_url_set_in_the_environment_wins_for_a_local_store(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ServedUi(STORE, "127.0.0.1", 5741, os.getpid()).record()
    monkeypatch.setenv("EVALKIT_UI_URL", "https://tunnel.example/mlflow/")
    assert ui_base(STORE) == "https://tunnel.example/mlflow"
    assert ui_base("http://10.0.0.5:5000") == "http://10.0.0.5:5000"


@pytest.mark.parametrize("text", ["", "{", '{"port": 5741}', "[]"])
def test_a_ui_record_evalkit_did_not_write_is_ignored(tmp_path: Path, text: str) -> None:
    (tmp_path / ".evalkit").mkdir()
    (tmp_path / ".evalkit" / "ui.json").write_text(text)
    assert ui_base(STORE) == "http://127.0.0.1:5000"
    assert ui_port(STORE) == 5000


def test_the_last_ui_started_names_the_port(tmp_path: Path) -> None:
    ServedUi(STORE, "127.0.0.1", 5741, NO_SUCH_PID).record()
    ServedUi(STORE, "127.0.0.1", 5742, NO_SUCH_PID).record()
    assert ServedUi.recorded() == ServedUi(STORE, "127.0.0.1", 5742, NO_SUCH_PID)
    assert (ui_base(STORE), ui_port(STORE)) == ("http://127.0.0.1:5742", 5742)


def test_a_run_ended_while_no_ui_served_links_where_evalkit_ui_serves_next(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The UI served on 5741 and stopped; a run ends; a plain `evalkit ui` serves 5741 (the
    server itself is not started: the command it would run is read instead)."""
    ServedUi(tracker.tracking_uri, "127.0.0.1", 5741, NO_SUCH_PID).record()
    dataset = write_dataset(tmp_path / "ds", {"right": entry("functional")})
    outcome = evaluate(config_for(tmp_path, dataset), component, Selection("all"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert outcome.run_url.startswith("http://127.0.0.1:5741/#/experiments/")
    started: list[list[str]] = []

    class NoServer:
        pid = NO_SUCH_PID
        returncode = 0

        def __init__(self, command: list[str], **_: Any) -> None:
            started.append(command)

        def poll(self) -> int:
            return 0

    monkeypatch.setattr("evalkit.cli._ui.subprocess.Popen", NoServer)
    monkeypatch.setattr("evalkit.cli._ui.stop_group", lambda server: None)
    # the stand-in ends without ever answering: refused, and the record left as it was
    assert serve_ui(tracker.tracking_uri, None) == ExitStatus.RUNTIME_FAILURE
    (command,) = started
    assert command[command.index("--port") + 1] == "5741"
    assert "on http://127.0.0.1:5741 (Ctrl-C stops it" in capsys.readouterr().out
    assert ServedUi.recorded() == ServedUi(tracker.tracking_uri, "127.0.0.1", 5741, NO_SUCH_PID)


def test_the_run_url_tag_and_summary_link_follow_the_served_ui(tmp_path: Path,
                                                              tracker: Tracker) -> None:
    ServedUi(tracker.tracking_uri, "127.0.0.1", 5741, os.getpid()).record()
    dataset = write_dataset(tmp_path / "ds", {"right": entry("functional")})
    outcome = evaluate(config_for(tmp_path, dataset), component, Selection("all"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    stored = tracker.reader.stored(outcome.run_id)
    url = f"http://127.0.0.1:5741/#/experiments/{stored.experiment_id}/runs/{outcome.run_id}"
    assert outcome.run_url == stored.tags["run_url"] == url
    assert f"[{outcome.run_id}]({url})" in (tmp_path / "reports" / "summary.md").read_text()


def test_over_replicates_the_outputs_hold_each_replicate(tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {"right": entry("functional"),
                                              "flaky": entry("functional")})

    def flaky(item: Entry, call: Call) -> Any:  # right in replicate 0 only
        return "a" if item.id == "right" or call.replicate == 0 else "b"

    series = evaluate_replicates(config_for(tmp_path, dataset, REPLICATES=2), flaky,
                                 Selection("all"),
                                 RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    summary = RunSummary("replicates", series.parent_run_id, series.run_url,
                         series.experiment_name, series.replicates, 3.0, 0)
    verdict, url = summary.verdict_lines()
    assert verdict == "PASS: 1/1 types passed; 2 entries x 2 replicates, 4 calls, 0 errors, 3.0 s"
    assert url == f"run: {series.run_url}"
    write_json(summary, tmp_path / "summary.json")
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["replicate_run_ids"] == [r.run_id for r in series.replicates]
    (functional,) = doc["types"]
    assert [r["accuracy"] for r in functional["replicates"]] == [1.0, 0.5]
    assert [r["failing_ids"] for r in functional["replicates"]] == [[], ["flaky"]]
    assert "accuracy" not in functional and functional["verdict"] == "PASS"
    write_junit(summary, tmp_path / "junit.xml")
    (suite,) = ET.parse(tmp_path / "junit.xml").getroot().iter("testsuite")
    cases = {c.get("name"): [child.tag for child in c] for c in suite.iter("testcase")}
    assert cases == {"right [replicate 0]": [], "flaky [replicate 0]": [],
                     "right [replicate 1]": [], "flaky [replicate 1]": ["failure"]}
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "1", "0")
