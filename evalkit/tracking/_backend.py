"""What a tracked run needs of a store, in evalkit's own terms: :class:`Backend` for runs and
:class:`TraceStore` for their traces.

Two implement them: MLflow (:class:`~evalkit.tracking._mlflow.MlflowBackend`, the real thing)
and memory (:class:`~evalkit.tracking._memory.MemoryBackend`, for tests and quick trials).
Everything above them (a :class:`~evalkit.tracking.TrackedRun`, the reader, sync) is the
same code whichever is behind it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from evalkit._errors import ConfigError
from evalkit._secrets import Redactor
from evalkit.records import ReviewerVerdict
from evalkit.tracking._journal import LoggedPoint
from evalkit.tracking._traces import Assessment, EntryTrace, TraceContext

PromptTemplate = str | Sequence[Mapping[str, str]]
"""A prompt for MLflow's registry: a text template, or a chat template (role/content
messages)."""


@dataclass(frozen=True)
class StoredRun:
    """A run as the store holds it (its artifacts are read separately)."""

    run_id: str
    run_name: str
    experiment_id: str
    start_time_ms: int
    status: str
    params: Mapping[str, str]
    tags: Mapping[str, str]
    metrics: Mapping[str, float]
    """The latest value of each metric."""


class TraceStore(Protocol):
    """Where a run's traces and their assessments go."""

    def prepare(self, calls: int) -> None:
        """Get ready for a run of ``calls`` traced calls (a worker process if it pays)."""

    def write_calls(self, context: TraceContext, traces: Sequence[EntryTrace],
                    check_held: bool) -> None:
        """Each entry's root and call spans, linked to the run; with ``check_held``, traces
        the store holds already are skipped (a resumed run, a second sync)."""

    def write_verdicts(self, context: TraceContext, traces: Sequence[EntryTrace]) -> None:
        """The judge's spans, the tags and the assessments of traces that hold none yet."""

    def add_assessments(self, context: TraceContext,
                        assessments: Sequence[tuple[str, Assessment]]) -> None:
        """Assessments (trace id, assessment) added to traces written earlier."""

    def assessment_names(self, context: TraceContext) -> dict[str, list[str]]:
        """trace id -> the names of its assessments, for every trace of the run."""


class Backend(Protocol):
    """A tracking store: runs, their params, tags, metrics and artifacts, and reading them."""

    tracking_uri: str
    """As shown: a password in it is replaced by ``***``."""
    is_remote: bool

    def check_reachable(self) -> None:
        """Fail in seconds with :class:`TrackingError` when a server does not answer."""

    def answers(self) -> bool: ...

    def hide_password(self, text: str) -> str: ...

    def refusal(self, err: BaseException, experiment: str | None,
                permission: str) -> ConfigError | None:
        """A :class:`ConfigError` naming the fix when ``err`` is the store refusing the
        credentials or ``permission`` on ``experiment``; ``None`` for any other error."""

    def experiment_id(self, name: str, create: bool = True) -> str | None:
        """The experiment's id, created when missing (else ``None``); a deleted one is a
        :class:`TrackingError`."""

    def experiment_name(self, experiment_id: str) -> str: ...

    def create_run(self, experiment_id: str, run_name: str, tags: Mapping[str, str],
                   start_time_ms: int | None = None) -> StoredRun: ...

    def log_batch(self, run_id: str, *, metrics: Sequence[LoggedPoint] = (),
                  params: Mapping[str, str] | None = None,
                  tags: Mapping[str, str] | None = None) -> None: ...

    def log_artifact(self, run_id: str, path: str, content: bytes | Path) -> None:
        """Write one artifact at ``path`` (``dir/name``) from bytes or a local file."""

    def log_table(self, run_id: str, path: str, table: Any) -> None:
        """A table (column -> values, or a data frame) the UI shows as a grid."""

    def log_dataset_input(self, run_id: str, params: Mapping[str, str]) -> None: ...

    def set_status(self, run_id: str, status: str) -> None:
        """``RUNNING`` reopens a run; any other status ends it."""

    def run(self, run_id: str) -> StoredRun: ...

    def metric_history(self, run_id: str, key: str) -> list[LoggedPoint]: ...

    def artifact(self, run_id: str, path: str) -> bytes: ...

    def runs(self, experiment_id: str, limit: int) -> list[StoredRun]:
        """An experiment's runs, newest first."""

    def run_ids(self, prefix: str) -> list[str]:
        """The ids of every run (of any experiment) that start with ``prefix``."""

    def human_feedback(self, experiment_id: str, run_id: str) -> tuple[ReviewerVerdict, ...]:
        """Feedback people added to the run's traces (source ``HUMAN``)."""

    def register_dataset(self, experiment_id: str, params: Mapping[str, str],
                         entries: Mapping[str, tuple[Any, Any]]) -> None:
        """The golden dataset as an evaluation dataset of the experiment (entry id ->
        input, expected output)."""

    def register_prompts(self, run_id: str,
                         prompts: Mapping[str, PromptTemplate]) -> None:
        """Prompts (name -> template), each registered unless its latest version holds the
        same content, and linked to the run."""

    def trace_store(self) -> TraceStore: ...


def people_feedback(backend: Backend, experiment_id: str,
                    run_id: str) -> tuple[ReviewerVerdict, ...]:
    """People's feedback on a run's traces (:meth:`Backend.human_feedback`), a secret in its
    text redacted: MLflow keeps what a person typed in its UI, evalkit never repeats it."""
    redact = Redactor.from_environment()
    return tuple(replace(v, reviewer=redact.text(v.reviewer), value=redact.value(v.value),
                         comment=None if v.comment is None else redact.text(v.comment))
                 for v in backend.human_feedback(experiment_id, run_id))
