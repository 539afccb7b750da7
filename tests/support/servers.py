"""Servers that misbehave on cue: one that accepts connections and never answers
(:class:`SilentServer`), a tracking server in memory that stops answering (:class:`FlakyServer`),
and the outage that takes either it or a real team server down mid-run (:class:`Outage`).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any

from evalkit import Call, Entry
from evalkit._errors import TrackingError
from evalkit.calls import Stop
from evalkit.tracking._memory import MemoryBackend, MemoryTraceStore
from tests.support.team_server import TeamServer


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts every connection and reads each request, never
    answering (a server that hangs); counts the connections and keeps the request lines."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.uri = f"http://127.0.0.1:{self.port}"
        self.accepted = 0
        self.requests: list[str] = []
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:  # closed
                return
            self.accepted += 1
            self._held.append(connection)
            threading.Thread(target=self._read, args=(connection,), daemon=True).start()

    def _read(self, connection: socket.socket) -> None:
        with connection.makefile("rb") as stream:
            try:
                line = stream.readline()
            except OSError:
                return
        if line:
            self.requests.append(line.decode("latin-1").split(" HTTP/")[0])

    def close(self) -> None:
        self._listener.close()
        for held in self._held:
            held.close()


class ServerDown(ConnectionError):
    """What a client gets from a server that stopped answering."""


class FlakyTraces(MemoryTraceStore):
    """The server's trace store: refuses every request while the server is down."""

    def __init__(self, server: FlakyServer) -> None:
        super().__init__()
        self.server = server

    def write_calls(self, *args: Any, **kwargs: Any) -> None:
        self.server.refuse()
        super().write_calls(*args, **kwargs)

    def write_verdicts(self, *args: Any, **kwargs: Any) -> None:
        self.server.refuse()
        super().write_verdicts(*args, **kwargs)

    def add_assessments(self, *args: Any, **kwargs: Any) -> None:
        self.server.refuse()
        super().add_assessments(*args, **kwargs)

    def assessment_names(self, *args: Any, **kwargs: Any) -> dict[str, list[str]]:
        self.server.refuse()
        return super().assessment_names(*args, **kwargs)


class FlakyServer(MemoryBackend):
    """A tracking server (remote) in memory: while :attr:`down` it answers nothing, every
    request raises and :meth:`answers` is false, as a server that stopped would."""

    tracking_uri = "http://team.example:5000"
    is_remote = True

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.refused = 0
        """Requests made while down."""
        self.traces = FlakyTraces(self)

    def refuse(self) -> None:
        if self.down:
            self.refused += 1
            raise ServerDown(f"{self.tracking_uri}: Connection refused")

    def check_reachable(self) -> None:
        if self.down:
            raise TrackingError(f"cannot reach the MLflow tracking server at "
                                f"{self.tracking_uri} (Connection refused)")

    def answers(self) -> bool:
        return not self.down


def _refusing(name: str) -> Callable[..., Any]:
    def method(self: FlakyServer, *args: Any, **kwargs: Any) -> Any:
        self.refuse()
        return getattr(MemoryBackend, name)(self, *args, **kwargs)
    method.__name__ = name
    return method


for _request in ("experiment_id", "experiment_name", "create_run", "log_batch", "log_artifact",
                 "log_table", "log_dataset_input", "set_status", "run", "metric_history",
                 "artifact", "runs", "run_ids", "human_feedback", "register_dataset",
                 "register_prompts"):
    setattr(FlakyServer, _request, _refusing(_request))


class Outage:
    """Counts the component's calls; the ``at``-th takes the server down (a server in memory
    stops answering; a team server's MLflow process stops, its database surviving) and, with
    ``stop``, then asks the run to stop: the way an outage strikes mid-run. The other calls go
    on meanwhile."""

    def __init__(self, server: FlakyServer | TeamServer, at: int,
                 stop: Stop | None = None) -> None:
        self.server, self.at, self.stop = server, at, stop
        self.calls: list[tuple[str, int]] = []
        self.lock = threading.Lock()

    def tick(self, item: Entry, call: Call) -> None:
        with self.lock:
            self.calls.append((item.id, call.repeat))
            now = len(self.calls) == self.at
        if now:
            if isinstance(self.server, FlakyServer):
                self.server.down = True
            else:
                self.server.mlflow.stop()
            if self.stop is not None:
                self.stop.request()
