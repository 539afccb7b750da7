"""Where runs are recorded: :class:`Tracker`, a store (MLflow at a tracking URI, or memory)
and what is done with it: start a run, reopen one, read runs back, upload a bundle.

Everything a report needs is written to the run (the names are in
:mod:`evalkit.records.names`), so any past run's reports can be rendered again from what the
store holds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from evalkit.records import CallRecord
from evalkit.tracking._backend import Backend
from evalkit.tracking._connection import Connection, local_store
from evalkit.tracking._journal import BUNDLES_DIR, Series, unsynced_bundles
from evalkit.tracking._memory import MemoryBackend
from evalkit.tracking._mlflow import MlflowBackend
from evalkit.tracking._opening import reopen_run, start_run
from evalkit.tracking._reader import RunReader
from evalkit.tracking._run import NewRun, TrackedRun
from evalkit.tracking._sync import upload_bundle


class Tracker:
    """A tracking store and the runs in it.

    ``Tracker()`` is MLflow at ``MLFLOW_TRACKING_URI`` (the local store
    ``sqlite:///mlflow.db`` when it is unset), ``Tracker(uri)`` at another URI, and
    ``Tracker.in_memory()`` keeps everything in this process (for tests)."""

    def __init__(self, tracking_uri: str | None = None, *, backend: Backend | None = None,
                 bundles_dir: Path = BUNDLES_DIR) -> None:
        if backend is None:
            uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or local_store()
            backend = MlflowBackend(Connection.to(uri))
        self.backend = backend
        self.bundles_dir = bundles_dir
        self.reader = RunReader(backend)

    @classmethod
    def in_memory(cls, bundles_dir: Path = BUNDLES_DIR) -> Tracker:
        return cls(backend=MemoryBackend(), bundles_dir=bundles_dir)

    @property
    def tracking_uri(self) -> str:
        """The store's URI as it may be shown (a password masked)."""
        return self.backend.tracking_uri

    def check_reachable(self) -> None:
        """A tracking server answers within seconds, or :class:`TrackingError` says where."""
        self.backend.check_reachable()

    def run(self, experiment: str, run_name: str, params: Mapping[str, str],
            tags: Mapping[str, str], *, raw_dir: Path | None = None,
            traced: bool = False, recorded: Sequence[CallRecord] = ()) -> TrackedRun:
        """Start a run (checking the destination first, in seconds); its raw results, locked
        for this process, under ``raw_dir/<run id>/`` when given, holding the ``recorded``
        calls of another run from the start (:attr:`TrackedRun.recorded`: a rescore reuses
        them all); its calls traced when ``traced``. Use it as a context manager: the exit
        sets its final status."""
        return start_run(self.backend, NewRun(experiment, run_name, params, tags),
                         Series(self.bundles_dir), raw_dir=raw_dir, traced=traced,
                         recorded=recorded)

    def reopen(self, run_id: str, raw_dir: Path, *, traced: bool = False) -> TrackedRun:
        """An interrupted run, to finish it: locked for this process (a second reopen is
        refused), its recorded calls in :attr:`TrackedRun.recorded`, RUNNING again."""
        return reopen_run(self.backend, run_id, Series(self.bundles_dir), raw_dir=raw_dir,
                          traced=traced)

    def upload(self, bundle: Path) -> str:
        """Upload a bundle an outage left (``evalkit sync``); returns the run it went into."""
        return upload_bundle(self.backend, bundle)

    def unsynced_bundles(self) -> list[Path]:
        """Bundles under :attr:`bundles_dir` not uploaded yet."""
        return unsynced_bundles(self.bundles_dir)
