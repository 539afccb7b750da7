"""An in-memory tracking store behind the same :class:`~evalkit.tracking.Tracker`: every run
is a :class:`RunJournal` (what a bundle holds), every trace an :class:`EntryTrace`.

For tests and quick trials: an evaluation tracked here does all it does against MLflow
(params, metrics, artifacts, traces, reports read back) in microseconds, and leaves nothing
behind. It reads back what it was given exactly as :func:`journal_record` reads a bundle.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit._errors import ConfigError, NotFound, TrackingError
from evalkit.records import ReviewerVerdict, names
from evalkit.tracking._backend import PromptTemplate, StoredRun
from evalkit.tracking._journal import LoggedPoint, RunJournal
from evalkit.tracking._table import table_json
from evalkit.tracking._traces import Assessment, EntryTrace, TraceContext


@dataclass
class MemoryTraceStore:
    """Traces by run id, each with every assessment written to it."""

    traces: dict[str, dict[str, EntryTrace]] = field(default_factory=dict)
    """run id -> trace id -> the trace as written (calls, judge replies)."""
    assessments: dict[str, list[Assessment]] = field(default_factory=dict)
    """trace id -> its assessments, in the order written."""

    def prepare(self, calls: int) -> None:
        pass

    def write_calls(self, context: TraceContext, traces: Sequence[EntryTrace],
                    check_held: bool) -> None:
        held = self.traces.setdefault(context.run_id, {})
        for trace in traces:
            held.setdefault(trace.trace_id, trace)
            self.assessments.setdefault(trace.trace_id, [])

    def write_verdicts(self, context: TraceContext, traces: Sequence[EntryTrace]) -> None:
        held = self.traces.get(context.run_id, {})
        for trace in traces:
            if trace.trace_id in held and not self.assessments[trace.trace_id]:
                held[trace.trace_id] = trace
                self.assessments[trace.trace_id] = list(trace.assessments)

    def add_assessments(self, context: TraceContext,
                        assessments: Sequence[tuple[str, Assessment]]) -> None:
        for trace_id, assessment in assessments:
            self.assessments[trace_id].append(assessment)

    def assessment_names(self, context: TraceContext) -> dict[str, list[str]]:
        return {trace_id: [a.name for a in self.assessments[trace_id]]
                for trace_id in self.traces.get(context.run_id, {})}


class MemoryBackend:
    """Runs and experiments in memory; a :class:`Backend` that never fails to answer."""

    tracking_uri = "memory:"
    is_remote = False

    def __init__(self) -> None:
        self.journals: dict[str, RunJournal] = {}
        self.experiments: dict[str, str] = {}
        """name -> id."""
        self.traces = MemoryTraceStore()
        self.feedback: dict[str, list[ReviewerVerdict]] = {}
        """run id -> people's feedback on its traces (a test adds it as the UI would)."""
        self.datasets: dict[str, Mapping[str, tuple[Any, Any]]] = {}
        """name -> registered entries (id -> input, expected output)."""
        self.prompts: dict[str, list[str]] = {}
        """run id -> the prompt names linked to it."""
        self._clock = itertools.count(int(time.time() * 1000))

    def check_reachable(self) -> None:
        pass

    def answers(self) -> bool:
        return True

    def hide_password(self, text: str) -> str:
        return text

    def refusal(self, err: BaseException, experiment: str | None,
                permission: str) -> ConfigError | None:
        return None  # memory asks for no credentials

    def experiment_id(self, name: str, create: bool = True) -> str | None:
        if name not in self.experiments and create:
            self.experiments[name] = str(len(self.experiments) + 1)
        return self.experiments.get(name)

    def experiment_name(self, experiment_id: str) -> str:
        return next(n for n, i in self.experiments.items() if i == experiment_id)

    def create_run(self, experiment_id: str, run_name: str, tags: Mapping[str, str],
                   start_time_ms: int | None = None) -> StoredRun:
        run_id = uuid.uuid4().hex
        self.journals[run_id] = RunJournal(
            run_id=run_id, run_name=run_name, experiment_id=experiment_id,
            experiment_name=self.experiment_name(experiment_id),
            start_time_ms=start_time_ms or next(self._clock), tracking_uri=self.tracking_uri,
            tags=dict(tags))
        return self.run(run_id)

    def log_batch(self, run_id: str, *, metrics: Sequence[LoggedPoint] = (),
                  params: Mapping[str, str] | None = None,
                  tags: Mapping[str, str] | None = None) -> None:
        journal = self._journal(run_id)
        clashes = {k for k, v in (params or {}).items()
                   if journal.params.get(k, v) != v}
        if clashes:  # as MLflow: a param is written once
            raise TrackingError(f"run {run_id}: params {sorted(clashes)} changed")
        journal.params.update(params or {})
        journal.tags.update(tags or {})
        journal.run_name = journal.tags.get(names.RUN_NAME_TAG, journal.run_name)  # as MLflow
        journal.metrics += metrics

    def log_artifact(self, run_id: str, path: str, content: bytes | Path) -> None:
        self._journal(run_id).artifacts[path] = (
            content if isinstance(content, bytes) else content.read_bytes())

    def log_table(self, run_id: str, path: str, table: Any) -> None:
        self.log_artifact(run_id, path, table_json(table).encode("utf-8"))

    def log_dataset_input(self, run_id: str, params: Mapping[str, str]) -> None:
        pass

    def set_status(self, run_id: str, status: str) -> None:
        self._journal(run_id).status = status

    def run(self, run_id: str) -> StoredRun:
        journal = self._journal(run_id)
        return StoredRun(run_id, journal.run_name, journal.experiment_id,
                         journal.start_time_ms, journal.status, dict(journal.params),
                         {names.RUN_NAME_TAG: journal.run_name, **journal.tags},
                         journal.latest_metrics())

    def metric_history(self, run_id: str, key: str) -> list[LoggedPoint]:
        return [p for p in self._journal(run_id).metrics if p.key == key]

    def artifact(self, run_id: str, path: str) -> bytes:
        return self._journal(run_id).artifact_bytes(path)

    def runs(self, experiment_id: str, limit: int) -> list[StoredRun]:
        found = [j for j in self.journals.values() if j.experiment_id == experiment_id]
        found.sort(key=lambda j: j.start_time_ms, reverse=True)
        return [self.run(j.run_id) for j in found[:limit]]

    def run_ids(self, prefix: str) -> list[str]:
        return [run_id for run_id in self.journals if run_id.startswith(prefix)]

    def human_feedback(self, experiment_id: str, run_id: str) -> tuple[ReviewerVerdict, ...]:
        """Feedback set in :attr:`feedback`, and HUMAN feedback written to the run's traces
        (timed by the order it was written)."""
        on_traces = [ReviewerVerdict(trace.entry_id, a.source_id, time, a.name, a.value,
                                     a.rationale)
                     for trace in self.traces.traces.get(run_id, {}).values()
                     for time, a in enumerate(self.traces.assessments[trace.trace_id])
                     if a.source_type == "HUMAN" and not a.expectation]
        return tuple(sorted([*self.feedback.get(run_id, ()), *on_traces],
                            key=lambda v: (v.entry_id, v.time_ms, v.reviewer)))

    def register_dataset(self, experiment_id: str, params: Mapping[str, str],
                         entries: Mapping[str, tuple[Any, Any]]) -> None:
        self.datasets[params.get(names.DATASET_DIGEST_PARAM, "")] = dict(entries)

    def register_prompts(self, run_id: str,
                         prompts: Mapping[str, PromptTemplate]) -> None:
        self.prompts[run_id] = sorted({*self.prompts.get(run_id, ()), *prompts})  # linked

    def trace_store(self) -> MemoryTraceStore:
        return self.traces

    def _journal(self, run_id: str) -> RunJournal:
        if run_id not in self.journals:
            raise NotFound(f"run {run_id} not found at {self.tracking_uri} (evalkit history "
                           "EXPERIMENT lists an experiment's runs)")
        return self.journals[run_id]
