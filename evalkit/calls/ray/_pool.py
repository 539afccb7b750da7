"""Calls on a Ray cluster: :class:`RayPool`, the executor a run leaves one machine with.

The pool starts the run's Ray driver as a process of its own (:mod:`evalkit.calls.ray._bridge`:
Ray ends its driver's process when the cluster goes away, and this process must live to close
the run) and gives each call window a :class:`RayCalls`. The run stays here: the window, the
raw-results journal, MLflow, scoring and reports. Each record a worker sends back is redacted
again with this process's secrets before it is kept.

A bridge that ends, or reports that no worker is left, is a cluster lost: every call in flight
is delivered :class:`~evalkit.calls._executors.Lost`, and the window stops the run as on a
second stop request (KILLED, every kept call kept, ``--resume`` makes the rest, on Ray or not).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from evalkit._errors import ConfigError
from evalkit._secrets import Redactor
from evalkit.calls._books import Task
from evalkit.calls._call import Call, Component, SpanCapture, no_capture, redacted_spans
from evalkit.calls._executors import INTERRUPT, Crashed, Deliver, Lost, ThreadWorkers
from evalkit.calls.ray._settings import RaySettings, require_ray
from evalkit.calls.ray._worker import INTERRUPTED
from evalkit.dataset import Entry
from evalkit.records import CallRecord

LOG_DIR = Path(".evalkit") / "ray"
"""Where the bridge's output (Ray's own messages) goes: ``bridge-<pid>.log``."""
_CLOSE_S = 30.0
_ENDING_S = 5.0
_BRIDGE = "import sys; from evalkit.calls.ray._bridge import main; sys.exit(main(int(sys.argv[1])))"

class RayPool:
    """Worker slots on a Ray cluster for every call window of one run (a replicate series or
    a calibration included): opened once, so each worker sets up once."""

    def __init__(self, settings: RaySettings, log_dir: Path = LOG_DIR) -> None:
        self.settings = settings
        self._log_dir = log_dir
        self.log_path: Path | None = None
        self.slots = 0
        self.where = ""
        self._conn: Connection | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._pending: dict[int, tuple[Task, Deliver, Redactor]] = {}
        self._lost: str | None = None

    def __enter__(self) -> RayPool:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Start the bridge and wait until its workers are ready; :class:`ConfigError` if Ray
        is missing, the cluster cannot be reached, or the workers cannot load the script."""
        require_ray()
        self._log_dir.mkdir(parents=True, exist_ok=True)
        ours, theirs = socket.socketpair()
        source = str(Path(__file__).resolve().parents[2])  # where evalkit is imported from
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (source, os.environ.get("PYTHONPATH")) if p)}
        self.log_path = self._log_dir / f"bridge-{os.getpid()}.log"
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(  # its own session: Ctrl-C is the run's to handle
                [sys.executable, "-c", _BRIDGE, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), start_new_session=True, env=env,
                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        theirs.close()
        self._conn = Connection(ours.detach())
        self._conn.send(self.settings)
        try:
            reply = self._conn.recv()
        except (EOFError, OSError):
            reply = ("failed", f"the Ray driver process ended (exit {self._process.wait()})")
        if reply[0] != "ready":
            self.close()
            raise ConfigError(f"the run's calls cannot run on Ray: {reply[1]} (Ray's own "
                              f"messages: {self.log_path})")
        self.slots = reply[1]
        self.where = reply[2]
        threading.Thread(target=self._read, name="evalkit-ray-results", daemon=True).start()

    def close(self) -> None:
        """End the bridge: its workers are killed (calls still running with them) and a local
        Ray started for the run stops."""
        if self._conn is not None:
            with contextlib.suppress(OSError):  # gone already: nothing to end
                self._conn.send(("close",))
        if self._process is not None:
            try:
                self._process.wait(_CLOSE_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._conn is not None:
            self._conn.close()

    def calls(self, component: Component, adapters: Mapping[str, Callable[[Any], Any]],
              redactor: Redactor, workers: ThreadWorkers,
              capture: SpanCapture = no_capture) -> RayCalls:
        """A window's executor: the workers load the component from the script themselves,
        and record its spans with ``capture`` (sent with each call: it is a few bytes)."""
        return RayCalls(self, redactor, capture)

    def submit(self, task: Task, entry: Entry, call: Call, deliver: Deliver,
               redactor: Redactor, capture: SpanCapture = no_capture) -> int:
        cid = next(self._ids)
        with self._lock:
            lost = self._lost
            if lost is None:
                self._pending[cid] = (task, deliver, redactor)
        if lost is not None:
            deliver(task, Lost(lost))
            return cid
        try:
            assert self._conn is not None
            payload = pickle.dumps((entry, call.repeat, call.repeats, call.seed,
                                    call.replicate, capture))
            self._conn.send(("call", cid, entry.id, call.repeat, payload))
        except OSError:
            self._lose("the Ray driver process cannot be reached")
        return cid

    def abandon(self, cid: int) -> None:
        with self._lock:
            pending = self._pending.pop(cid, None) is not None
        if pending and self._conn is not None:
            with contextlib.suppress(OSError):  # gone already: nothing to end
                self._conn.send(("abandon", cid))

    def _read(self) -> None:
        assert self._conn is not None
        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                break
            if message[0] == "lost":
                self._lose(message[1])
                continue
            with self._lock:
                pending = self._pending.pop(message[1], None)
            if pending is None:  # abandoned
                continue
            task, deliver, redactor = pending
            if message[0] == "result":
                result = pickle.loads(message[2])
                deliver(task, INTERRUPT if result == INTERRUPTED else _redacted(result, redactor))
            else:
                deliver(task, Crashed(RuntimeError(f"on a Ray worker: {message[2]}")))
        code = None
        if self._process is not None:  # its socket closes as it ends: its status follows
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self._process.wait(_ENDING_S)
        self._lose(f"the Ray driver process ended (exit {code}; Ray's messages: "
                   f"{self.log_path})")

    def _lose(self, reason: str) -> None:
        with self._lock:
            if self._lost is None:
                self._lost = f"the Ray cluster was lost: {reason}"
            pending, self._pending = list(self._pending.values()), {}
            lost = self._lost
        for task, deliver, _ in pending:
            deliver(task, Lost(lost))


class RayCalls:
    """One call window's calls on a :class:`RayPool`."""

    def __init__(self, pool: RayPool, redactor: Redactor,
                 capture: SpanCapture = no_capture) -> None:
        self._pool = pool
        self._redactor = redactor
        self._capture = capture
        self._ids: dict[Task, int] = {}

    def start(self, task: Task, entry: Entry, call: Call, deliver: Deliver) -> None:
        self._ids[task] = self._pool.submit(task, entry, call, deliver, self._redactor,
                                            self._capture)

    def abandon(self, task: Task) -> None:
        cid = self._ids.pop(task, None)
        if cid is not None:
            self._pool.abandon(cid)

    def close(self) -> None:
        """Calls of this window still out are abandoned; the pool serves the next window."""
        for cid in self._ids.values():
            self._pool.abandon(cid)
        self._ids.clear()


def _redacted(record: CallRecord, redactor: Redactor) -> CallRecord:
    return replace(record, output=redactor.value(record.output),
                   error=None if record.error is None else redactor.text(record.error),
                   spans=redacted_spans(record.spans, redactor))
