"""eval scripts and the evalkit command as users run them: subprocesses, real MLflow stores."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pytest

from tests.conftest import REPO, entry, run_script, script_env, write_dataset, write_eval_script

CONSTANTS = {"EXPERIMENT_NAME": "cli/tests", "DATASET_PATH": "ds", "EVAL_MIN_ACCURACY": 0.5}
ECHO = """
def invoke_component(entry, call):
    return entry.expected_output if entry.id != "wrong" else "nope"
"""


def store(folder: Path) -> mlflow.MlflowClient:
    return mlflow.MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")


def only_run(folder: Path) -> mlflow.entities.Run:
    client = store(folder)
    experiment = client.get_experiment_by_name("cli/tests")
    (found,) = client.search_runs([experiment.experiment_id])
    return found


def test_exact_only_run_never_imports_torch(tmp_path: Path) -> None:
    write_dataset(tmp_path / "ds", {"a": entry("functional"), "b": entry("smoke")})
    write_eval_script(tmp_path, CONSTANTS, ECHO, epilogue="""
        import json, sys
        heavy = sorted(m for m in sys.modules
                       if m.split(".")[0] in {"torch", "sentence_transformers", "transformers"})
        open("heavy_modules.json", "w").write(json.dumps(heavy))
    """)
    done = run_script(tmp_path, "--type=all")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "heavy_modules.json").read_text()) == []


def test_exit_status_one_when_a_threshold_is_missed(tmp_path: Path) -> None:
    write_dataset(tmp_path / "ds", {"right": entry("functional"), "wrong": entry("functional"),
                                    "wrong2": entry("functional", expected="b")})
    write_eval_script(tmp_path, CONSTANTS, ECHO)
    done = run_script(tmp_path, "--type=functional")
    # 'wrong' answers "nope" (0); 'right' and 'wrong2' echo their expected output (1): 2/3 >= 0.5
    assert done.returncode == 0, done.stderr
    write_eval_script(tmp_path, {**CONSTANTS, "EVAL_MIN_ACCURACY": 0.9}, ECHO)
    done = run_script(tmp_path, "--type=functional")
    assert done.returncode == 1
    assert "threshold missed: functional_accuracy 0.667 < 0.9" in done.stderr
    assert "**Overall: FAIL**" in (tmp_path / "reports" / "report-functional.md").read_text()


@pytest.mark.parametrize(("args", "constants", "message"), [
    ([], CONSTANTS, "the following arguments are required: --type"),
    (["--type=smok"], CONSTANTS, "invalid choice: 'smok'"),
    (["--type=all"], {**CONSTANTS, "EVAL_MIN_ACURACY": 0.5}, "did you mean EVAL_MIN_ACCURACY"),
    (["--type=all", "--groups=nothing"], CONSTANTS, "nothing to evaluate"),
])
def test_usage_and_configuration_errors_exit_2_before_any_run(
        tmp_path: Path, args: list[str], constants: dict[str, object], message: str) -> None:
    write_dataset(tmp_path / "ds", {"a": entry("functional")})
    write_eval_script(tmp_path, constants, ECHO)
    done = run_script(tmp_path, *args, seed_store=False)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "mlflow.db").exists()


def test_unreachable_tracking_server_is_a_runtime_failure(tmp_path: Path) -> None:
    write_dataset(tmp_path / "ds", {"a": entry("functional")})
    write_eval_script(tmp_path, CONSTANTS, """
        def invoke_component(entry, call):
            open("called", "w").write("yes")
            return "a"
    """)
    done = run_script(tmp_path, "--type=all", env={
        "MLFLOW_TRACKING_URI": "http://127.0.0.1:9", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
        "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}, timeout=120)
    assert done.returncode == 4
    assert "http://127.0.0.1:9" in done.stderr
    assert not (tmp_path / "called").exists()


def test_help_documents_options_and_exit_statuses(tmp_path: Path) -> None:
    write_eval_script(tmp_path, CONSTANTS, ECHO)
    for command in ([sys.executable, "eval.py", "--help"],
                    [sys.executable, "-m", "evalkit", "--help"]):
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True,
                              env=script_env(tmp_path), check=True)
        for status in ("0 ", "1 ", "2 ", "3 ", "4 ", "130"):
            assert f"\n  {status}" in done.stdout
    done = subprocess.run([sys.executable, "eval.py", "--help"], cwd=tmp_path,
                          capture_output=True, text=True, env=script_env(tmp_path))
    assert "--groups A,B" in done.stdout and "--human-review" in done.stdout


def test_evalkit_report_reproduces_reports_byte_for_byte(tmp_path: Path) -> None:
    write_dataset(tmp_path / "ds", {
        "a": entry("functional"), "b": entry("functional", expected={"k": "v|w"}),
        "r": entry("repeatability"), "x1": entry("bias", bias_group=1),
        "x2": entry("bias", bias_group=1),
        "h": entry("smoke", human_review=True, human_instructions="read it")})
    write_eval_script(tmp_path, {**CONSTANTS, "REPEAT_COUNT": 3,
                                 "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5}, ECHO)
    assert run_script(tmp_path, "--type=all").returncode == 0
    reports = tmp_path / "reports"
    original = {p.name: p.read_bytes() for p in reports.iterdir()}
    assert len(original) == 6  # five reports and summary.md
    shutil.rmtree(reports)
    run_id = only_run(tmp_path).info.run_id
    done = subprocess.run([sys.executable, "-m", "evalkit", "report", run_id], cwd=tmp_path,
                          capture_output=True, text=True, env=script_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert {p.name: p.read_bytes() for p in reports.iterdir()} == original


def test_report_of_an_unknown_run_fails_clearly(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "evalkit", "report", "0" * 32], cwd=tmp_path,
                          capture_output=True, text=True, env=script_env(tmp_path))
    assert done.returncode == 4
    assert f"run {'0' * 32} not found" in done.stderr


SLOW = """
import time
def invoke_component(entry, call):
    time.sleep(0.25)
    return entry.expected_output
"""


@pytest.mark.parametrize(("stop_signal", "sigint_at_start"), [
    (signal.SIGINT, signal.SIG_DFL),
    # A background job (`cmd &`) and some CI runners start processes with SIGINT ignored;
    # Python then installs no handler of its own, and only evalkit's makes Ctrl-C work.
    (signal.SIGINT, signal.SIG_IGN),
    (signal.SIGTERM, signal.SIG_DFL),
], ids=["SIGINT", "SIGINT-ignored-at-start", "SIGTERM"])
def test_interrupted_run_keeps_every_output_and_is_marked_killed(
        tmp_path: Path, stop_signal: signal.Signals, sigint_at_start: signal.Handlers) -> None:
    write_dataset(tmp_path / "ds", {f"e{i:02d}": entry("functional") for i in range(40)})
    write_eval_script(tmp_path, CONSTANTS, SLOW)
    # The child's SIGINT disposition is set here, not inherited from however pytest started.
    process = subprocess.Popen([sys.executable, "eval.py", "--type=all"], cwd=tmp_path,
                               env=script_env(tmp_path), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, sigint_at_start))
    deadline = time.monotonic() + 120
    raw_files: list[Path] = []
    while time.monotonic() < deadline:
        raw_files = list((tmp_path / ".evalkit" / "runs").glob("*/raw-results.jsonl"))
        if raw_files and len(raw_files[0].read_text().splitlines()) >= 4:
            break
        time.sleep(0.05)
    process.send_signal(stop_signal)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "marked KILLED" in stderr

    local_lines = raw_files[0].read_text().splitlines()
    assert 4 <= len(local_lines) < 40
    records = [json.loads(line) for line in local_lines]  # every line is complete
    assert [r["entry_id"] for r in records] == [f"e{i:02d}" for i in range(len(records))]
    killed = only_run(tmp_path)
    assert killed.info.status == "KILLED"
    artifact = store(tmp_path).download_artifacts(killed.info.run_id, "raw/raw-results.jsonl",
                                                  str(tmp_path / "download"))
    assert Path(artifact).read_text().splitlines() == local_lines
    assert not (tmp_path / "reports").exists()


@pytest.fixture(scope="module")
def example_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's own example (eval.py, the router, its dataset) in a scratch folder."""
    folder = tmp_path_factory.mktemp("example")
    shutil.copy(REPO / "eval.py", folder)
    shutil.copytree(REPO / "examples", folder / "examples")
    shutil.copytree(REPO / "datasets", folder / "datasets")
    return folder


@pytest.mark.slow
def test_example_repeatability_run_writes_only_its_report(example_copy: Path) -> None:
    done = run_script(example_copy, "--type=repeatability")
    assert done.returncode in (0, 1), done.stderr  # the router is genuinely stochastic
    assert sorted(p.name for p in (example_copy / "reports").iterdir()) == [
        "report-repeatability.md", "summary.md"]
    report = (example_copy / "reports" / "report-repeatability.md").read_text()
    assert "- **Repeat count:** 5" in report
    assert "| ID | Input | Outputs (how the repeats differ) | Avg pairwise cosine | Result |" \
        in report
    client = store(example_copy)
    experiment = client.get_experiment_by_name("support-router/golden")
    (found,) = client.search_runs([experiment.experiment_id])
    assert found.data.metrics["repeat_count"] == 5
    assert 0 <= found.data.metrics["repeatability_accuracy"] <= 1
    assert found.data.tags["test_types"] == "repeatability"
    evaluation = json.loads(Path(client.download_artifacts(
        found.info.run_id, "results/evaluation.json", str(example_copy / "dl"))).read_text())
    items = evaluation["types"][0]["items"]
    assert len(items) >= 10 and all(len(i["outputs"]) == 5 for i in items)
    assert all(-1 <= i["similarity"] <= 1 for i in items)
    assert f"| {items[0]['id']} |" in report


@pytest.mark.slow
def test_example_full_run_reports_every_type(example_copy: Path) -> None:
    shutil.rmtree(example_copy / "reports", ignore_errors=True)
    done = run_script(example_copy, "--type=all")
    assert done.returncode in (0, 1), done.stderr
    names = sorted(p.name for p in (example_copy / "reports").iterdir())
    client = store(example_copy)
    experiment = client.get_experiment_by_name("support-router/golden")
    latest = client.search_runs([experiment.experiment_id], order_by=["start_time DESC"])[0]
    types = latest.data.tags["test_types"].split(",")
    assert names == sorted([f"report-{t}.md" for t in types]
                           + ["report-human-review.md", "summary.md"])
    assert {"functional", "smoke", "fairness", "repeatability", "bias"} <= set(types)
    assert latest.data.tags["groups_filter"] == "all"
    assert latest.data.params["component.temperature"] == "0.05"
    for t in types:
        assert f"{t}_accuracy" in latest.data.metrics


@pytest.mark.slow
def test_example_calibration_and_plan(example_copy: Path) -> None:
    done = run_script(example_copy, "--type=repeatability", "--calibrate")
    assert done.returncode == 0, done.stderr
    calibration_run = next(line.split()[3] for line in done.stdout.splitlines()
                           if line.startswith("mlflow: calibration run"))
    raw = example_copy / ".evalkit" / "runs" / calibration_run / "raw-results.jsonl"
    calls = [json.loads(line)["entry_id"] for line in raw.read_text().splitlines()]
    per_entry = {calls.count(entry_id) for entry_id in set(calls)}
    assert per_entry == {20} and len(set(calls)) >= 10  # CALIBRATION_REPEAT_COUNT each
    assert all(entry_id.startswith("repeatability/") for entry_id in calls)
    report = (example_copy / "reports" / "report-calibration.md").read_text()
    assert "**Recommended REPEAT_COUNT:** " in report
    assert (example_copy / "reports" / "calibration.png").stat().st_size > 10_000

    for args in (["--type=all"], ["--type=all", "--replicates"]):
        assert run_script(example_copy, *args).returncode in (0, 1)
    # ROOT_SEED = 0 seeds every draw: the example's replicates disagree on some items.
    stability = json.loads((example_copy / "reports" / "stability.json").read_text())
    assert sum(m["unstable_items"] for m in stability["metrics"]) >= 1
    assert "## Unstable Items" in (example_copy / "reports" / "report-stability.md").read_text()
    plan = subprocess.run([sys.executable, "-m", "evalkit", "plan", "support-router/golden"],
                          cwd=example_copy, capture_output=True, text=True,
                          env=script_env(example_copy), timeout=120)
    assert plan.returncode == 0, plan.stderr
    assert "| replicates |" in plan.stdout and "| repeats |" in plan.stdout
    assert "## Items or Replicates" in plan.stdout
    assert (example_copy / "reports" / "report-planning.md").exists()
