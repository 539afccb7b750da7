"""The one way tests run evalkit in a process of its own: an eval script (:func:`run_eval`,
or :func:`start_eval` to signal it), the ``evalkit`` command (:func:`run_evalkit`), or any
other command in a project (:func:`run_command`, e.g. a scaffold's ``make eval``).

Each runs with the folder as its working directory and the folder's own local store (unless
``env`` names another tracking URI), evalkit importable from this checkout, and no MLflow
setting of the caller's leaking in. Only promises about the process itself (exit statuses,
signals, a fresh interpreter, what reaches the terminal) need one: everything else is tested
in-process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STORE_TEMPLATE: list[Path] = []
"""Where this session (each xdist worker its own) keeps an empty store; set by conftest."""


def script_env(folder: Path, extra: Mapping[str, str] | None = None, *,
               seed_store: bool = True) -> dict[str, str]:
    """The environment of a process whose store is ``folder/mlflow.db`` unless ``extra``
    names another. With ``seed_store``, a missing local store is first copied from an empty
    one MLflow created once per session; a test of what happens before or while evalkit
    creates a store passes ``seed_store=False``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{folder / 'mlflow.db'}"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env.update(extra or {})
    if seed_store and env["MLFLOW_TRACKING_URI"] == f"sqlite:///{folder / 'mlflow.db'}":
        seed_local_store(folder / "mlflow.db")
    return env


def run_eval(folder: Path, *args: str, env: Mapping[str, str] | None = None,
             timeout: float = 300, seed_store: bool = True,
             script: str = "eval.py") -> subprocess.CompletedProcess[str]:
    """Run ``folder/eval.py`` (or ``script``) to its end."""
    return subprocess.run([sys.executable, script, *args], cwd=folder, capture_output=True,
                          text=True, timeout=timeout,
                          env=script_env(folder, env, seed_store=seed_store))


def start_eval(folder: Path, *args: str, env: Mapping[str, str] | None = None,
               log: Path | None = None, **popen: object) -> subprocess.Popen[str]:
    """Start ``folder/eval.py``; its stdout and stderr go to ``log`` (default
    ``folder/run.log``) so a test can wait for a line and then signal it."""
    log = log or folder / "run.log"
    handle = log.open("w")
    return subprocess.Popen([sys.executable, "eval.py", *args], cwd=folder, stdout=handle,
                            stderr=subprocess.STDOUT, text=True, env=script_env(folder, env),
                            **popen)  # type: ignore[call-overload]


def run_evalkit(folder: Path, *args: str | Path, env: Mapping[str, str] | None = None,
                timeout: float = 300, seed_store: bool = True
                ) -> subprocess.CompletedProcess[str]:
    """The ``evalkit`` command, as ``python -m evalkit``."""
    return run_command(folder, sys.executable, "-m", "evalkit", *args, env=env,
                       timeout=timeout, seed_store=seed_store)


def run_command(folder: Path, *argv: str | Path, env: Mapping[str, str] | None = None,
                timeout: float = 300, seed_store: bool = True
                ) -> subprocess.CompletedProcess[str]:
    """Any command (``make eval`` in a scaffold) in ``folder``, with the environment of
    :func:`script_env`."""
    return subprocess.run([str(a) for a in argv], cwd=folder, capture_output=True, text=True,
                          timeout=timeout, env=script_env(folder, env, seed_store=seed_store))


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on at ``host`` (a loopback address) right now."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def seed_local_store(database: Path) -> None:
    """Copy an empty MLflow store, its schema already migrated, to ``database`` unless one is
    there: MLflow takes seconds to create the schema of a new store. The copy is the store
    MLflow would create."""
    if database.exists() or not STORE_TEMPLATE:
        return
    template = STORE_TEMPLATE[0] / "mlflow.db"
    if not template.exists():
        import mlflow

        STORE_TEMPLATE[0].mkdir(parents=True, exist_ok=True)
        with contextlib.chdir(STORE_TEMPLATE[0]):
            mlflow.MlflowClient(f"sqlite:///{template}").search_experiments()
    database.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, database)
