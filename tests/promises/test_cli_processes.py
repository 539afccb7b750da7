"""eval scripts and the evalkit command in processes of their own (slow): the exit status and
the terminal's lines of a real run in a fresh interpreter, an interrupted run, ``evalkit report``
against a real store, and the repository's own example end to end.
"""

from __future__ import annotations

import json
import re
import runpy
import shutil
import signal
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from evalkit import EvalConfig, RunContext, Selection, evaluate
from evalkit.evaluation import evaluate_calibration, evaluate_replicates
from evalkit.records import names
from evalkit.review import build_plan, compare, load_side, margin_verdict, record_plan
from evalkit.tracking import Tracker
from tests.promises.test_cli import CONSTANTS
from tests.support.builders import REPO, RecordingComponent, entry, write_dataset, write_eval_script
from tests.support.commands import eval_script, evalkit_command
from tests.support.processes import run_eval, start_eval, wait_for

pytestmark = pytest.mark.slow


ECHO = """
def invoke_component(entry, call):
    return entry.expected_output if entry.id != "wrong" else "nope"
"""


# --- a real process ----------------------------------------------------------------------------


def test_an_exact_only_run_in_a_fresh_process(tmp_path: Path) -> None:
    """Exit status 1 on a missed threshold, the verdict and the run's URL as the last lines on
    the terminal, the CI outputs written, and torch never imported."""
    write_dataset(tmp_path / "ds", {"right": entry("functional"), "wrong": entry("functional"),
                                    "wrong2": entry("functional", expected="b")})
    write_eval_script(tmp_path, {**CONSTANTS, "EVAL_MIN_ACCURACY": 0.9}, ECHO, epilogue="""
        import json, sys
        heavy = sorted(m for m in sys.modules
                       if m.split(".")[0] in {"torch", "sentence_transformers", "transformers"})
        open("heavy_modules.json", "w").write(json.dumps(heavy))
    """)
    done = run_eval(tmp_path, "--type=functional", "--json", "out/summary.json",
                    "--junit-xml", "out/junit.xml")
    # 'wrong' answers "nope" (0); 'right' and 'wrong2' echo their expected output (1): 2/3
    assert done.returncode == 1, done.stderr
    assert "threshold missed: functional_accuracy 0.667 < 0.9" in done.stderr
    assert "Traceback" not in done.stderr
    *_, json_line, junit_line, verdict, url = done.stdout.strip().splitlines()
    assert (json_line, junit_line) == ("json: out/summary.json", "junit: out/junit.xml")
    assert re.fullmatch(r"FAIL: 0/1 types passed \(failed: functional\); 3 entries, 3 calls, "
                        r"0 errors, \d+\.\d s", verdict), verdict
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["verdict"], summary["exit_status"]) == ("FAIL", 1)
    assert url == f"run: {summary['run_url']}"
    assert re.fullmatch(rf"run: http://127\.0\.0\.1:5000/#/experiments/\d+/runs/"
                        rf"{summary['run_id']}", url)
    assert ET.parse(tmp_path / "out" / "junit.xml").getroot().find("testsuite") is not None
    assert "**Overall: FAIL**" in (tmp_path / "reports" / "report-functional.md").read_text()
    stored = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}").reader.stored(summary["run_id"])
    assert stored.status == "FINISHED" and stored.tags["verdict"] == "FAIL"
    assert json.loads((tmp_path / "heavy_modules.json").read_text()) == []


SLOW = """
import time
def invoke_component(entry, call):
    time.sleep(0.25)
    return entry.expected_output
"""


def test_sigterm_keeps_every_output_marks_the_run_killed_and_exits_130(tmp_path: Path) -> None:
    """The first stop starts no new call and awaits those in flight; Ctrl-C, and SIGINT when
    the job was started ignoring it, are in tests/promises/test_hostile_components.py."""
    write_dataset(tmp_path / "ds", {f"e{i:02d}": entry("functional") for i in range(40)})
    write_eval_script(tmp_path, CONSTANTS, SLOW)
    process = start_eval(tmp_path, "--type=all")
    runs = tmp_path / ".evalkit" / "runs"

    def four_calls_kept() -> bool:
        return any(len(p.read_text().splitlines()) >= 4 for p in runs.glob("*/raw-results.jsonl"))

    try:
        wait_for(four_calls_kept, "four calls kept")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 130
    finally:
        process.kill()
    log = (tmp_path / "run.log").read_text()
    (run_dir,) = runs.iterdir()
    run_id = run_dir.name
    assert re.search(r"stopping: waiting for \d call\(s\) in flight to finish and be kept", log)
    assert "marked KILLED" in log and f"--resume {run_id}" in log
    assert "Traceback" not in log

    local_lines = (run_dir / "raw-results.jsonl").read_text().splitlines()
    assert 4 <= len(local_lines) < 40
    records = [json.loads(line) for line in local_lines]  # every line is complete
    assert [r["entry_id"] for r in records] == [f"e{i:02d}" for i in range(len(records))]
    assert all(r["error"] is None for r in records)  # the calls in flight were awaited
    reader = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}").reader
    assert reader.stored(run_id).status == "KILLED"
    assert reader.read_text(run_id, names.RAW_RESULTS_ARTIFACT).splitlines() == local_lines
    assert not (tmp_path / "reports").exists()


# --- evalkit report against a real store (in-process, slow) -----------------------------------


def test_evalkit_report_renders_a_run_again_byte_for_byte(
        tmp_path: Path, tracking_uri: str,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)
    dataset = write_dataset(tmp_path / "ds", {
        "a": entry("functional"), "b": entry("functional", expected={"k": "v|w"}),
        "r": entry("repeatability"), "x1": entry("bias", bias_group=1),
        "x2": entry("bias", bias_group=1),
        "h": entry("smoke", human_review=True, human_instructions="read it")})
    experiment = f"cli/report-{tmp_path.name}"
    config = EvalConfig.from_constants({
        **CONSTANTS, "EXPERIMENT_NAME": experiment, "DATASET_PATH": str(dataset),
        "REPEAT_COUNT": 3, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5}, "eval.py")
    outcome = evaluate(config, RecordingComponent({"b": {"k": "v|w"}}), Selection("all"),
                       RunContext(tracker=Tracker(tracking_uri), runs_dir=tmp_path / "runs"))
    reports = tmp_path / "reports"
    original = {p.name: p.read_bytes() for p in reports.iterdir()}
    # five reports and summary.md, each chart's SVG beside its report
    assert len([n for n in original if n.endswith(".md")]) == 6
    assert sorted(n for n in original if not n.endswith(".md")) == [
        f"convergence-{t}.svg" for t in ("bias", "functional", "repeatability", "smoke")]
    shutil.rmtree(reports)
    assert evalkit_command("report", outcome.run_id) == 0, capsys.readouterr().err
    (own,) = (reports / "runs").iterdir()  # a folder of the run's own
    # the run's name made safe for a path: "PASS all 12-01 23:43" -> PASS-all-12-01-23-43
    run_name = Tracker(tracking_uri).reader.stored(outcome.run_id).run_name
    assert own.name == f"{run_name.replace(' ', '-').replace(':', '-')}-{outcome.run_id[:8]}"
    assert {p.name: p.read_bytes() for p in own.iterdir()} == original
    for reference in (outcome.run_id[:8], experiment):
        out = tmp_path / reference.replace("/", "_")
        assert evalkit_command("report", reference, "--output", out) == 0
        assert {p.name: p.read_bytes() for p in out.iterdir()} == original
    capsys.readouterr()
    assert evalkit_command("report", "0" * 32) == 2  # the store answered: a usage error
    err = " ".join(capsys.readouterr().err.split())
    assert f"error: run {'0' * 32} not found" in err
    assert "(is MLFLOW_TRACKING_URI the store it was logged to? evalkit history" in err
    assert evalkit_command("report", "ffff0000") == 2
    err = capsys.readouterr().err
    assert "no run at" in err and "'ffff0000'" in err and "Traceback" not in err


# --- the repository's own example (in-process, tracked in memory; slow: the semantic model) ----


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Tracker, Any]:
    """The repository's eval.py and its dataset, with one tracker in memory for the module's
    runs."""
    folder = tmp_path_factory.mktemp("example")
    script = runpy.run_path(str(REPO / "eval.py"), run_name="example_eval")
    # Its dataset as it is; its reports (and the replicates' lock) in the scratch folder.
    script.update(DATASET_PATH=str(REPO / script["DATASET_PATH"]),
                  LABELS_PATH=str(REPO / script["LABELS_PATH"]),
                  REPORTS_DIR=str(folder / "reports"))
    return folder, Tracker.in_memory(folder / ".evalkit" / "bundles"), script


def example_config(script: dict[str, Any]) -> EvalConfig:
    return EvalConfig.from_constants(script, "eval.py")


def test_example_repeatability_run_writes_only_its_report(
        example: tuple[Path, Tracker, Any]) -> None:
    folder, tracker, script = example
    outcome = evaluate(example_config(script), script["invoke_component"],
                       Selection.parse("repeatability"), RunContext(tracker=tracker))
    assert sorted(p.name for p in (folder / "reports").iterdir()) == [
        "convergence-repeatability.svg", "report-repeatability.md", "summary.md"]
    report = (folder / "reports" / "report-repeatability.md").read_text()
    assert "- **Repeat count:** 5" in report
    assert "| ID | Input | Outputs (how the repeats differ) | Avg pairwise cosine | Result |" \
        in report
    stored = tracker.reader.stored(outcome.run_id)
    assert stored.metrics["repeat_count"] == 5
    assert 0 <= stored.metrics["repeatability_accuracy"] <= 1
    assert stored.tags["test_types"] == "repeatability"
    evaluation = tracker.reader.read_json(outcome.run_id, names.EVALUATION_ARTIFACT)
    items = evaluation["types"][0]["items"]
    assert len(items) >= 10 and all(len(i["outputs"]) == 5 for i in items)
    assert all(-1 <= i["similarity"] <= 1 for i in items)
    assert f"| {items[0]['id']} |" in report


def test_example_full_run_reports_every_type(example: tuple[Path, Tracker, Any]) -> None:
    folder, tracker, script = example
    shutil.rmtree(folder / "reports", ignore_errors=True)
    outcome = evaluate(example_config(script), script["invoke_component"], Selection.parse("all"),
                       RunContext(tracker=tracker))
    names_written = sorted(p.name for p in (folder / "reports").iterdir())
    stored = tracker.reader.stored(outcome.run_id)
    types = stored.tags["test_types"].split(",")
    assert names_written == sorted([f"report-{t}.md" for t in types]
                                   + [f"convergence-{t}.svg" for t in types]
                                   + ["report-human-review.md", "report-judge.md", "summary.md"])
    # the example's labels correct functional's accuracy: 20 drawn of its 26 entries
    assert stored.metrics["functional_labels_drawn"] == 20
    assert stored.metrics["functional_accuracy_corrected"] <= 1.0
    assert "| functional | ✓ |" in (folder / "reports" / "summary.md").read_text()
    assert {"functional", "smoke", "fairness", "repeatability", "bias"} <= set(types)
    assert stored.tags["groups_filter"] == "all"
    assert stored.params["component.temperature"] == "0.05"
    for t in types:
        assert f"{t}_accuracy" in stored.metrics


def test_example_calibration_replicates_and_plan(example: tuple[Path, Tracker, Any]) -> None:
    folder, tracker, script = example
    config, component = example_config(script), script["invoke_component"]
    calibrated = evaluate_calibration(config, component, Selection.parse("repeatability"),
                                      RunContext(tracker=tracker))
    raw = calibrated.run.raw_results.read_text().splitlines()
    calls = [json.loads(line)["entry_id"] for line in raw]
    per_entry = {calls.count(entry_id) for entry_id in set(calls)}
    assert per_entry == {20} and len(set(calls)) >= 10  # CALIBRATION_REPEAT_COUNT each
    assert all(entry_id.startswith("repeatability/") for entry_id in calls)
    report = (folder / "reports" / "report-calibration.md").read_text()
    assert "**Recommended REPEAT_COUNT:** " in report
    assert "recommended k = " in (folder / "reports" / "calibration.svg").read_text()

    evaluate(config, component, Selection.parse("all"), RunContext(tracker=tracker))
    evaluate_replicates(config, component, Selection.parse("all"), RunContext(tracker=tracker))
    # ROOT_SEED = 0 seeds every draw: the example's replicates disagree on some items.
    stability = json.loads((folder / "reports" / "stability.json").read_text())
    assert sum(m["unstable_items"] for m in stability["metrics"]) >= 1
    assert "## Unstable Items" in (folder / "reports" / "report-stability.md").read_text()
    plan = build_plan(tracker, "support-router/golden")
    _, path, text = record_plan(tracker, plan, folder / "reports", {})
    assert "| replicates |" in text and "| repeats |" in text
    assert "## Items or Replicates" in text
    assert path == folder / "reports" / "report-planning.md" and path.exists()


def test_example_runs_sequentially_and_against_its_own_run_from_the_command_line(
        example: tuple[Path, Tracker, Any], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    folder, tracker, script = example
    monkeypatch.setattr("evalkit.evaluation._context.Tracker", lambda *args, **kwargs: tracker)
    monkeypatch.chdir(folder)
    component = RecordingComponent()
    example_component = script["invoke_component"]

    def invoke_component(item: Any, call: Any) -> Any:
        component(item, call)
        return example_component(item, call)
    # the example's labels and F1 threshold are gates no sequence settles: both refused in
    # one error, and the run goes ahead once they are set aside
    assert eval_script(script, invoke_component, "--type=all", "--sequential") == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "cannot be used with LABELS_PATH or LABEL_SAMPLE" in err
    assert "; nor with EVAL_MIN_F1 (set for " in err and not component.calls
    unlabelled = {k: v for k, v in script.items()
                  if k not in ("LABELS_PATH", "LABEL_SAMPLE", "EVAL_MIN_F1")}
    out = folder / "sequential.json"
    status = eval_script(unlabelled, invoke_component, "--type=all", "--sequential",
                         "--json", str(out))
    summary = json.loads(out.read_text())
    settled = summary["sequential"]
    assert status == {"PASS": 0, "FAIL": 1}[settled["verdict"]] == summary["exit_status"]
    assert settled["calls_made"] == sum(component.count().values())
    assert settled["calls_made"] + settled["calls_saved"] == settled["calls_planned"]
    # entries of a type already settled are passed over, so those called are a subset of
    # the order (taken in it; concurrent calls may start out of it)
    called = set(component.count())
    assert called < set(settled["order"]) and len(called) == settled["entries_called"]
    last = max(settled["order"].index(e) for e in called)
    assert len(called) < last + 1 or not settled["calls_saved"]
    assert {t["test_type"] for t in settled["types"]} == {
        t["test_type"] for t in summary["types"]}
    assert f"; {settled['summary']};" in capsys.readouterr().out

    # against the example's last full run: only the candidate is called, and compare agrees
    baseline = evaluate(example_config(unlabelled), example_component, Selection.parse("all"),
                        RunContext(tracker=tracker))
    component.calls.clear()
    status = eval_script(unlabelled, invoke_component, "--type=all", "--against",
                         baseline.run_id, "--json", str(out))
    against = json.loads(out.read_text())
    assert against["sequential"]["against"] == baseline.run_id
    assert status == {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 5}[against["verdict"]]
    assert sum(component.count().values()) == against["sequential"]["calls_made"]
    # compare (the store here is in memory, so through the library) answers from the run
    results = compare(load_side(tracker.reader, baseline.run_id),
                      load_side(tracker.reader, against["run_id"]))
    assert all(r.margin is not None and r.margin.sequence is not None for r in results)
    assert str(margin_verdict(results)) == {0: "no worse", 1: "worse by more than the margin",
                                            5: "INCONCLUSIVE"}[status]
