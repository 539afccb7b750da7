"""``evalkit ui``: the MLflow UI it starts ends whole on Ctrl-C or SIGTERM, and its address
is recorded for run links and kept for them once it stops: a real ``mlflow ui`` and its
workers in a process of their own (the links themselves are tested in
tests/promises/test_ci_outputs.py; that ``make dev-mlflow`` goes through it in
tests/promises/test_dev_mlflow.py)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from evalkit import ExitStatus
from tests.support.processes import free_port, script_env, wait_for


def group_members(group: int) -> list[int]:
    """Every process (zombies included) of process group ``group``."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # ended while listed
            continue
        if int(fields[2]) == group:  # after the name: state, ppid, pgrp
            members.append(int(stat.parent.name))
    return members


def children(pid: int) -> list[int]:
    return [int(child) for task in Path(f"/proc/{pid}/task").iterdir()
            for child in (task / "children").read_text().split()]


def port_free(port: int) -> bool:
    """Whether a new server could listen on ``port``: SO_REUSEADDR as servers set it, so a
    connection of the health check left in TIME_WAIT (the server closed it first) does not
    count as the port being held."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def serves(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_a_signal_to_evalkit_ui_stops_every_process_of_the_server_and_keeps_its_port(
        tmp_path: Path, number: int) -> None:
    port = free_port()
    log = (tmp_path / "ui.log").open("w")
    ui = subprocess.Popen([sys.executable, "-m", "evalkit", "ui", "--port", str(port)],
                          cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
                          env=script_env(tmp_path))
    try:
        wait_for(lambda: ui.poll() is not None or serves(f"http://127.0.0.1:{port}"),
                 "mlflow ui to answer", timeout=240)
        assert ui.poll() is None, (tmp_path / "ui.log").read_text()
        (server,) = children(ui.pid)
        assert len(group_members(server)) > 2  # mlflow ui, uvicorn, its workers: a group
        store = f"sqlite:///{tmp_path / 'mlflow.db'}"
        # recorded once it answers, evalkit's own check a moment after the test's
        wait_for((tmp_path / ".evalkit" / "ui.json").exists, "the UI's record", timeout=30)
        assert json.loads((tmp_path / ".evalkit" / "ui.json").read_text()) == {
            "store": store, "host": "127.0.0.1", "port": port, "pid": server}
        ui.send_signal(number)
        assert ui.wait(timeout=60) == ExitStatus.INTERRUPTED
        assert group_members(server) == []
        assert port_free(port)
        # kept: runs that end while no UI serves still link to this port, which a plain
        # `evalkit ui` serves again
        assert json.loads((tmp_path / ".evalkit" / "ui.json").read_text())["port"] == port
    finally:
        if ui.poll() is None:
            ui.kill()
            ui.wait()


def test_an_evalkit_ui_that_cannot_serve_leaves_run_links_on_the_port_served_before(
        tmp_path: Path) -> None:
    record = tmp_path / ".evalkit" / "ui.json"
    record.parent.mkdir()
    before = {"store": f"sqlite:///{tmp_path / 'mlflow.db'}", "host": "127.0.0.1",
              "port": 5123, "pid": 1}
    record.write_text(json.dumps(before) + "\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ui = subprocess.run([sys.executable, "-m", "evalkit", "ui", "--port", str(port)],
                            cwd=tmp_path, capture_output=True, text=True,
                            env=script_env(tmp_path), timeout=240)
    assert ui.returncode == ExitStatus.RUNTIME_FAILURE, ui.stdout + ui.stderr
    assert ui.stderr.endswith(f"error: the MLflow UI never answered on port {port} (its lines "
                              "above say why; a port in use: evalkit ui --port ANOTHER); run "
                              "links still name the UI recorded before\n")
    assert json.loads(record.read_text()) == before
