"""``evalkit ui``: the MLflow UI over the store evalkit would use, on loopback.

``mlflow ui`` runs a uvicorn parent, its workers and a job runner. They are started in a
process group of their own, and Ctrl-C or SIGTERM to evalkit stops that whole group (SIGTERM,
then SIGKILL to what is left after a grace period): stopping only the direct child would leave
workers serving the port. A terminal's Ctrl-C reaches evalkit alone, which stops the group.

Its address is recorded in ``.evalkit/ui.json`` once it answers, and kept after it stops: the
run links evalkit prints and tags (``run_url``, summary.md) name that port, and a plain
``evalkit ui`` serves it again, so a link recorded while no UI was serving opens once the UI
is started. A UI that never answers (its port taken) leaves the last record as it was.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

from evalkit.cli._exit import ExitStatus
from evalkit.tracking import ServedUi, local_store, ui_port

HOST = "127.0.0.1"
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE_SECONDS = 10.0
"""How long the server's processes get to end after SIGTERM, before SIGKILL."""


def serve_ui(tracking_uri: str | None, port: int | None) -> int:
    """Serve the UI over ``tracking_uri`` (the local store when ``None``) on 127.0.0.1:PORT
    (``None``: the port recorded for the store, which its run links name, else 5000) until
    Ctrl-C or SIGTERM (exit 130); a tracking server already has its own UI, whose URL is
    printed instead."""
    store = tracking_uri or local_store()  # as evalkit's runs name it (see ServedUi)
    if store.startswith(("http://", "https://")):
        print(f"the tracking server serves its own UI: {store}")
        return ExitStatus.OK
    if port is None:
        port = ui_port(store)
    print(f"MLflow UI over {store} on http://{HOST}:{port} (Ctrl-C stops it; run links name "
          "this port from now on)", flush=True)
    command = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", store,
               "--host", HOST, "--port", str(port)]
    stop = threading.Event()
    previous = {number: signal.signal(number, lambda *_: stop.set())
                for number in _STOP_SIGNALS}
    try:
        server = subprocess.Popen(command, start_new_session=True)
        try:
            served = _serve(server, ServedUi(store, HOST, port, server.pid), stop)
        finally:  # also when the server ended by itself: its workers may outlive it
            stop_group(server)
    finally:
        for number, action in previous.items():
            signal.signal(number, action)
    if stop.is_set():
        return ExitStatus.INTERRUPTED
    if not served:
        print(f"error: the MLflow UI never answered on port {port} (its lines above say why; "
              f"a port in use: evalkit ui --port ANOTHER); run links still name the UI "
              "recorded before", file=sys.stderr)
        return ExitStatus.RUNTIME_FAILURE
    return server.returncode


def _serve(server: subprocess.Popen[bytes], ui: ServedUi, stop: threading.Event) -> bool:
    """Wait while ``server`` runs and no stop is asked; record ``ui`` for run links once it
    answers (a server that never does, its port taken say, leaves the last record as it was).
    Whether it answered."""
    served = False
    while server.poll() is None and not stop.wait(0.2):
        if not served and _answers(f"{ui.url}/health"):
            ui.record()
            served = True
    return served


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def stop_group(leader: subprocess.Popen[bytes]) -> None:
    """End every process of ``leader``'s process group: SIGTERM, then SIGKILL to those still
    there after :data:`GRACE_SECONDS`."""
    for number in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(leader.pid, number)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + GRACE_SECONDS
        while time.monotonic() < deadline:
            leader.poll()  # reaped: a zombie leader would still count as the group's member
            if not _group_alive(leader.pid):
                return
            time.sleep(0.1)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True

