"""Opening a :class:`TrackedRun`: a new one, checked before any call is made, or an
interrupted one reopened to be finished.

Starting checks the destination in seconds (reachable, experiment usable, artifacts
writable) and names the URI and the fix when it is not. Reopening takes the run's lock first,
so a second resume of the same run is refused outright.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path

from evalkit._errors import ConfigError, TrackingError
from evalkit.records import CallRecord, names
from evalkit.tracking._backend import Backend, StoredRun
from evalkit.tracking._connection import LOCAL_STORE
from evalkit.tracking._journal import RunJournal, Series
from evalkit.tracking._raw import (
    RawResultsLog,
    RunFiles,
    lock_run,
    repair_raw_results,
    write_atomically,
)
from evalkit.tracking._run import NewRun, OpenChild, TrackedRun

logger = logging.getLogger("evalkit")

MAX_PARAM_LENGTH = 6000
"""The longest param value MLflow keeps."""


def start_run(backend: Backend, new: NewRun, series: Series, *, raw_dir: Path | None = None,
              traced: bool = False, parent: TrackedRun | None = None,
              recorded: Sequence[CallRecord] = ()) -> TrackedRun:
    """A new run with its params and tags; its raw results (and their lock) under
    ``raw_dir/<run id>/`` when given, starting with the ``recorded`` calls (another run's,
    reused: a rescore)."""
    _check_params(new.params)
    if parent is not None and not backend.answers():  # down mid-series, even between runs
        series.server_down = True
        return _start_offline(backend, new, series, raw_dir, traced, parent)

    backend.check_reachable()
    stored: StoredRun | None = None
    try:
        experiment_id = backend.experiment_id(new.experiment)
        assert experiment_id is not None
        # the user is set at creation: MLflow takes the run's user from that tag only then
        stored = backend.create_run(experiment_id, new.name, {
            k: v for k, v in new.tags.items() if k == names.USER_TAG})
        backend.log_batch(stored.run_id, params=new.params, tags=new.tags)
        backend.log_dataset_input(stored.run_id, new.params)
    except BaseException as err:
        if stored is not None:  # never left RUNNING, with nothing in it, for ever
            _end_quietly(backend, stored.run_id,
                         "KILLED" if isinstance(err, KeyboardInterrupt) else "FAILED")
        if isinstance(err, TrackingError) or not isinstance(err, Exception):
            raise
        if refused := backend.refusal(err, new.experiment, "EDIT"):  # the run is to be written
            raise refused from None
        # any other failure here means MLflow is unusable: say where
        raise TrackingError(f"cannot start an MLflow run at {backend.tracking_uri}: "
                            f"{backend.hide_password(str(err))}. Check MLFLOW_TRACKING_URI "
                            f"(unset it to use the local store {LOCAL_STORE})") from err

    journal = RunJournal(
        run_id=stored.run_id, run_name=stored.run_name, experiment_id=experiment_id,
        experiment_name=new.experiment, start_time_ms=stored.start_time_ms,
        tracking_uri=backend.tracking_uri, params=dict(new.params), tags=dict(new.tags))
    try:
        backend.log_artifact(stored.run_id, names.PROBE_ARTIFACT,
                             (json.dumps({"run_id": stored.run_id}) + "\n").encode())
    except Exception as err:
        _end_quietly(backend, stored.run_id, "FAILED")
        raise TrackingError(f"cannot write artifacts of run {stored.run_id} at "
                            f"{backend.tracking_uri}: {backend.hide_password(str(err))}. Check "
                            "the server's artifact store (--artifacts-destination) and its "
                            "permissions") from err

    return TrackedRun(backend, journal, series, _child_opener(backend, series),
                      files=_new_files(raw_dir, stored.run_id, recorded), traced=traced,
                      parent=parent)


def reopen_run(backend: Backend, run_id: str, series: Series, *, raw_dir: Path,
               traced: bool = False) -> TrackedRun:
    """An interrupted run, locked for this process, with the calls it recorded (its raw
    results, from the local folder or, when that is gone, from the run's artifact), and
    RUNNING again. A finished run is refused."""
    backend.check_reachable()
    lock = lock_run(raw_dir / run_id, run_id)
    try:
        stored = backend.run(run_id)
        if stored.status == "FINISHED":
            raise ConfigError(f"run {run_id} finished: there is nothing to resume")
        path = raw_dir / run_id / names.RAW_RESULTS_FILE
        if not path.exists():
            path.write_bytes(backend.artifact(run_id, names.RAW_RESULTS_ARTIFACT))
        raw = repair_raw_results(path)
        if raw.torn is not None:
            logger.warning("the last line of %s was cut mid-write (%r...): that call was not "
                           "kept and will be made again", path, raw.torn[:40])
        journal = _journal_of(backend, stored)
        backend.set_status(run_id, "RUNNING")
    except BaseException:
        lock.release()
        raise

    series.supersede_bundle(run_id, backend.tracking_uri)
    files = RunFiles(RawResultsLog(path), lock,
                     {(c.entry_id, c.repeat): c for c in raw.records})
    return TrackedRun(backend, journal, series, _child_opener(backend, series), files=files,
                      traced=traced, resumed=True)


def _start_offline(backend: Backend, new: NewRun, series: Series, raw_dir: Path | None,
                   traced: bool, parent: TrackedRun) -> TrackedRun:
    """A run of a series begun while its server is down: journaled only, under an id of its
    own; ``evalkit sync`` creates it (tagged ``evalkit.synced_from_run``)."""
    run_id = uuid.uuid4().hex
    journal = RunJournal(
        run_id=run_id, run_name=new.name, experiment_id=parent.experiment_id,
        experiment_name=new.experiment, start_time_ms=int(time.time() * 1000),
        tracking_uri=backend.tracking_uri, params=dict(new.params), tags=dict(new.tags))
    logger.warning("tracking server %s still unreachable: run %s starts offline and will be "
                   "saved as a local bundle", backend.tracking_uri, new.name)
    return TrackedRun(backend, journal, series, _child_opener(backend, series),
                      offline=True, files=_new_files(raw_dir, run_id), traced=traced,
                      parent=parent)


def _child_opener(backend: Backend, series: Series) -> OpenChild:
    return partial(start_run, backend, series=series)


def _new_files(raw_dir: Path | None, run_id: str,
               recorded: Sequence[CallRecord] = ()) -> RunFiles | None:
    if raw_dir is None:
        return None
    lock = lock_run(raw_dir / run_id, run_id)
    path = raw_dir / run_id / names.RAW_RESULTS_FILE
    if recorded:
        write_atomically(path, list(recorded))
    return RunFiles(RawResultsLog(path), lock, {(c.entry_id, c.repeat): c for c in recorded})


def _end_quietly(backend: Backend, run_id: str, status: str) -> None:
    """End a run that could not be started; the error that stopped it is the one to report."""
    try:
        backend.set_status(run_id, status)
    except Exception:  # noqa: BLE001 - the store is failing already: that error is raised
        logger.debug("could not mark run %s %s", run_id, status, exc_info=True)


def _journal_of(backend: Backend, stored: StoredRun) -> RunJournal:
    return RunJournal(
        run_id=stored.run_id, run_name=stored.run_name, experiment_id=stored.experiment_id,
        experiment_name=backend.experiment_name(stored.experiment_id),
        start_time_ms=stored.start_time_ms, tracking_uri=backend.tracking_uri,
        params=dict(stored.params), tags=dict(stored.tags))


def _check_params(params: Mapping[str, str]) -> None:
    for value in params.values():
        if len(value) > MAX_PARAM_LENGTH:
            raise TrackingError(f"a param value is {len(value)} characters long; MLflow keeps "
                                f"at most {MAX_PARAM_LENGTH}: shorten the constant")
