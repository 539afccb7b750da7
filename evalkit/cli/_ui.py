"""``evalkit ui``: the MLflow UI over the store evalkit would use, on loopback."""

from __future__ import annotations

import subprocess
import sys

from evalkit._errors import ExitStatus

LOCAL_STORE = "sqlite:///mlflow.db"


def serve_ui(tracking_uri: str | None, port: int) -> int:
    """Serve the UI over ``tracking_uri`` (the local store when ``None``) on 127.0.0.1:PORT
    until Ctrl-C; a tracking server already has its own UI, whose URL is printed instead."""
    store = tracking_uri or LOCAL_STORE
    if store.startswith(("http://", "https://")):
        print(f"the tracking server serves its own UI: {store}")
        return ExitStatus.OK
    url = f"http://127.0.0.1:{port}"
    print(f"MLflow UI over {store} on {url} (Ctrl-C stops it)", flush=True)
    command = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", store,
               "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(command)
    try:
        return server.wait()
    except KeyboardInterrupt:  # Ctrl-C reaches the server too; this only makes sure it ends
        server.terminate()
        server.wait()
        return ExitStatus.INTERRUPTED
