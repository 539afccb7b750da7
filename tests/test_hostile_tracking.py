"""Every command against a tracking server that is dead, or that accepts connections and never
answers: one line naming the URI and the fix, exit 4, within seconds, no MLflow traceback and
no wrong "run not found". Credentials in MLFLOW_TRACKING_URI are accepted and never shown."""

from __future__ import annotations

import base64
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest

from evalkit.cli import main
from evalkit.tracking._store import _health_request, _with_password_masked
from tests.conftest import entry, run_script, script_env, write_dataset, write_eval_script
from tools.team_server import MlflowServer, free_port

RUN_ID = "0123456789abcdef0123456789abcdef"
PASSWORD = "hunter2-Pa55word"
# Run in this process (the same code as the command line, without seconds of imports each).
READERS = {
    "history": ["history", "hostile/tracking"],
    "compare": ["compare", "hostile/a", "hostile/b"],
    "plan": ["plan", "hostile/tracking"],
    "report": ["report", RUN_ID],
}
# Run as users run them: the eval script in a subprocess.
COMMANDS = {
    "evalkit resume": ["-m", "evalkit", "resume", RUN_ID],
    "eval.py --resume": ["eval.py", "--resume", RUN_ID],
    "eval.py --type": ["eval.py", "--type=functional"],
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile-tracking")
    write_dataset(folder / "ds", {"e": entry("functional")})
    write_eval_script(folder, {"EXPERIMENT_NAME": "hostile/tracking", "DATASET_PATH": "ds",
                               "EVAL_MIN_ACCURACY": 0.5},
                      "def invoke_component(entry, call):\n    return 'a'\n")
    return folder


@pytest.fixture(scope="module")
def silent_server() -> Iterator[str]:
    """A listening socket that never accepts: connections complete, requests are never
    answered (the kernel's backlog holds them)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def dead_server() -> str:
    return f"http://127.0.0.1:{free_port()}"


def run(folder: Path, args: list[str], uri: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, *args], cwd=folder, capture_output=True, text=True,
                          env=script_env(folder, {"MLFLOW_TRACKING_URI": uri}), timeout=120)
    return done, time.monotonic() - started


def assert_one_line_naming(uri: str, stdout: str, stderr: str) -> None:
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    assert uri in errors[0] and "MLFLOW_TRACKING_URI" in errors[0]
    assert "Traceback" not in stderr + stdout
    assert "not found" not in stderr


@pytest.mark.parametrize("server", ["dead", "silent"])
@pytest.mark.parametrize("command", list(READERS))
def test_every_reading_command_fails_in_seconds_with_one_line(
        tmp_path: Path, silent_server: str, server: str, command: str,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    uri = silent_server if server == "silent" else dead_server()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    started = time.monotonic()
    assert main(READERS[command]) == 4
    assert time.monotonic() - started < 10  # the health check gives up after 5 s
    out, err = capsys.readouterr()
    assert_one_line_naming(uri, out, err)


@pytest.mark.parametrize("server", ["dead", "silent"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_eval_script_command_fails_in_seconds_with_one_line(
        project: Path, silent_server: str, server: str, command: str) -> None:
    uri = silent_server if server == "silent" else dead_server()
    done, elapsed = run(project, COMMANDS[command], uri)
    assert done.returncode == 4, done.stderr
    # The health check gives up after 5 s; the rest is starting Python and importing MLflow,
    # seconds on a loaded 2-core machine (a hang, or MLflow's own retries, take minutes).
    assert elapsed < 30
    assert_one_line_naming(uri, done.stdout, done.stderr)


def test_credentials_in_a_dead_uri_are_never_shown(project: Path) -> None:
    uri = dead_server().replace("http://", f"http://evalkit:{PASSWORD}@")
    for args in (["-m", "evalkit", *READERS["history"]], COMMANDS["eval.py --type"]):
        done, _ = run(project, args, uri)
        assert done.returncode == 4
        assert PASSWORD not in done.stdout + done.stderr
        assert "evalkit:***@127.0.0.1" in done.stderr


def test_the_health_check_sends_uri_credentials_as_basic_auth() -> None:
    request = _health_request(f"http://ann%40corp:{PASSWORD}@127.0.0.1:5000/mlflow/")
    assert request.full_url == "http://127.0.0.1:5000/mlflow/health"
    assert request.get_header("Authorization") == \
        "Basic " + base64.b64encode(f"ann@corp:{PASSWORD}".encode()).decode()
    assert _with_password_masked(f"http://ann:{PASSWORD}@h:1/x") == (
        "http://ann:***@h:1/x", PASSWORD)
    assert _with_password_masked("sqlite:///mlflow.db") == ("sqlite:///mlflow.db", None)


@pytest.mark.slow
def test_a_server_uri_with_credentials_is_accepted_and_the_password_kept_secret(
        tmp_path: Path) -> None:
    server = MlflowServer(f"sqlite:///{tmp_path / 'server.db'}", tmp_path / "artifacts",
                          free_port())
    server.start()
    try:
        folder = tmp_path / "project"
        folder.mkdir()
        write_dataset(folder / "ds", {"e": entry("functional")})
        write_eval_script(folder, {"EXPERIMENT_NAME": "hostile/creds", "DATASET_PATH": "ds",
                                   "EVAL_MIN_ACCURACY": 0.5},
                          "def invoke_component(entry, call):\n    return 'a'\n")
        uri = server.uri.replace("http://", f"http://evalkit:{PASSWORD}@")
        done = run_script(folder, "--type=functional", env={"MLFLOW_TRACKING_URI": uri})
        assert done.returncode == 0, done.stderr
        history, _ = run(folder, ["-m", "evalkit", "history", "hostile/creds"], uri)
        assert history.returncode == 0, history.stderr
        shown = done.stdout + done.stderr + history.stdout + history.stderr
        # printed without its credentials (shown_uri), never with the password
        assert PASSWORD not in shown and server.uri in shown
        client = mlflow.MlflowClient(server.uri)
        (run_,) = client.search_runs(
            [client.get_experiment_by_name("hostile/creds").experiment_id])
        assert PASSWORD not in repr(run_.data.params) + repr(run_.data.tags)
        report = (folder / "reports" / "report-functional.md").read_text()
        assert PASSWORD not in report
    finally:
        server.stop()
