"""Team scale: a run that loses its tracking server goes on, ends as a local bundle and is
uploaded by sync; interrupted runs resume with only their missing calls; two evaluations
write to one store at once; behind MLflow's basic auth an editor runs, while a reader and a
wrong password are refused before any call (exit 2).

What evalkit does about an outage, a stop or a resume is tested in memory against a store that
stops answering on cue in tests/promises/test_server_outage.py. Here a real PostgreSQL-backed
MLflow server on loopback (``tests/support/team_server.py``) shows the same through MLflow's
client and server; a subprocess only where the promise is about the process: its exit status and
what it prints.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlflow
import pytest

from evalkit import RunContext, Selection, evaluate
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset, write_eval_script
from tests.support.commands import evalkit_command
from tests.support.outages import project_config, right_when_0_to_6
from tests.support.processes import run_eval, run_evalkit, start_eval, wait_for
from tests.support.team_server import TeamServer
from tests.support.traces import assert_traces_match_results

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
    """The eval script of :func:`project_config`, run as users run it; it logs each call to
    ``calls.log``."""
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


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamServer]:
    with TeamServer.create(tmp_path_factory.mktemp("team")) as server:
        yield server


@pytest.fixture
def team_up(team: TeamServer) -> Iterator[TeamServer]:
    """The team server, started again after a test that stopped it."""
    yield team
    if team.mlflow.process is None or team.mlflow.process.poll() is not None:
        team.mlflow.start()


@pytest.fixture
def command(capsys: pytest.CaptureFixture[str]) -> Any:
    """``evalkit ARGS`` in this process: (status, stdout, stderr)."""
    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        status = evalkit_command(*args)
        out, err = capsys.readouterr()
        return status, out, err
    return run


def test_a_full_evaluation_against_the_team_server(
        tmp_path: Path, team_up: TeamServer, command: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from evalkit.evaluation import evaluate_replicates

    config = project_config(tmp_path, "team/full", REPLICATES=2)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", team_up.tracking_uri)  # as its users export it
    tracker = Tracker()
    single = evaluate(config, right_when_0_to_6, Selection("all"),
                      RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    series = evaluate_replicates(config, right_when_0_to_6, Selection("all"),
                                 RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "mlruns").exists()

    client = mlflow.MlflowClient(team_up.tracking_uri)
    experiment = client.get_experiment_by_name("team/full")
    runs = client.search_runs([experiment.experiment_id])
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == series.parent_run_id]
    assert len(runs) == 4 and len(children) == 2
    assert all(r.info.status == "FINISHED" for r in runs)
    run = client.get_run(single.run_id)
    # right when the id ends in 0-6: e00-e06, e10, e11
    assert run.data.metrics["functional_accuracy"] == pytest.approx(9 / 12)
    assert "functional_noise_floor" in client.get_run(series.parent_run_id).data.metrics
    # (MlflowClient.load_table searches runs through the process's URI: read the file itself)
    table = json.loads(Path(client.download_artifacts(
        single.run_id, "results/entries.json", str(tmp_path / "table"))).read_text())
    assert len(table["data"]) == 13 and "correct" in table["columns"]
    assert_traces_match_results(team_up.tracking_uri, single.run_id)
    # Reports rendered back through the server equal the ones written at the end of the run.
    status, _, err = command("report", single.run_id, "--output", str(tmp_path / "again"))
    assert status == 0, err
    for name in ("report-functional.md", "report-repeatability.md"):
        served = Path(client.download_artifacts(single.run_id, f"reports/{name}",
                                                str(tmp_path / "dl")))
        assert (tmp_path / "again" / name).read_bytes() == served.read_bytes()
    status, out, _ = command("history", "team/full", "--json")
    assert [r["replicates"] for r in json.loads(out)] == [2, None]


def test_an_outage_mid_run_exits_6_with_a_bundle_that_sync_uploads(
        tmp_path: Path, team_up: TeamServer, command: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = project(tmp_path, "team/outage", entries=16, delay=0.25)
    env = {"MLFLOW_TRACKING_URI": team_up.tracking_uri}
    process = start_eval(folder, "--type=all", env=env)
    try:
        wait_for(lambda: len(calls_made(folder)) >= 3, "three calls")
        team_up.mlflow.stop()  # the server dies mid-run; PostgreSQL and the artifacts survive
        process.wait(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
        team_up.mlflow.start()
    output = (folder / "run.log").read_text()
    assert process.returncode == 6, output
    assert "Traceback" not in output
    found = re.search(r"evalkit sync (\S+)", output)
    assert found, output
    bundle = Path(found.group(1))
    bundle = bundle if bundle.is_absolute() else folder / bundle
    raw = (bundle / "artifacts" / "raw" / "raw-results.jsonl").read_text().splitlines()
    assert len(raw) == len(calls_made(folder)) == 16 + 3  # nothing paid for was lost
    bundled_reports = {p.name: p.read_bytes()
                       for p in (bundle / "artifacts" / "reports").iterdir()}
    assert bundled_reports == {p.name: p.read_bytes() for p in (folder / "reports").iterdir()}
    run_id = json.loads((bundle / "bundle.json").read_text())["run_id"]
    client = mlflow.MlflowClient(team_up.tracking_uri)
    assert client.get_run(run_id).info.status == "RUNNING"  # left dangling by the outage

    monkeypatch.setenv("MLFLOW_TRACKING_URI", team_up.tracking_uri)
    monkeypatch.chdir(folder)  # where the bundles are
    status, out, err = command("sync")
    assert status == 0, err
    assert f"as run {run_id}" in out
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
    assert_traces_match_results(team_up.tracking_uri, run_id)  # written by sync from the bundle
    status, _, err = command("report", run_id, "--output", str(tmp_path / "again"))
    assert status == 0, err
    assert {p.name: p.read_bytes() for p in (tmp_path / "again").iterdir()} == bundled_reports
    status, out, _ = command("history", "team/outage", "--json")
    assert [(r["run_id"], r["verdict"]) for r in json.loads(out)] == [(run_id, "PASS")]
    assert command("sync")[1] == "no bundle to upload\n"


def test_ctrl_c_during_an_outage_exits_130_naming_the_bundle(
        tmp_path: Path, team_up: TeamServer) -> None:
    folder = project(tmp_path, "team/stopped", entries=80, delay=0.2)
    env = {"MLFLOW_TRACKING_URI": team_up.tracking_uri}
    process = start_eval(folder, "--type=all", env=env)
    try:
        wait_for(lambda: len(calls_made(folder)) >= 3, "three calls")
        team_up.mlflow.stop()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
        team_up.mlflow.start()
    output = (folder / "run.log").read_text()
    assert process.returncode == 130, output
    (bundle,) = (folder / ".evalkit" / "bundles").iterdir()
    assert f"evalkit sync {bundle.relative_to(folder)}" in output
    document = json.loads((bundle / "bundle.json").read_text())
    assert document["status"] == "KILLED"
    raw = (bundle / "artifacts" / "raw" / "raw-results.jsonl").read_text().splitlines()
    assert [tuple(json.loads(line)[k] for k in ("entry_id", "repeat")) for line in raw] == \
        calls_made(folder)  # every call paid for, none invented
    synced = run_evalkit(folder, "sync", env=env)
    assert synced.returncode == 0, synced.stderr
    run = mlflow.MlflowClient(team_up.tracking_uri).get_run(document["run_id"])
    assert run.info.status == "KILLED"


def test_ctrl_c_then_evalkit_resume_makes_only_the_missing_calls(tmp_path: Path) -> None:
    folder = project(tmp_path, "team/resume", delay=0.2)
    process = start_eval(folder, "--type=all")
    try:
        wait_for(lambda: len(calls_made(folder)) >= 5, "five calls")
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    output = (folder / "run.log").read_text()
    assert process.returncode == 130, output
    found = re.search(r"--resume (\w+)", output)
    assert found, output
    run_id = found.group(1)
    before = calls_made(folder)
    assert 5 <= len(before) < 15

    done = run_evalkit(folder, "resume", run_id)  # which runs eval.py --resume RUN_ID
    assert done.returncode == 0, done.stderr
    after = calls_made(folder)[len(before):]
    everything = [(f"e{i:02d}", 0) for i in range(12)] + [("rep", r) for r in range(3)]
    assert sorted(before + after) == sorted(everything)  # each call made exactly once
    store = f"sqlite:///{folder / 'mlflow.db'}"
    run = mlflow.MlflowClient(store).get_run(run_id)
    assert run.info.status == "FINISHED"
    assert (run.data.tags["resumed"], run.data.tags["resume_calls_saved"],
            run.data.tags["resume_calls_made"]) == ("true", str(len(before)), str(len(after)))
    assert run.data.metrics["functional_accuracy"] == pytest.approx(9 / 12)
    assert_traces_match_results(store, run_id)  # none written twice


@pytest.mark.parametrize("destination", ["local store", "team server"])
def test_two_evaluations_write_at_the_same_time(tmp_path: Path, team: TeamServer,
                                                destination: str) -> None:
    # Both use tmp_path/mlflow.db when local, and both start before it exists.
    uri = (f"sqlite:///{tmp_path / 'mlflow.db'}" if destination == "local store"
           else team.tracking_uri)
    folders = [project(tmp_path / f"writer{i}", f"team/concurrent-{destination}-{i % 2}",
                       entries=20, delay=0.01) for i in range(2)]
    processes = [start_eval(f, "--type=all", env={"MLFLOW_TRACKING_URI": uri})
                 for f in folders]
    for folder, process in zip(folders, processes, strict=True):
        try:
            process.wait(timeout=300)
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == 0, (folder / "run.log").read_text()
    client = mlflow.MlflowClient(uri)
    for i in range(2):
        experiment = client.get_experiment_by_name(f"team/concurrent-{destination}-{i}")
        (run,) = client.search_runs([experiment.experiment_id])
        assert run.info.status == "FINISHED"
        assert run.data.metrics["functional_samples"] == 20
        assert {a.path for a in client.list_artifacts(run.info.run_id, "reports")} == {
            "reports/report-functional.md", "reports/report-repeatability.md",
            "reports/summary.md", "reports/convergence-functional.svg",
            "reports/convergence-repeatability.svg"}


# --- behind MLflow's basic auth (make dev-mlflow-server AUTH=1) ----------------------------------

@pytest.fixture(scope="module")
def auth_team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamServer]:
    with TeamServer.create(tmp_path_factory.mktemp("auth-team"),
                           auth_experiment="team/auth") as server:
        yield server


def as_user(server: TeamServer, user: str, password: str | None = None) -> dict[str, str]:
    """The environment a user exports: the server's URI and MLflow's credential variables."""
    auth = server.mlflow.auth
    assert auth is not None
    return {"MLFLOW_TRACKING_URI": server.tracking_uri, "MLFLOW_TRACKING_USERNAME": user,
            "MLFLOW_TRACKING_PASSWORD": password or auth.passwords[user]}


def test_behind_basic_auth_the_editor_runs_the_reader_and_a_wrong_password_exit_2(
        tmp_path: Path, auth_team: TeamServer) -> None:
    auth = auth_team.mlflow.auth
    assert auth is not None
    folder = project(tmp_path / "editor", "team/auth", entries=4)
    done = run_eval(folder, "--type=all", "--json", "summary.json",
                    env=as_user(auth_team, "editor"))
    assert done.returncode == 0, done.stderr
    run_id = json.loads((folder / "summary.json").read_text())["run_id"]
    assert_traces_match_results(auth.uri_as("admin", auth_team.tracking_uri), run_id)

    folder = project(tmp_path / "reader", "team/auth", entries=4)
    done = run_eval(folder, "--type=all", env=as_user(auth_team, "reader"))
    assert done.returncode == 2, done.stderr
    assert (f"error: user reader lacks EDIT permission on experiment 'team/auth' at "
            f"{auth_team.tracking_uri} (HTTP 403)") in done.stderr
    assert calls_made(folder) == []

    done = run_eval(folder, "--type=all", env=as_user(auth_team, "editor", "not-the-password"))
    assert done.returncode == 2, done.stderr
    assert ("refused the credentials (HTTP 401; set: MLFLOW_TRACKING_USERNAME, "
            "MLFLOW_TRACKING_PASSWORD)") in done.stderr
    assert "not-the-password" not in done.stdout + done.stderr
    assert calls_made(folder) == []
