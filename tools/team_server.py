"""A throwaway team tracking server on loopback: PostgreSQL plus an MLflow server.

For development and tests: it stands for the shared MLflow server a team runs, backed by a
real database, with an artifact store (default ``.cache/team-server/artifacts``). The
database is throwaway: it is deleted when the server stops. Nothing listens beyond 127.0.0.1.

    python tools/team_server.py            # start both, print MLFLOW_TRACKING_URI, wait for Ctrl-C

PostgreSQL refuses to run as root, so as root the cluster is created and started as the
``postgres`` user, in folders that user owns.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

PG_BIN = Path("/usr/lib/postgresql/15/bin")
DEFAULT_ROOT = Path(".cache") / "team-server"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _pg_tool(name: str) -> str:
    local = PG_BIN / name
    found = str(local) if local.exists() else shutil.which(name)
    if found is None:
        raise RuntimeError(f"PostgreSQL's {name} not found: apt-get install postgresql")
    return found


def _as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses root: run its tools as the postgres user when we are root."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _own(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(path, user.pw_uid, user.pw_gid)


@dataclass
class Postgres:
    """A throwaway PostgreSQL cluster on a free loopback port, trusting local users.

    It lives in a private folder under the system's temp folder (the postgres user must be
    able to reach it, which a root-only test folder does not allow) and is deleted on stop."""

    port: int
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="evalkit-pg-")))

    @property
    def data(self) -> Path:
        return self.root / "pgdata"

    @property
    def uri(self) -> str:
        return f"postgresql+psycopg2://evalkit@127.0.0.1:{self.port}/mlflow"

    def start(self) -> None:
        _own(self.root)
        sockets, logs = self.root / "pgsocket", self.root / "pglog"
        _own(sockets)
        _own(logs)
        if not (self.data / "PG_VERSION").exists():
            _own(self.data)
            subprocess.run(_as_postgres([_pg_tool("initdb"), "-D", str(self.data), "-U",
                                         "evalkit", "--auth=trust", "-E", "UTF8"]),
                           check=True, capture_output=True)
        subprocess.run(_as_postgres([
            _pg_tool("pg_ctl"), "-D", str(self.data), "-l", str(logs / "postgres.log"), "-w",
            "-o", f"-p {self.port} -h 127.0.0.1 -k {sockets}", "start"]),
            check=True, capture_output=True)
        created = subprocess.run(
            [_pg_tool("psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "evalkit",
             "-d", "postgres", "-tAc", "SELECT 1 FROM pg_database WHERE datname = 'mlflow'"],
            check=True, capture_output=True, text=True)
        if created.stdout.strip() != "1":
            subprocess.run([_pg_tool("psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U",
                            "evalkit", "-d", "postgres", "-c", "CREATE DATABASE mlflow"],
                           check=True, capture_output=True)

    def stop(self) -> None:
        subprocess.run(_as_postgres([_pg_tool("pg_ctl"), "-D", str(self.data), "-m", "fast",
                                     "-w", "stop"]), capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class MlflowServer:
    """``mlflow server`` over a backend store, serving artifacts from a folder."""

    backend_uri: str
    artifacts: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120) -> None:
        self.artifacts.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        env.pop("MLFLOW_TRACKING_URI", None)
        log = (self.artifacts.parent / "mlflow-server.log").open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", self.backend_uri,
             "--artifacts-destination", str(self.artifacts), "--host", "127.0.0.1",
             "--port", str(self.port), "--workers", "1"],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"mlflow server exited with {self.process.returncode}; see "
                                   f"{self.artifacts.parent / 'mlflow-server.log'}")
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"mlflow server on {self.uri} did not answer within {timeout} s")

    def stop(self) -> None:
        """SIGTERM to the server's whole process group (its uvicorn worker included: killing
        only the parent would orphan a worker that keeps serving), SIGKILL as a last resort."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


@dataclass
class TeamServer:
    """PostgreSQL and MLflow, started and stopped together."""

    postgres: Postgres
    mlflow: MlflowServer

    @classmethod
    def create(cls, root: Path = DEFAULT_ROOT) -> TeamServer:
        root = root.resolve()
        postgres = Postgres(free_port())
        return cls(postgres, MlflowServer(postgres.uri, root / "artifacts", free_port()))

    @property
    def tracking_uri(self) -> str:
        return self.mlflow.uri

    def start(self) -> TeamServer:
        self.postgres.start()
        try:
            self.mlflow.start()
        except BaseException:
            self.postgres.stop()
            raise
        return self

    def stop(self) -> None:
        try:
            self.mlflow.stop()
        finally:
            self.postgres.stop()

    def __enter__(self) -> TeamServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_ROOT
    stop = threading.Event()
    # Handlers, not a blocked mask: children inherit a signal mask, and a server started with
    # SIGTERM blocked would ignore the SIGTERM that stops it.
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    with TeamServer.create(root) as server:
        print(f"PostgreSQL {server.postgres.uri}\nMLflow server {server.tracking_uri} "
              f"(artifacts in {server.mlflow.artifacts})\n\n"
              f"    export MLFLOW_TRACKING_URI={server.tracking_uri}\n\n"
              "Ctrl-C stops both.", flush=True)
        stop.wait()
        print("stopping the MLflow server and PostgreSQL", flush=True)


if __name__ == "__main__":
    main()
