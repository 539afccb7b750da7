"""Results at a glance: the verdict line with the run's URL, the JSON summary and JUnit XML
for CI, summary.md, failures first and the field that differs, as a user runs eval.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import mlflow
import pytest

from evalkit.reports._common import TEXT_LIMIT, distinct
from evalkit.tracking import run_url, shown_uri, ui_base
from tests.conftest import entry, run_script, script_env, write_dataset, write_eval_script

Project = tuple[Path, "subprocess.CompletedProcess[str]"]

COMPONENT = """
def invoke_component(entry, call):
    if entry.id == "broken":
        raise RuntimeError("provider said no")
    if entry.id.startswith("greet"):
        # The reply changes with the name: only that field differs between the variants.
        return {"route": "billing", "reply": f"Hello {entry.input}, we will refund you."}
    if entry.id == "wobbly":
        return {"route": "billing", "priority": ["low", "high"][call.repeat % 2]}
    return entry.expected_output if entry.id != "wrong" else "nope"
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    folder = tmp_path_factory.mktemp("ci")
    write_dataset(folder / "ds", {
        "right": entry("functional"), "wrong": entry("functional"),
        "broken": entry("functional"), "smoke-ok": entry("smoke"),
        "greet-ann": entry("bias", bias_group="refund", input="Ann"),
        "greet-bob": entry("bias", bias_group="refund", input="Bob"),
        "wobbly": entry("repeatability")})
    write_eval_script(folder, {"EXPERIMENT_NAME": "ci/glance", "DATASET_PATH": "ds",
                               "EVAL_MIN_ACCURACY": 0.5, "EVAL_MIN_ACCURACY_BIAS": 0.0,
                               "REPEAT_COUNT": 4,
                               "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0}, COMPONENT)
    done = run_script(folder, "--type=all", "--json", "out/summary.json",
                      "--junit-xml", "out/junit.xml")
    return folder, done


def test_verdict_line_names_types_counts_and_the_run_url(project: Project) -> None:
    folder, done = project
    assert done.returncode == 1, done.stderr  # functional: 1 of 3 right
    *_, verdict, url = done.stdout.strip().splitlines()
    assert re.fullmatch(r"FAIL: 3/4 types passed \(failed: functional\); 7 entries, 10 calls, "
                        r"1 errors, \d+\.\d s", verdict), verdict
    client = mlflow.MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("ci/glance")
    (run,) = client.search_runs([experiment.experiment_id])
    assert url == (f"run: http://127.0.0.1:5000/#/experiments/{experiment.experiment_id}"
                   f"/runs/{run.info.run_id}")
    assert run.data.tags["run_url"] == url.removeprefix("run: ")


def test_json_summary(project: Project) -> None:
    folder, _ = project
    doc = json.loads((folder / "out" / "summary.json").read_text())
    assert (doc["verdict"], doc["exit_status"], doc["mode"]) == ("FAIL", 1, "evaluation")
    assert doc["run_url"].endswith(f"/runs/{doc['run_id']}")
    assert (doc["entries"], doc["calls"], doc["component_errors"]) == (7, 10, 1)
    types = {t["test_type"]: t for t in doc["types"]}
    assert set(types) == {"functional", "smoke", "bias", "repeatability"}
    functional = types["functional"]
    assert functional["verdict"] == "FAIL" and functional["accuracy"] == pytest.approx(1 / 3)
    assert functional["min_accuracy"] == 0.5 and functional["samples"] == 3
    assert functional["ci_lower"] < 1 / 3 < functional["ci_upper"]
    assert functional["failures"] == ["functional_accuracy 0.333 < 0.5"]
    assert types["smoke"]["verdict"] == "PASS" and types["smoke"]["accuracy"] == 1.0


def test_junit_xml_has_a_case_per_entry_and_type(project: Project) -> None:
    folder, _ = project
    root = ET.parse(folder / "out" / "junit.xml").getroot()
    assert root.tag == "testsuites"
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
    folder, _ = project
    summary = (folder / "reports" / "summary.md").read_text()
    rows = [line for line in summary.splitlines() if line.startswith("| ")][1:]
    assert rows[0].startswith("| functional | ✗ | 0.333 [")
    assert "| 2 of 3 (1 errors) | [report-functional.md](report-functional.md) |" in rows[0]
    assert all("✓" in row for row in rows[1:])
    assert "- **Verdict:** **FAIL**" in summary
    assert re.search(r"\[[0-9a-f]{32}\]\(http://127\.0\.0\.1:5000/#/experiments/\d+/runs/"
                     r"[0-9a-f]{32}\)", summary)
    run_id = re.search(r"/runs/([0-9a-f]{32})", summary)
    assert run_id is not None
    again = subprocess.run([sys.executable, "-m", "evalkit", "report", run_id.group(1),
                            "--output", "again"], cwd=folder, capture_output=True, text=True,
                           env=script_env(folder), timeout=120)
    assert again.returncode == 0, again.stderr
    assert (folder / "again" / "summary.md").read_bytes() == summary.encode()


def test_failures_come_first_in_a_small_report(project: Project) -> None:
    folder, _ = project
    report = (folder / "reports" / "report-functional.md").read_text()
    section = report.split("## Per-item Results\n", 1)[1].split("\n## ", 1)[0]
    ids = [line.split(" | ")[0].removeprefix("| ") for line in section.splitlines()
           if line.startswith("| ") and not line.startswith("| ID")]
    assert ids == ["broken", "wrong", "right"]  # dataset order is broken, right, wrong


def test_bias_and_repeatability_show_the_field_that_differs(
        project: Project) -> None:
    folder, _ = project
    bias = (folder / "reports" / "report-bias.md").read_text()
    assert ("2 distinct of 2; 1 field differs, 1 agree:<br>field **reply**: "
            "1× Hello Ann, we will refund you.; 1× Hello Bob, we will refund you.") in bias
    repeatability = (folder / "reports" / "report-repeatability.md").read_text()
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
