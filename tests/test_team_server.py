"""Team scale: a real PostgreSQL-backed MLflow server on loopback, fail-fast tracking checks,
surviving an outage with a local bundle, resuming interrupted runs, concurrent writers."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest

from tests.conftest import entry, run_script, script_env, write_dataset, write_eval_script
from tests.test_traces import assert_traces_match_results
from tools.team_server import TeamServer, free_port

pytestmark = pytest.mark.slow

COMPONENT = """
import json, os, time
def invoke_component(entry, call):
    time.sleep(DELAY)
    with open("calls.log", "a") as log:
        log.write(json.dumps([entry.id, call.repeat]) + "\\n")
    return "a" if entry.id[-1] in "0123456" else "b"
"""


def project(folder: Path, experiment: str, entries: int = 12, delay: float = 0.0,
            **constants: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_dataset(folder / "ds", {
        **{f"e{i:02d}": entry("functional") for i in range(entries)},
        "rep": entry("repeatability")})
    write_eval_script(folder, {"EXPERIMENT_NAME": experiment, "DATASET_PATH": "ds",
                               "EVAL_MIN_ACCURACY": 0.5, "REPEAT_COUNT": 3,
                               "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5, "DELAY": delay,
                               "MAX_CONCURRENCY": 1, **constants}, COMPONENT)
    return folder


def calls_made(folder: Path) -> list[tuple[str, int]]:
    log = folder / "calls.log"
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()] \
        if log.exists() else []


def evalkit(folder: Path, *args: str, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalkit", *args], cwd=folder,
                          capture_output=True, text=True, env=script_env(folder, env),
                          timeout=300)


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamServer]:
    with TeamServer.create(tmp_path_factory.mktemp("team")) as server:
        yield server


def test_a_full_evaluation_against_the_team_server(tmp_path: Path, team: TeamServer) -> None:
    folder = project(tmp_path, "team/full")
    env = {"MLFLOW_TRACKING_URI": team.tracking_uri}
    done = run_script(folder, "--type=all", env=env)
    assert done.returncode == 0, done.stderr
    replicated = run_script(folder, "--type=all", "--replicates", env=env)
    assert replicated.returncode == 0, replicated.stderr
    assert not (folder / "mlflow.db").exists() and not (folder / "mlruns").exists()

    client = mlflow.MlflowClient(team.tracking_uri)
    experiment = client.get_experiment_by_name("team/full")
    runs = client.search_runs([experiment.experiment_id])
    parent = next(r for r in runs if r.data.tags.get("mode") == "replicates")
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    single = next(r for r in runs if "mode" not in r.data.tags
                  and "mlflow.parentRunId" not in r.data.tags)
    assert len(children) == 2 and all(r.info.status == "FINISHED" for r in runs)
    # right when the id ends in 0-6: e00-e06, e10, e11
    assert single.data.metrics["functional_accuracy"] == pytest.approx(9 / 12)
    assert "functional_noise_floor" in parent.data.metrics
    # (MlflowClient.load_table searches runs through the global URI, so read the file itself)
    table = json.loads(Path(client.download_artifacts(
        single.info.run_id, "results/entries.json", str(tmp_path / "table"))).read_text())
    assert len(table["data"]) == 13 and "correct" in table["columns"]
    # Reports rendered back through the server equal the ones written at the end of the run.
    rerender_dir = folder / "rerendered"
    rerendered = evalkit(folder, "report", single.info.run_id, "--output", str(rerender_dir),
                         env=env)
    assert rerendered.returncode == 0, rerendered.stderr
    for name in ("report-functional.md", "report-repeatability.md"):
        served = Path(client.download_artifacts(single.info.run_id, f"reports/{name}",
                                                str(tmp_path / "dl")))
        assert (rerender_dir / name).read_bytes() == served.read_bytes()
    history = json.loads(evalkit(folder, "history", "team/full", "--json", env=env).stdout)
    assert [r["replicates"] for r in history] == [2, None]


def test_a_dead_server_fails_the_run_in_seconds_before_any_call(tmp_path: Path) -> None:
    folder = project(tmp_path, "team/dead")
    started = time.monotonic()
    done = run_script(folder, "--type=all",
                      env={"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{free_port()}"})
    elapsed = time.monotonic() - started
    assert done.returncode == 4
    assert "cannot reach the MLflow tracking server at http://127.0.0.1:" in done.stderr
    assert "unset it to use the local store" in done.stderr
    assert calls_made(folder) == []
    assert elapsed < 10


def test_an_outage_mid_run_keeps_everything_in_a_bundle_then_syncs(
        tmp_path: Path, team: TeamServer) -> None:
    folder = project(tmp_path, "team/outage", entries=16, delay=0.25)
    env = {"MLFLOW_TRACKING_URI": team.tracking_uri}
    process = subprocess.Popen([sys.executable, "eval.py", "--type=all"], cwd=folder,
                               env=script_env(folder, env), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(calls_made(folder)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        team.mlflow.stop()  # the server dies mid-run; PostgreSQL and the artifacts survive
        stdout, stderr = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
        if team.mlflow.process is None or team.mlflow.process.poll() is not None:
            team.mlflow.start()
    assert process.returncode == 6, stderr
    bundle = Path(re.search(r"evalkit sync (\S+)", stderr).group(1))
    bundle = bundle if bundle.is_absolute() else folder / bundle
    raw = (bundle / "artifacts" / "raw" / "raw-results.jsonl").read_text().splitlines()
    assert len(raw) == len(calls_made(folder)) == 16 + 3  # nothing paid for was lost
    bundled_reports = {p.name: p.read_bytes()
                       for p in (bundle / "artifacts" / "reports").iterdir()}
    assert bundled_reports == {p.name: p.read_bytes() for p in (folder / "reports").iterdir()}
    run_id = json.loads((bundle / "bundle.json").read_text())["run_id"]
    client = mlflow.MlflowClient(team.tracking_uri)
    assert client.get_run(run_id).info.status == "RUNNING"  # left dangling by the outage

    synced = evalkit(folder, "sync", str(bundle), env=env)
    assert synced.returncode == 0, synced.stderr
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["functional_accuracy"] == pytest.approx(13 / 16)
    for name, content in bundled_reports.items():
        served = Path(client.download_artifacts(run_id, f"reports/{name}",
                                                str(tmp_path / "served")))
        assert served.read_bytes() == content
    served_raw = Path(client.download_artifacts(run_id, "raw/raw-results.jsonl",
                                                str(tmp_path / "served")))
    assert served_raw.read_text().splitlines() == raw
    assert_traces_match_results(team.tracking_uri, run_id)  # written by sync from the bundle
    rerendered = evalkit(folder, "report", run_id, "--output", str(tmp_path / "again"), env=env)
    assert rerendered.returncode == 0, rerendered.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "again").iterdir()} == bundled_reports
    history = json.loads(evalkit(folder, "history", "team/outage", "--json", env=env).stdout)
    assert [(r["run_id"], r["verdict"]) for r in history] == [(run_id, "PASS")]
    assert "no bundle to upload" in evalkit(folder, "sync", env=env).stdout


def test_a_run_stopped_during_an_outage_leaves_its_whole_bundle_for_sync(
        tmp_path: Path, team: TeamServer) -> None:
    # Two runs lose the server mid-run; then one gets Ctrl-C, the other SIGTERM. (A component
    # cannot crash a run: whatever it raises is that call's recorded error.)
    env = {"MLFLOW_TRACKING_URI": team.tracking_uri}
    stops = {"SIGINT": (signal.SIGINT, "KILLED"), "SIGTERM": (signal.SIGTERM, "KILLED")}
    folders = {how: project(tmp_path / how, f"team/stopped-{how}", entries=80, delay=0.2)
               for how in stops}
    processes = {how: subprocess.Popen([sys.executable, "eval.py", "--type=all"], cwd=folder,
                                       env=script_env(folder, env), stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
                 for how, folder in folders.items()}
    try:
        deadline = time.monotonic() + 120
        while min(len(calls_made(f)) for f in folders.values()) < 3 \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        team.mlflow.stop()
        for how, (stop_signal, _) in stops.items():
            processes[how].send_signal(stop_signal)
        stderr = {how: p.communicate(timeout=180)[1] for how, p in processes.items()}
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
        team.mlflow.start()

    client = mlflow.MlflowClient(team.tracking_uri)
    for how, (_, status) in stops.items():
        folder, process = folders[how], processes[how]
        assert process.returncode == 130, stderr[how]
        (bundle,) = (folder / ".evalkit" / "bundles").iterdir()
        assert f"evalkit sync {bundle.relative_to(folder)}" in stderr[how]
        document = json.loads((bundle / "bundle.json").read_text())
        assert document["status"] == status
        raw = (bundle / "artifacts" / "raw" / "raw-results.jsonl").read_text().splitlines()
        made = calls_made(folder)
        assert 3 <= len(raw) == len(made) < 80 + 3  # every call paid for, none invented
        assert [json.loads(line)["entry_id"] for line in raw] == [e for e, _ in made]
        run_id = document["run_id"]
        assert client.get_run(run_id).info.status == "RUNNING"  # the server never heard

        synced = evalkit(folder, "sync", env=env)
        assert synced.returncode == 0, synced.stderr
        assert f"as run {run_id}" in synced.stdout
        run = client.get_run(run_id)
        assert run.info.status == status
        served = Path(client.download_artifacts(run_id, "raw/raw-results.jsonl",
                                                str(tmp_path / "served" / how)))
        assert served.read_text().splitlines() == raw


@pytest.mark.parametrize("how", ["eval.py --resume", "evalkit resume"])
def test_an_interrupted_run_resumes_with_only_the_missing_calls(tmp_path: Path,
                                                                how: str) -> None:
    reference = project(tmp_path / "reference", "team/resume", delay=0.0)
    assert run_script(reference, "--type=all").returncode == 0
    folder = project(tmp_path / "interrupted", "team/resume", delay=0.2)
    process = subprocess.Popen([sys.executable, "eval.py", "--type=all"], cwd=folder,
                               env=script_env(folder), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(calls_made(folder)) < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    run_id = re.search(r"--resume (\w+)", stderr).group(1)
    before = calls_made(folder)
    assert 5 <= len(before) < 15

    if how == "evalkit resume":
        done = evalkit(folder, "resume", run_id)
    else:
        done = run_script(folder, "--resume", run_id)
    assert done.returncode == 0, done.stderr
    after = calls_made(folder)[len(before):]
    everything = [(f"e{i:02d}", 0) for i in range(12)] + [("rep", r) for r in range(3)]
    assert sorted(before + after) == sorted(everything)  # each call made exactly once
    assert not set(before) & set(after)

    def run_of(store: Path) -> mlflow.entities.Run:
        client = mlflow.MlflowClient(f"sqlite:///{store / 'mlflow.db'}")
        experiment = client.get_experiment_by_name("team/resume")
        (found,) = client.search_runs([experiment.experiment_id])
        return found

    resumed, uninterrupted = run_of(folder), run_of(reference)
    assert resumed.info.run_id == run_id and resumed.info.status == "FINISHED"
    assert resumed.data.tags["resumed"] == "true"
    assert resumed.data.tags["resume_calls_saved"] == str(len(before))
    assert resumed.data.tags["resume_calls_made"] == str(len(after))

    def stable(metrics: dict[str, float]) -> dict[str, float]:
        return {k: v for k, v in metrics.items() if "latency" not in k}

    assert stable(resumed.data.metrics) == stable(uninterrupted.data.metrics)
    assert_traces_match_results(f"sqlite:///{folder / 'mlflow.db'}", run_id)  # no duplicate

    def body(report: Path) -> list[str]:
        return [line for line in report.read_text().splitlines()
                if not line.startswith(("- **Date:**", "- **MLflow:**"))]

    for name in ("report-functional.md", "report-repeatability.md"):
        assert body(folder / "reports" / name) == body(reference / "reports" / name)


def test_resume_refuses_a_changed_dataset(tmp_path: Path) -> None:
    folder = project(tmp_path, "team/changed", delay=0.2)
    process = subprocess.Popen([sys.executable, "eval.py", "--type=all"], cwd=folder,
                               env=script_env(folder), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    while len(calls_made(folder)) < 2:
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    run_id = re.search(r"--resume (\w+)", stderr).group(1)
    write_dataset(folder / "ds", {"e00": entry("functional", expected="changed")})
    done = run_script(folder, "--resume", run_id)
    assert done.returncode == 2
    assert "dataset_digest" in done.stderr and "differ" in done.stderr


@pytest.mark.parametrize("destination", ["local store", "team server"])
def test_two_evaluations_write_at_the_same_time(tmp_path: Path, team: TeamServer,
                                                destination: str) -> None:
    env = {} if destination == "local store" else {"MLFLOW_TRACKING_URI": team.tracking_uri}
    # Both use tmp_path/mlflow.db when local, and both start before it exists.
    shared = {**script_env(tmp_path, env, seed_store=False)}
    folders = [project(tmp_path / f"writer{i}", f"team/concurrent-{destination}-{i % 2}",
                       entries=20, delay=0.01) for i in range(2)]
    processes = [subprocess.Popen([sys.executable, "eval.py", "--type=all"], cwd=f,
                                  env=shared, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for f in folders]
    outputs = [p.communicate(timeout=300) for p in processes]
    for process, (_, stderr) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, stderr
    uri = shared["MLFLOW_TRACKING_URI"]
    client = mlflow.MlflowClient(uri)
    for i in range(2):
        experiment = client.get_experiment_by_name(f"team/concurrent-{destination}-{i}")
        (run,) = client.search_runs([experiment.experiment_id])
        assert run.info.status == "FINISHED"
        assert run.data.metrics["functional_samples"] == 20
        assert {a.path for a in client.list_artifacts(run.info.run_id, "reports")} == {
            "reports/report-functional.md", "reports/report-repeatability.md",
            "reports/summary.md"}
