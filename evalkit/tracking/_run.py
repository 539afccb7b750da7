"""One tracked run, from its start to its final status: :class:`TrackedRun`.

Used as a context manager, it owns everything a run writes: its params, tags, metrics and
artifacts (each also journaled), its raw-results file and the lock on it, its traces
(:class:`~evalkit.tracking._run_traces.RunTraces`, or nothing when calls are not traced) and
its reports. On exit it uploads the raw results and sets the status: ``FINISHED``, ``KILLED``
after a stop (:class:`RunInterrupted` or ``KeyboardInterrupt``), ``FAILED`` after anything
else.

When a tracking server stops answering mid-run, the run goes on against its journal; at the
end the journal is written as a bundle and, for a run that finished, :class:`TrackingOffline`
names it. The runs of a series (a parent and its children, see :meth:`TrackedRun.child`) go
on past an outage together: a child begun while the server is down starts offline, and only
the parent raises, naming every bundle.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from evalkit._errors import RunInterrupted, TrackingError, TrackingOffline
from evalkit.records import CallRecord, MetricPoint, RunRecord, ScoredRun, names
from evalkit.tracking._backend import Backend, PromptTemplate
from evalkit.tracking._journal import LoggedPoint, RunJournal, Series
from evalkit.tracking._links import run_url
from evalkit.tracking._raw import RawResultsLog, RunFiles
from evalkit.tracking._reader import journal_record
from evalkit.tracking._run_traces import NoTraces, RunTraces
from evalkit.tracking._table import results_table, table_json

logger = logging.getLogger("evalkit")


@dataclass(frozen=True)
class NewRun:
    """What a run is started with: the experiment it goes into, its name, params and tags."""

    experiment: str
    name: str
    params: Mapping[str, str]
    tags: Mapping[str, str]


OpenChild = Callable[..., "TrackedRun"]
"""Starts a run of the same series (a :class:`NewRun`, ``raw_dir=, traced=, parent=``)."""


class TrackedRun:
    """A run being written (see the module docstring). Made by
    :meth:`evalkit.tracking.Tracker.run` or :meth:`~evalkit.tracking.Tracker.reopen`."""

    # A run's state, set by its three openers (tracking/_opening.py: start, start offline,
    # reopen), the optional parts by keyword: a dataclass of them would only repeat its fields.
    def __init__(self, backend: Backend, journal: RunJournal, series: Series,  # noqa: PLR0913
                 open_child: OpenChild, *, offline: bool = False, files: RunFiles | None = None,
                 traced: bool = False, resumed: bool = False,
                 parent: TrackedRun | None = None) -> None:
        self._backend = backend
        self._open_child = open_child
        self.journal = journal
        self._series = series
        self.offline = offline
        """The server stopped answering: everything goes to the journal only."""
        self._files = files
        self._resumed = resumed
        self._parent = parent

        self.traces: RunTraces | NoTraces = (
            RunTraces(self, backend, resumed=resumed) if traced else NoTraces())

    # --- what it is ---------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.journal.run_id

    @property
    def experiment_id(self) -> str:
        return self.journal.experiment_id

    @property
    def experiment_name(self) -> str:
        return self.journal.experiment_name

    @property
    def tracking_uri(self) -> str:
        return self._backend.tracking_uri

    @property
    def url(self) -> str:
        """The run's page in the MLflow UI (never with credentials)."""
        return run_url(self._backend.tracking_uri, self.experiment_id, self.id)

    @property
    def raw(self) -> RawResultsLog:
        """The raw-results file: every call appended as it finishes."""
        if self._files is None:
            raise TrackingError(f"run {self.id} keeps no raw results")
        return self._files.raw

    @property
    def recorded(self) -> Mapping[tuple[str, int], CallRecord]:
        """Calls already made, by (entry id, repeat): by an earlier attempt at this run (a
        resumed run), or by the run it rescores; empty for a new run."""
        return {} if self._files is None else self._files.recorded

    # --- writing ------------------------------------------------------------------------------

    def log(self, points: Sequence[MetricPoint] = (),
            tags: Mapping[str, str] | None = None) -> None:
        """Metric points and tags in one batch (MLflow splits it below its request limits); a
        ``mlflow.runName`` tag renames the run. Points a resumed run already holds are not
        logged twice."""
        timestamp = int(time.time() * 1000)
        fresh = [LoggedPoint(p.key, float(p.value), p.step, timestamp) for p in points]
        self.journal.metrics += fresh
        self.journal.tags.update(tags or {})
        self.journal.run_name = self.journal.tags.get(names.RUN_NAME_TAG, self.journal.run_name)

        self.write(lambda: self._backend.log_batch(
            self.id, metrics=self._unlogged(fresh), tags=tags))

    def log_text(self, path: str, text: str) -> None:
        content = text.encode("utf-8")
        self.journal.artifacts[path] = content
        self.write(lambda: self._backend.log_artifact(self.id, path, content))

    def log_json(self, path: str, document: Mapping[str, Any]) -> None:
        self.log_text(path, json.dumps(document, ensure_ascii=False, indent=1) + "\n")

    def log_file(self, local: Path, directory: str) -> None:
        path = f"{directory}/{local.name}"
        self.journal.artifacts[path] = local
        self.write(lambda: self._backend.log_artifact(self.id, path, local))

    def log_evaluation(self, scored: ScoredRun) -> None:
        """Every scored item (``evaluation.json``) and the per-entry table of the UI."""
        self.log_text(names.EVALUATION_ARTIFACT,
                      json.dumps(scored.to_json(), ensure_ascii=False, indent=1))

        table = results_table(scored)
        self.journal.artifacts[names.TABLE_ARTIFACT] = table_json(table).encode("utf-8")
        self.write(lambda: self._backend.log_table(self.id, names.TABLE_ARTIFACT, table))

    def publish_reports(self, reports: Mapping[str, str], folder: Path | None = None,
                        local: Collection[str] | None = None) -> tuple[Path, ...]:
        """Log each report (name -> markdown or SVG) to the run and write it to ``folder``
        too (only those named in ``local``, when given); returns the files written."""
        written = []
        for name, text in reports.items():
            self.log_text(names.report_artifact(name), text)
            if folder is not None and (local is None or name in local):
                folder.mkdir(parents=True, exist_ok=True)
                (folder / name).write_text(text, encoding="utf-8")
                written.append(folder / name)
        return tuple(written)

    def register_prompts(self, prompts: Mapping[str, PromptTemplate]) -> None:
        """Prompts (the judge's, the component's) registered and linked to the run; a store
        without a prompt registry is skipped with a warning (their digests stay in params)."""
        if not prompts:
            return
        try:
            self.write(lambda: self._backend.register_prompts(self.id, prompts))
        except Exception as err:  # a store that answers but has no registry
            logger.warning("prompts were not registered in MLflow (%s); their digests "
                           "stay in the run's params", err)

    def record(self) -> RunRecord:
        """The run as it has written itself, whole, for its reports: what the journal holds
        is what the store took (``evalkit report`` renders the same bytes from the store),
        without downloading it back."""
        return journal_record(self.journal)

    def write(self, action: Callable[[], object]) -> None:
        """Send one write to the store; if a tracking server has become unreachable, go on
        against the journal from now on."""
        if self.offline:
            return
        try:
            action()
        except Exception as err:
            if not self._backend.is_remote or self._backend.answers():
                raise
            logger.warning("tracking server %s unreachable (%s); the run goes on and will be "
                           "saved as a local bundle", self.tracking_uri,
                           self._backend.hide_password(str(err)))
            self.offline = True
            self._series.server_down = True

    # --- a series -------------------------------------------------------------------------------

    def child(self, run_name: str, params: Mapping[str, str], tags: Mapping[str, str], *,
              raw_dir: Path | None = None, traced: bool = False) -> TrackedRun:
        """A nested run of this one (a replicate of a series): it goes on past an outage with
        its parent, and starts offline while the server is down."""
        child = NewRun(self.experiment_name, run_name, params,
                       {**tags, names.PARENT_RUN_TAG: self.id})
        return self._open_child(child, raw_dir=raw_dir, traced=traced, parent=self)

    # --- closing --------------------------------------------------------------------------------

    def __enter__(self) -> TrackedRun:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        stopped = kind is not None and issubclass(kind, (KeyboardInterrupt, RunInterrupted))
        self.close("FINISHED" if kind is None else "KILLED" if stopped else "FAILED")

    def close(self, status: str) -> None:
        """Upload the raw results and set the final status, even after a failure (or one of
        the closing itself: never left RUNNING); offline, write the bundle (and raise
        :class:`TrackingOffline` for a finished run)."""
        try:
            final, failure = self._final_uploads(status)

            self.journal.status = final
            self.write(lambda: self._backend.set_status(self.id, final))
            self._end_offline(final)
            if failure is not None and status == "FINISHED":
                raise failure
        except Exception as err:  # never mask the error that brought us here
            if status == "FINISHED" or isinstance(err, TrackingOffline):
                raise
            logger.error("could not close MLflow run %s (%s)%s", self.id, err,
                         "" if self._files is None else
                         f"; raw results remain in {self._files.raw.path}")
        finally:
            if self._files is not None:
                self._files.lock.release()

    def _final_uploads(self, status: str) -> tuple[str, BaseException | None]:
        """The traces and the raw results: the status the run then ends with (FAILED when a
        finished run's uploads fail, KILLED when they are interrupted) and the failure."""
        try:
            self.traces.close(wait=status == "FINISHED")
            if self._files is not None:
                self._files.raw.close()
                if self._files.raw.path.exists():
                    self.log_file(self._files.raw.path, names.RAW_ARTIFACT_DIR)
        except KeyboardInterrupt as interrupt:  # Python's own handler: a notebook's interrupt
            return "KILLED", interrupt
        except Exception as err:
            return ("FAILED" if status == "FINISHED" else status), err
        return status, None

    def _end_offline(self, status: str) -> None:
        if self.offline:
            bundle = self.journal.write(self._series.bundles_dir)
            self._series.bundles.append(bundle)
            if status != "FINISHED":  # a stopped or failed run raises its own error
                logger.warning("the tracking server at %s is unreachable: run %s (%s) is saved "
                               "as a local bundle; upload it once the server is back: evalkit "
                               "sync %s", self.tracking_uri, self.id, status, bundle)

        if self._parent is None and status == "FINISHED" and self._series.bundles:
            raise TrackingOffline(list(self._series.bundles), self.tracking_uri)

    def _unlogged(self, points: Sequence[LoggedPoint]) -> list[LoggedPoint]:
        """``points`` minus those a resumed run holds already (logging them again would
        double its metric histories)."""
        if not self._resumed:
            return list(points)
        held = {(p.key, p.step, p.value) for key in {p.key for p in points}
                for p in self._backend.metric_history(self.id, key)}
        return [p for p in points if (p.key, p.step, p.value) not in held]
