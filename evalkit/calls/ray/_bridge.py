"""The Ray driver of a run, in a process of its own (:func:`main`, started by the pool).

Ray ends a driver's process when it loses the cluster's control store, so the run's process
never imports Ray: it talks to this bridge over a socket, and a bridge that ends is a cluster
lost (the run stops cleanly, resumable). The bridge connects to the cluster, ships the eval
script's folder as Ray's working directory, starts a :class:`~evalkit.calls.ray._worker.CallWorker`
actor per worker slot (:meth:`RaySettings.slots`) and hands each call to the least busy one.

A worker that dies mid-call (its process, or its node) takes nothing with it: the call is made
again on another worker, up to :data:`~evalkit.calls.ray._slots.ATTEMPTS` times, then recorded
as its error; a new worker replaces each one lost. A call abandoned (past its timeout) while
it runs on a one-call slot ends its worker, so the calls behind it move on, uncharged. With
no worker left for :data:`NO_WORKER_S` seconds the bridge reports the cluster lost.

Messages are pickled tuples, ``(kind, call id, ...)``: ``call`` (with the call's arguments
pickled once, by the run), ``abandon`` and ``close`` from the run; ``ready``, ``failed``,
``result`` (the worker's pickled reply, passed on as it is), ``crashed`` and ``lost`` to it.
"""

from __future__ import annotations

import contextlib
import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from evalkit._errors import ConfigError
from evalkit.calls.ray._settings import EXCLUDED, RaySettings
from evalkit.calls.ray._slots import ATTEMPTS, Flight, Worker, is_running, lost_record, taker
from evalkit.calls.ray._worker import CallWorker, setup_failure

NO_WORKER_S = 60.0
"""How long calls may wait with no worker alive before the cluster counts as lost."""


class Bridge:
    """The pool of workers, serving one run process over ``conn``."""

    def __init__(self, conn: Connection, settings: RaySettings) -> None:
        import ray  # only here: the run's process never imports Ray
        self._ray = ray
        self._conn = conn
        self._settings = settings
        self._lock = threading.RLock()
        self._live: list[Worker] = []
        self._starting = 0
        self._flight: dict[int, Flight] = {}
        self._waiting: list[tuple[int, tuple[Any, ...], int]] = []
        self._dropped: set[int] = set()  # abandoned while on their way to a worker
        self._closed = threading.Event()
        # Ray runs a future's callbacks on its I/O thread, where a Ray call (ray.kill, a call
        # made again) would wait for that very thread forever: they are handed to this one.
        self._events = ThreadPoolExecutor(1, thread_name_prefix="evalkit-ray-events")
        self._failure: str | None = None  # why no worker could start, once every one failed

    def open(self) -> tuple[int, str]:
        """Connect, start the workers and wait for them; the slots and where they run."""
        s = self._settings
        ray = self._ray
        runtime_env = {"working_dir": s.working_dir, "excludes": EXCLUDED}
        local: dict[str, Any] = {"include_dashboard": False} if s.address is None else {}
        ray.init(address=s.address or "local", runtime_env=runtime_env, log_to_driver=False,
                 logging_level="ERROR", **local)
        slots = s.slots(ray.cluster_resources())
        for _ in range(slots):
            self._start_worker()
        # Every worker, or the first and a minute for the rest: the first calls would all
        # queue on the one worker ready first, the others idle as long as the run is short.
        deadline = time.monotonic() + 600
        first: float | None = None  # when the first worker was ready
        while self._starting and (first is None or time.monotonic() - first < 60):
            if self._failure is not None or time.monotonic() > deadline:
                raise RuntimeError(self._failure or "no Ray worker was ready within 10 minutes")
            first = first or (time.monotonic() if self._live else None)
            time.sleep(0.05)
        if not self._live:
            raise RuntimeError(self._failure or "no Ray worker could start")
        nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
        where = s.address or "a local Ray started for this run"
        return slots, f"Ray at {where}: {slots} worker slot(s) on {nodes} node(s), {s.pace}"

    def _start_worker(self) -> None:
        s = self._settings
        resources = dict(s.resources)
        options = {"num_cpus": resources.pop("CPU", 0), "num_gpus": resources.pop("GPU", 0),
                   "resources": resources, "max_concurrency": s.calls_per_slot,
                   "max_restarts": 0}
        handle: Any = self._ray.remote(CallWorker).options(**options).remote(s.script,
                                                                              s.component_name)
        with self._lock:
            self._starting += 1
        ready = handle.ready.remote().future()
        ready.add_done_callback(lambda f: self._events.submit(self._ready, handle, f))

    def _ready(self, handle: Any, future: Any) -> None:
        with self._lock:
            self._starting -= 1
            try:
                future.result()
            except Exception as err:  # noqa: BLE001 - the worker never started
                if not self._live and not self._starting:
                    self._failure = setup_failure(str(err))
                return
            self._live.append(Worker(handle))
        self._next()

    def _next(self) -> None:
        """Send the calls held here, first come first served, while a worker can take one."""
        while True:
            with self._lock:
                worker = taker(self._live, self._settings.calls_per_slot) if self._waiting \
                    else None
                if worker is None:
                    return
                cid, args, attempt = self._waiting.pop(0)
                worker.busy += 1
            self._send_to(worker, cid, args, attempt)

    def serve(self) -> None:
        """Take the run's requests until it closes the bridge (or goes away)."""
        threading.Thread(target=self._watch, name="evalkit-ray-watch", daemon=True).start()
        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                return
            kind = message[0]
            if kind == "call":
                self._submit(message[1], message[2:], 0)
            elif kind == "abandon":
                self._abandon(message[1])
            elif kind == "close":
                return

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            workers = list(self._live)
        for worker in workers:  # calls still running are cancelled with their worker
            with contextlib.suppress(Exception):  # gone already: nothing to end
                self._ray.kill(worker.handle, no_restart=True)
        self._ray.shutdown()
        self._events.shutdown(cancel_futures=True)

    def _submit(self, cid: int, args: tuple[Any, ...], attempt: int) -> None:
        with self._lock:
            if cid not in self._dropped:  # else abandoned while it moved between workers
                self._waiting.append((cid, args, attempt))
            self._dropped.discard(cid)
        self._next()

    def _send_to(self, worker: Worker, cid: int, args: tuple[Any, ...], attempt: int) -> None:
        with worker.order:  # Ray makes an actor's calls in the order they are sent
            ref = worker.handle.call.remote(args[2])
            number, worker.sent = worker.sent, worker.sent + 1
        flight = Flight(ref, ref.future(), worker, args, attempt, number, time.perf_counter())
        with self._lock:
            self._flight[cid] = flight
        flight.future.add_done_callback(lambda f: self._events.submit(self._done, cid, ref, f))
        if cid in self._dropped:  # abandoned while being sent
            self._abandon(cid)

    def _done(self, cid: int, ref: Any, future: Any) -> None:
        with self._lock:
            flight = self._flight.get(cid)
            if flight is None or flight.ref is not ref:  # abandoned by the run
                return
            del self._flight[cid]
            flight.worker.busy -= 1
        try:
            result = future.result()
        except self._ray.exceptions.RayTaskError as err:  # evalkit's own code on a worker raised
            self._send(("crashed", cid, str(err)))
        except Exception as err:  # noqa: BLE001 - the worker, its node or the cluster died
            self._lose(flight.worker)
            tries = flight.attempt + (0 if flight.worker.ended else 1)
            if tries < ATTEMPTS:
                self._submit(cid, flight.args, tries)
            else:
                self._send(("result", cid, pickle.dumps(lost_record(flight, err))))
        else:
            self._send(("result", cid, result))
        self._next()

    def _lose(self, worker: Worker) -> None:
        """Drop a dead worker and start one in its place (it takes calls once ready)."""
        with self._lock:
            if worker not in self._live:
                return
            self._live.remove(worker)
        with contextlib.suppress(Exception):  # gone already: nothing to end
            self._ray.kill(worker.handle, no_restart=True)
        if not self._closed.is_set():
            self._start_worker()

    def _abandon(self, cid: int) -> None:
        with self._lock:
            flight = self._flight.pop(cid, None)
            self._dropped.discard(cid)
            if flight is None:
                held = len(self._waiting)
                self._waiting = [w for w in self._waiting if w[0] != cid]
                if len(self._waiting) == held:  # on its way to a worker (or answered)
                    self._dropped.add(cid)
                return
            worker = flight.worker
            worker.busy -= 1
            running = is_running(flight, self._flight.values(), self._settings.calls_per_slot)
        if running:  # Ray cannot stop a running call, but can end its worker: a new one starts
            worker.ended = True
            self._lose(worker)
        else:
            with contextlib.suppress(Exception):  # gone already: nothing to end
                self._ray.cancel(flight.ref)
        self._next()

    def _watch(self) -> None:
        """Report the cluster lost once calls have waited too long with no worker alive."""
        alone_since = None
        while not self._closed.wait(1.0):
            with self._lock:
                alone = bool(self._waiting) and not self._live
            alone_since = (alone_since or time.monotonic()) if alone else None
            if alone_since is not None and time.monotonic() - alone_since > NO_WORKER_S:
                self._send(("lost", f"no Ray worker has been alive for {NO_WORKER_S:g} s"))
                return

    def _send(self, message: tuple[Any, ...]) -> None:
        with self._lock:
            try:
                self._conn.send(message)
            except OSError:  # the run went away: nothing to tell
                self._closed.set()


def main(fd: int) -> int:
    """The bridge's process: serve the run on the socket ``fd`` until it closes."""
    conn = Connection(fd)
    settings: RaySettings = conn.recv()
    try:
        bridge = Bridge(conn, settings)
        conn.send(("ready", *bridge.open()))
    except Exception as err:  # noqa: BLE001 - told to the run, which says it and stops
        conn.send(("failed", str(err) if type(err) in (RuntimeError, ConfigError)  # ours
                   else f"{type(err).__name__}: {err}"))
        return 1
    try:
        bridge.serve()
    finally:
        bridge.close()
    return 0
