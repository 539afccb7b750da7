"""A throwaway team tracking server on loopback: PostgreSQL plus an MLflow server.

It stands for the shared MLflow server a team runs, backed by a real database, with an
artifact store under the root it is given. The database is throwaway: it is deleted when the
server stops. Nothing listens beyond 127.0.0.1. The tests start one in-process (an outage is
its MLflow process stopped); ``make dev-mlflow-server`` starts one for development through
``tools/team_server.py``.

With ``auth_experiment`` the server runs MLflow's basic-auth app (``mlflow[auth]``): an admin,
the experiment, an ``editor`` with EDIT on it and a ``reader`` with READ, all with generated
passwords, and no permission for anyone else by default.

PostgreSQL refuses to run as root, so as root the cluster is created and started as the
``postgres`` user, in folders that user owns.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.processes import free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")


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
    auth: BasicAuth | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120) -> None:
        self.artifacts.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
               **(self.auth.server_env() if self.auth else {})}
        env.pop("MLFLOW_TRACKING_URI", None)
        log = (self.artifacts.parent / "mlflow-server.log").open("ab")
        app = ["--app-name", "basic-auth"] if self.auth else []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", self.backend_uri,
             "--artifacts-destination", str(self.artifacts), "--host", "127.0.0.1",
             "--port", str(self.port), "--workers", "1", *app],
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
class BasicAuth:
    """MLflow's basic-auth app: its config (users kept in ``root/basic_auth.db``, no
    permission unless granted), a generated admin password and Flask secret key, and the
    users :meth:`grant` creates."""

    root: Path
    experiment: str
    admin_password: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    secret_key: str = field(default_factory=lambda: secrets.token_hex(32))
    passwords: dict[str, str] = field(default_factory=dict)
    """user -> password, the admin's included."""

    def server_env(self) -> dict[str, str]:
        """Set before the server starts: the admin is created on its first start."""
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.root / "basic_auth.ini"
        config.write_text(
            "[mlflow]\ndefault_permission = NO_PERMISSIONS\n"
            f"database_uri = sqlite:///{self.root / 'basic_auth.db'}\n"
            "admin_username = admin\n"
            "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n",
            encoding="utf-8")
        return {"MLFLOW_AUTH_CONFIG_PATH": str(config),
                "MLFLOW_AUTH_ADMIN_USERNAME": "admin",
                "MLFLOW_AUTH_ADMIN_PASSWORD": self.admin_password,
                "MLFLOW_FLASK_SERVER_SECRET_KEY": self.secret_key}

    def uri_as(self, user: str, server_uri: str) -> str:
        """The server's URI with ``user``'s credentials in it (as basic auth)."""
        return server_uri.replace("http://", f"http://{user}:{self.passwords[user]}@")

    def grant(self, server_uri: str) -> None:
        """As the admin: the experiment, ``editor`` with EDIT on it, ``reader`` with READ."""
        import mlflow
        from mlflow.server import get_app_client

        self.passwords["admin"] = self.admin_password
        admin_uri = self.uri_as("admin", server_uri)
        client = mlflow.MlflowClient(admin_uri)
        found = client.get_experiment_by_name(self.experiment)
        experiment_id = (found.experiment_id if found is not None
                         else client.create_experiment(self.experiment))
        users = get_app_client("basic-auth", tracking_uri=admin_uri)
        for user, permission in (("editor", "EDIT"), ("reader", "READ")):
            self.passwords[user] = secrets.token_urlsafe(16)
            users.create_user(user, self.passwords[user])
            if hasattr(users, "grant_user_permission"):  # MLflow 3.17 on
                users.grant_user_permission(user, "experiment", experiment_id, permission)
            else:
                users.create_experiment_permission(experiment_id, user, permission)

    def exports(self, server_uri: str) -> str:
        return "\n".join(
            f"    # {user}{note}\n    export MLFLOW_TRACKING_URI={server_uri} "
            f"MLFLOW_TRACKING_USERNAME={user} MLFLOW_TRACKING_PASSWORD={password}"
            for (user, password), note in zip(self.passwords.items(), (
                " (manages every experiment and user)",
                f" (EDIT on {self.experiment}: runs evaluations)",
                f" (READ on {self.experiment}: reads runs, cannot start one)"), strict=True))


@dataclass
class TeamServer:
    """PostgreSQL and MLflow, started and stopped together."""

    postgres: Postgres
    mlflow: MlflowServer

    @classmethod
    def create(cls, root: Path, *,
               auth_experiment: str | None = None) -> TeamServer:
        """With ``auth_experiment``, behind MLflow's basic auth with users granted on it."""
        root = root.resolve()
        postgres = Postgres(free_port())
        auth = BasicAuth(root / "auth", auth_experiment) if auth_experiment else None
        return cls(postgres, MlflowServer(postgres.uri, root / "artifacts", free_port(), auth))

    @property
    def tracking_uri(self) -> str:
        return self.mlflow.uri

    def start(self) -> TeamServer:
        self.postgres.start()
        try:
            self.mlflow.start()
            if self.mlflow.auth is not None and not self.mlflow.auth.passwords:
                self.mlflow.auth.grant(self.mlflow.uri)
        except BaseException:
            self.stop()
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
