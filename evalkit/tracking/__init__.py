"""Tracking: MLflow as the store of every run.

A :class:`Tracker` is a store (MLflow at a tracking URI, or memory for tests). Its
:meth:`~Tracker.run` starts a :class:`TrackedRun`, the one object that owns a run's writes,
raw results, traces, reports and final status, and survives a server outage as a local
bundle; :attr:`Tracker.reader` reads runs back whole as :class:`~evalkit.records.RunRecord`;
:meth:`Tracker.upload` uploads a bundle; :func:`history` lists an experiment's runs.
Tracking stores and reads plain records; it knows nothing of scoring or the call window.
"""

from evalkit.tracking._backend import StoredRun
from evalkit.tracking._component_spans import call_trace
from evalkit.tracking._connection import local_store
from evalkit.tracking._history import history, render_history
from evalkit.tracking._import_sources import SOURCE_COLUMNS, is_mlflow_source, mlflow_rows
from evalkit.tracking._labels import RunLabels, label_assessment, wanted_assessment
from evalkit.tracking._links import ServedUi, shown_uri, ui_port
from evalkit.tracking._metric_points import judge_points, type_points
from evalkit.tracking._raw import RawResults, RawResultsLog, read_raw_results
from evalkit.tracking._reader import RunReader, resume_commands
from evalkit.tracking._run import TrackedRun
from evalkit.tracking._source import SourceState, source_state
from evalkit.tracking._span_capture import MlflowSpanCapture, spans_let_go
from evalkit.tracking._traces import (
    Assessment,
    answers_of,
    stability_assessment,
    trace_id_for,
)
from evalkit.tracking._tracker import Tracker

__all__ = ["SOURCE_COLUMNS", "answers_of", "Assessment", "call_trace", "history",
           "is_mlflow_source", "MlflowSpanCapture", "spans_let_go",
           "judge_points", "label_assessment", "local_store", "mlflow_rows", "RawResults",
           "RawResultsLog", "read_raw_results", "render_history", "resume_commands", "RunLabels",
           "RunReader", "ServedUi", "shown_uri", "source_state", "SourceState",
           "stability_assessment", "StoredRun", "trace_id_for", "TrackedRun", "Tracker",
           "type_points", "ui_port", "wanted_assessment"]
