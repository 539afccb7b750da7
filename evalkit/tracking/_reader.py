"""Reading runs back: a whole run as a :class:`RunRecord`, its artifacts, an experiment's runs,
and a run named the way people name one (an id, a prefix of one, an experiment).

A record is built the same way from a run on a server, in the local store, in memory or in a
bundle, so reports render identically from any of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from evalkit._errors import ConfigError, NotFound, TrackingError
from evalkit.records import (
    MODE_DOCUMENTS,
    WITHOUT_EVALUATION,
    Mode,
    RunRecord,
    ScoredRun,
    TypeNames,
    label_names,
    labels_in,
    names,
)
from evalkit.tracking._backend import Backend, StoredRun, people_feedback
from evalkit.tracking._journal import RunJournal
from evalkit.tracking._links import run_url
from evalkit.tracking._raw import RawResults, parse_raw_results

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
_RUN_ID_PREFIX = re.compile(r"^[0-9a-f]{4,31}$")


class RunReader:
    """Reads runs from a :class:`Backend`."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def fetch(self, run_id: str) -> RunRecord:
        """A run read back whole: params, tags, metrics, stepped histories, its documents,
        people's labels on its entries and their feedback on the entries for review."""
        run = self._backend.run(run_id)
        try:
            record = build_record(
                run, self._backend.experiment_name(run.experiment_id),
                read_json=lambda path: self.read_json(run_id, path),
                history=lambda key: tuple(p.value for p in sorted(
                    self._backend.metric_history(run_id, key), key=lambda p: p.step)))
        except TrackingError:
            # evalkit's run, stopped before its results were written: say how to finish it
            if run.status != "FINISHED" and Mode.declared(run.tags) is not None:
                raise _unfinished(run) from None
            raise
        if record.evaluation is None:
            return record
        feedback = people_feedback(self._backend, run.experiment_id, run_id)
        types = [t.test_type for t in record.evaluation.types]
        reviewed = {item.id for item in record.evaluation.human_review}
        labels = label_names(types)
        # a label on an entry for review is a label, not the reviewer's verdict on it
        return replace(record, labels=labels_in(feedback, types), reviewer_verdicts=tuple(
            v for v in feedback if v.entry_id in reviewed and v.name not in labels))

    def stored(self, run_id: str) -> StoredRun:
        """A run's info, params, tags and latest metrics, without its artifacts."""
        return self._backend.run(run_id)

    def read_text(self, run_id: str, artifact: str) -> str:
        return self._backend.artifact(run_id, artifact).decode("utf-8")

    def read_json(self, run_id: str, artifact: str) -> Any:
        return json.loads(self.read_text(run_id, artifact))

    def raw_results(self, run_id: str) -> RawResults:
        """The calls a run recorded, from its raw-results artifact."""
        return parse_raw_results(self._backend.artifact(run_id, names.RAW_RESULTS_ARTIFACT),
                                 f"run {run_id}: {names.RAW_RESULTS_ARTIFACT}")

    def url(self, run: StoredRun) -> str:
        """The run's page in the MLflow UI (see :func:`evalkit.tracking.run_url`)."""
        return run_url(self._backend.tracking_uri, run.experiment_id, run.run_id)

    def experiment_name(self, run: StoredRun) -> str:
        return self._backend.experiment_name(run.experiment_id)

    def is_experiment(self, name: str) -> bool:
        return self._backend.experiment_id(name, create=False) is not None

    def runs(self, experiment_name: str, limit: int = 1000) -> list[StoredRun]:
        """An experiment's runs, newest first."""
        experiment_id = self._backend.experiment_id(experiment_name, create=False)
        if experiment_id is None:
            raise NotFound(f"no experiment {experiment_name!r} at "
                           f"{self._backend.tracking_uri}: check the name (EXPERIMENT_NAME in "
                           "eval.py) and MLFLOW_TRACKING_URI")
        return self._backend.runs(experiment_id, limit)

    def evaluation_runs(self, experiment_name: str) -> list[StoredRun]:
        """The experiment's top-level evaluation runs, newest first (see
        :func:`evaluations_among`)."""
        return evaluations_among(self.runs(experiment_name))

    def resolve(self, reference: str, mode: Mode | None = None) -> str:
        """A run id as given, the one run whose id starts with ``reference`` (4 or more hex
        digits), or the latest finished evaluation run of the experiment named ``reference``
        (of the given mode, e.g. a replicate series, when one is asked)."""
        if _RUN_ID.match(reference):
            return reference
        if not self.is_experiment(reference):
            if _RUN_ID_PREFIX.match(reference):
                return self._run_with_prefix(reference)
            raise NotFound(f"no experiment {reference!r} at {self._backend.tracking_uri} "
                           "(and it is not a run id, 32 hex digits, nor the first 4 or more "
                           "of one)")
        for run in self.evaluation_runs(reference):
            if run.status == "FINISHED" and (mode is None
                                             or run.tags.get(names.MODE_TAG) == mode):
                return run.run_id
        kind = f"{mode} run" if mode else "run"
        raise NotFound(f"experiment {reference!r} has no finished {kind}"
                       + (": run make eval-replicates for it first"
                          if mode == Mode.REPLICATES else ""))

    def _run_with_prefix(self, prefix: str) -> str:
        matches = self._backend.run_ids(prefix)
        if len(matches) != 1:
            found = ("no run" if not matches else
                     f"{len(matches)} runs ({', '.join(sorted(matches)[:5])})")
            raise NotFound(f"{found} at {self._backend.tracking_uri} has an id starting "
                           f"with {prefix!r}: give more of the run id, or the experiment "
                           "name")
        return matches[0]


def resume_commands(run_id: str, script: str = "eval.py") -> str:
    """What finishes an unfinished run: the commands that resume it."""
    return (f"evalkit resume {run_id} (--script PATH for a script other than ./eval.py; or "
            f"python {script} --resume {run_id})")


def _unfinished(run: StoredRun) -> ConfigError:
    """The refusal to read a run that stopped before its results were written, with what
    finishes it: a resume for an ordinary run, running it again for any other."""
    ordinary = Mode.declared(run.tags) == Mode.EVALUATION and names.PARENT_RUN_TAG not in run.tags
    fix = (f"finish it first: {resume_commands(run.run_id)}, then try again"
           if ordinary else "it cannot be resumed: run it again")
    return ConfigError(f"run {run.run_id} did not finish ({run.status}): its results were never "
                       f"written, so there is nothing to read yet; {fix}")


def build_record(run: StoredRun, experiment_name: str, *, read_json: Callable[[str], Any],
                 history: Callable[[str], tuple[float, ...]]) -> RunRecord:
    """A :class:`RunRecord` from a run's data and readers of its artifacts and histories;
    the same for a run on a server, in the local store, in memory, or in a bundle."""
    mode = Mode.declared(run.tags)
    if mode is None:
        raise TrackingError(f"run {run.run_id} is tagged {names.MODE_TAG}="
                            f"{run.tags[names.MODE_TAG]!r}: it was not made by evalkit, which "
                            "reads only its own runs")
    evaluation = None if mode in WITHOUT_EVALUATION else ScoredRun.from_json(
        read_json(names.EVALUATION_ARTIFACT))
    documents = {path: read_json(path) for path in (
        *MODE_DOCUMENTS.get(mode, ()),
        *((names.LABEL_DRAWS_ARTIFACT,) if names.LABEL_DRAWS_TAG in run.tags else ()),
        # written with the verdict: a sequential run stopped before it has none yet
        *((names.SEQUENTIAL_ARTIFACT,) if names.SEQUENTIAL_TAG in run.tags
          and names.VERDICT_TAG in run.tags else ()))}
    histories = {key: history(key) for result in (evaluation.types if evaluation else ())
                 for n in (TypeNames.of(result.test_type),)
                 for key in (n.cumulative_accuracy, n.cumulative_f1)}
    return RunRecord(
        run_id=run.run_id, run_name=run.run_name, experiment_id=run.experiment_id,
        experiment_name=experiment_name, start_time_ms=run.start_time_ms, status=run.status,
        params=dict(run.params), tags=dict(run.tags), metrics=dict(run.metrics),
        histories=histories, evaluation=evaluation, documents=documents)


def journal_record(journal: RunJournal) -> RunRecord:
    """The :class:`RunRecord` a journal (or a bundle) holds."""
    run = StoredRun(journal.run_id, journal.run_name, journal.experiment_id,
                    journal.start_time_ms, journal.status, journal.params, journal.tags,
                    journal.latest_metrics())
    return build_record(
        run, journal.experiment_name,
        read_json=lambda path: json.loads(journal.artifact_bytes(path).decode("utf-8")),
        history=journal.history)


def evaluations_among(runs: Iterable[StoredRun]) -> list[StoredRun]:
    """The top-level evaluation runs evalkit made, in the order given: replicate children
    (folded into their parent), planning runs (they evaluate nothing) and runs someone else
    logged in the experiment (a ``mode`` tag evalkit never writes) left out."""
    return [run for run in runs
            if names.PARENT_RUN_TAG not in run.tags
            and Mode.declared(run.tags) not in (None, Mode.PLANNING)]
