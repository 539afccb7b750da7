"""Every command against a tracking server that is dead, or that accepts connections and never
answers: one line naming the URI and the fix, exit 4, no MLflow traceback and no wrong "run
not found", after one bounded health check and no request of MLflow's own (whose retries
would take minutes). Credentials in MLFLOW_TRACKING_URI are accepted and never shown; an
unexpected error is one redacted line.

The commands run in this process, as the command line runs them; an eval script as a process
of its own and a real server with credentials are in test_hostile_tracking_processes.py (slow).
"""

from __future__ import annotations

import base64
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mlflow
import pytest
from mlflow.exceptions import MlflowException
from mlflow.protos import databricks_pb2

from evalkit import Call, Entry
from evalkit.cli._common import TRACEBACK_VARIABLE
from evalkit.tracking import Tracker
from evalkit.tracking import _connection as connection
from evalkit.tracking._memory import MemoryBackend
from tests.support.commands import eval_script, evalkit_command
from tests.support.processes import free_port, wait_for
from tests.support.servers import SilentServer

RUN_ID = "0123456789abcdef0123456789abcdef"
PASSWORD = "hunter2-Pa55word"
READERS = {
    "history": ["history", "hostile/tracking"],
    "compare": ["compare", "hostile/a", "hostile/b"],
    "plan": ["plan", "hostile/tracking"],
    "report": ["report", RUN_ID],
}
SCRIPT_COMMANDS = ["eval.py --type", "eval.py --resume", "evalkit resume"]


def dead_server() -> str:
    return f"http://127.0.0.1:{free_port()}"


def calls_made(folder: Path) -> list[str]:
    log = folder / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def run_script_command(script_project: Path, command: str) -> int:
    """An eval script command, in this process as the command line runs it."""
    if command == "evalkit resume":
        return evalkit_command("resume", RUN_ID, "--script", script_project / "eval.py")
    constants = {"EXPERIMENT_NAME": "hostile/tracking", "DATASET_PATH": "ds",
                 "EVAL_MIN_ACCURACY": 0.5}
    args = ["--type=functional"] if command == "eval.py --type" else ["--resume", RUN_ID]

    def component(item: Entry, call: Call) -> str:
        with (script_project / "calls.log").open("a") as log:
            log.write(item.id + "\n")
        return "a"

    return eval_script(constants, component, *args)


def assert_one_line_naming(uri: str, stdout: str, stderr: str) -> None:
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    assert uri in errors[0] and "MLFLOW_TRACKING_URI" in errors[0]
    assert "Traceback" not in stderr + stdout
    assert "not found" not in stderr


def server_uri(kind: str, silent: SilentServer) -> str:
    return silent.uri if kind == "silent" else dead_server()


def assert_health_check_only(server: str, silent: SilentServer) -> None:
    """A silent server was asked for its health, once, and nothing of MLflow's."""
    if server == "silent":
        wait_for(lambda: bool(silent.requests), "the health check to reach the server")
    assert silent.requests == (["GET /health"] if server == "silent" else [])


@pytest.mark.parametrize("server", ["dead", "silent"])
@pytest.mark.parametrize("command", list(READERS))
def test_every_reading_command_fails_after_one_health_check_with_one_line(
        script_project: Path, silent_server: SilentServer, server: str, command: str,
        monkeypatch: pytest.MonkeyPatch, terminal: Callable[[], tuple[str, str]]) -> None:
    uri = server_uri(server, silent_server)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert evalkit_command(*READERS[command]) == 4
    assert_one_line_naming(uri, *terminal())
    assert_health_check_only(server, silent_server)
    assert not (script_project / "mlflow.db").exists()


@pytest.mark.parametrize("server", ["dead", "silent"])
@pytest.mark.parametrize("command", SCRIPT_COMMANDS)
def test_every_eval_script_command_fails_after_one_health_check_before_any_call(
        script_project: Path, silent_server: SilentServer, server: str, command: str,
        monkeypatch: pytest.MonkeyPatch, terminal: Callable[[], tuple[str, str]]) -> None:
    uri = server_uri(server, silent_server)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert run_script_command(script_project, command) == 4
    assert_one_line_naming(uri, *terminal())
    assert_health_check_only(server, silent_server)
    assert calls_made(script_project) == []
    assert not (script_project / "mlflow.db").exists()
    assert not (script_project / ".evalkit").exists()


@pytest.mark.parametrize("command", ["history", "eval.py --type"])
def test_credentials_in_a_dead_uri_are_never_shown(
        script_project: Path, command: str, monkeypatch: pytest.MonkeyPatch,
        terminal: Callable[[], tuple[str, str]]) -> None:
    uri = dead_server().replace("http://", f"http://evalkit:{PASSWORD}@")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    status = (evalkit_command(*READERS["history"]) if command == "history"
              else run_script_command(script_project, command))
    assert status == 4
    out, err = terminal()
    assert PASSWORD not in out + err
    assert_one_line_naming(uri.replace(PASSWORD, "***"), out, err)
    assert "evalkit:***@127.0.0.1" in err


def test_the_health_check_sends_uri_credentials_as_basic_auth() -> None:
    request = connection._health_request(f"http://ann%40corp:{PASSWORD}@127.0.0.1:5000/mlflow/")
    assert request.full_url == "http://127.0.0.1:5000/mlflow/health"
    assert request.get_header("Authorization") == \
        "Basic " + base64.b64encode(f"ann@corp:{PASSWORD}".encode()).decode()
    masked = connection.Connection.to(f"http://ann:{PASSWORD}@h:1/x")
    assert (masked.shown, masked.password) == ("http://ann:***@h:1/x", PASSWORD)
    assert masked.hide_password(f"failed: {PASSWORD} refused") == "failed: *** refused"
    local = connection.Connection.to("sqlite:///mlflow.db")
    assert (local.shown, local.password, local.is_remote) == ("sqlite:///mlflow.db", None, False)


def test_the_health_check_is_one_request_of_5_seconds_at_most(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, float]] = []

    def hanging(request: urllib.request.Request, timeout: float) -> None:
        asked.append((request.full_url, timeout))
        raise TimeoutError("timed out")

    monkeypatch.setattr(urllib.request, "urlopen", hanging)
    server = connection.Connection.to("http://127.0.0.1:5000/mlflow")
    assert not server.answers()
    assert asked == [("http://127.0.0.1:5000/mlflow/health", 5.0)]
    assert connection.Connection.to("sqlite:///mlflow.db").answers()  # nothing asked
    assert len(asked) == 1


class Exploding(MemoryBackend):
    """A store whose library fails in a way nobody foresaw, quoting what it was given."""

    def experiment_id(self, name: str, create: bool = True) -> str | None:
        raise KeyError(f"tok-abcdef123456 at http://ann:{PASSWORD}@127.0.0.1:1/api")


def test_an_unexpected_error_under_a_command_is_one_redacted_line(
        script_project: Path, monkeypatch: pytest.MonkeyPatch,
        terminal: Callable[[], tuple[str, str]]) -> None:
    monkeypatch.setenv("SERVICE_TOKEN", "tok-abcdef123456")
    monkeypatch.setattr("evalkit.cli._main.Tracker",
                        lambda *args, **kwargs: Tracker(backend=Exploding()))
    assert evalkit_command(*READERS["history"]) == 4
    out, err = terminal()
    assert err.count("\n") == 1 and "Traceback" not in out + err
    assert err.startswith("error: unexpected KeyError: ")
    assert "tok-abcdef123456" not in err and "[REDACTED:SERVICE_TOKEN]" in err
    assert PASSWORD not in err and "ann:***@127.0.0.1" in err
    monkeypatch.setenv(TRACEBACK_VARIABLE, "1")  # for a bug report
    assert evalkit_command(*READERS["history"]) == 4
    assert "Traceback" in terminal()[1]


# --- a server that refuses the credentials (401) or the permission (403) ---------------------

class RefusingClient:
    """MLflow's client against a basic-auth server: with ``refuse="UNAUTHENTICATED"`` every
    request is refused (HTTP 401); with ``"PERMISSION_DENIED"`` the experiment can be read
    but no run created in it (403), as for a user with READ only."""

    refuse = "UNAUTHENTICATED"

    def __init__(self, tracking_uri: str) -> None:
        self._tracking_client = SimpleNamespace()
        self.asked: list[str] = []

    def _refused(self, endpoint: str, status: int) -> MlflowException:
        return MlflowException(f"API request to endpoint {endpoint} failed with error code "
                               f"{status} != 200", error_code=getattr(databricks_pb2, self.refuse))

    def get_experiment_by_name(self, name: str) -> Any:
        if self.refuse == "UNAUTHENTICATED":
            raise self._refused("/api/2.0/mlflow/experiments/get-by-name", 401)
        return SimpleNamespace(experiment_id="1", lifecycle_stage="active", name=name)

    def create_run(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refused("/api/2.0/mlflow/runs/create", 403)

    def get_run(self, run_id: str) -> Any:
        raise self._refused(f"/api/2.0/mlflow/runs/get?run_id={run_id}",
                            401 if self.refuse == "UNAUTHENTICATED" else 403)


@pytest.fixture
def refusing(monkeypatch: pytest.MonkeyPatch) -> type[RefusingClient]:
    """A basic-auth server at MLFLOW_TRACKING_URI that answers /health (public there)."""
    monkeypatch.setattr(mlflow, "MlflowClient", RefusingClient)
    monkeypatch.setattr(connection.Connection, "check_reachable", lambda self: None)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999")
    for name in connection.CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return RefusingClient


@pytest.mark.parametrize("command", ["eval.py --type", "eval.py --resume"])
def test_refused_credentials_exit_2_naming_the_variables_set_never_their_values(
        script_project: Path, refusing: type[RefusingClient], monkeypatch: pytest.MonkeyPatch,
        terminal: Callable[[], tuple[str, str]], command: str) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "editor")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORD)
    assert run_script_command(script_project, command) == 2
    out, err = terminal()
    assert err == ("error: the MLflow tracking server at http://127.0.0.1:5999 refused the "
                   "credentials (HTTP 401; set: MLFLOW_TRACKING_USERNAME, "
                   "MLFLOW_TRACKING_PASSWORD). Set MLFLOW_TRACKING_USERNAME and "
                   "MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN, to an account of "
                   "that server\n")
    assert "editor" not in err and PASSWORD not in out + err
    assert calls_made(script_project) == []


def test_refused_credentials_in_the_uri_or_none_at_all_are_named(
        script_project: Path, refusing: type[RefusingClient], monkeypatch: pytest.MonkeyPatch,
        terminal: Callable[[], tuple[str, str]]) -> None:
    assert run_script_command(script_project, "eval.py --type") == 2
    assert "(HTTP 401; set: none)" in terminal()[1]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://editor:{PASSWORD}@127.0.0.1:5999")
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "tok-abcdef123456")
    assert run_script_command(script_project, "eval.py --type") == 2
    err = terminal()[1]
    assert ("at http://editor:***@127.0.0.1:5999 refused the credentials (HTTP 401; set: "
            "MLFLOW_TRACKING_TOKEN, a user in MLFLOW_TRACKING_URI)") in err
    assert PASSWORD not in err and "tok-abcdef123456" not in err


def test_a_user_without_edit_on_the_experiment_exits_2_naming_the_permission(
        script_project: Path, refusing: type[RefusingClient], monkeypatch: pytest.MonkeyPatch,
        terminal: Callable[[], tuple[str, str]]) -> None:
    monkeypatch.setattr(RefusingClient, "refuse", "PERMISSION_DENIED")
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "reader")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORD)
    assert run_script_command(script_project, "eval.py --type") == 2
    assert terminal()[1] == (
        "error: user reader lacks EDIT permission on experiment 'hostile/tracking' at "
        "http://127.0.0.1:5999 (HTTP 403): an admin of the server grants it (or use another "
        "user)\n")
    assert calls_made(script_project) == []
    assert run_script_command(script_project, "eval.py --resume") == 2  # reading the run: READ
    assert "user reader lacks READ permission on the run's experiment" in terminal()[1]

