"""A throwaway team tracking server on loopback for development (``make dev-mlflow-server``):
PostgreSQL plus an MLflow server, the one the tests start (``tests/support/team_server.py``).

    python tools/team_server.py            # start both, print MLFLOW_TRACKING_URI, wait for Ctrl-C
    python tools/team_server.py ROOT --auth [--experiment NAME]   # behind MLflow's basic auth

The artifact store defaults to ``.cache/team-server/artifacts``; the database is deleted when
the server stops. With ``--auth`` (``make dev-mlflow-server AUTH=1``) the exports for the
``editor`` and the ``reader`` of the experiment are printed.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.team_server import TeamServer  # noqa: E402

DEFAULT_ROOT = Path(".cache") / "team-server"
DEFAULT_EXPERIMENT = "support-router/golden"
"""The experiment the auth server's users get permissions on (eval.py's)."""

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--auth", action="store_true", help="behind MLflow's basic auth")
    parser.add_argument("--experiment", default=DEFAULT_EXPERIMENT,
                        help=f"the experiment users are granted on (default {DEFAULT_EXPERIMENT})")
    args = parser.parse_args()
    stop = threading.Event()
    # Handlers, not a blocked mask: children inherit a signal mask, and a server started with
    # SIGTERM blocked would ignore the SIGTERM that stops it.
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    with TeamServer.create(args.root,
                           auth_experiment=args.experiment if args.auth else None) as server:
        auth = server.mlflow.auth
        exports = (auth.exports(server.tracking_uri) if auth is not None
                   else f"    export MLFLOW_TRACKING_URI={server.tracking_uri}")
        print(f"PostgreSQL {server.postgres.uri}\nMLflow server {server.tracking_uri} "
              f"(artifacts in {server.mlflow.artifacts})\n\n{exports}\n\n"
              "Ctrl-C stops both.", flush=True)
        stop.wait()
        print("stopping the MLflow server and PostgreSQL", flush=True)


if __name__ == "__main__":
    main()
