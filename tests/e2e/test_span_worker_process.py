"""The span writer's worker process on a real local store: a large run writes in it; a worker
that dies is an error naming it.
"""

from __future__ import annotations

import os
import signal
import uuid

import mlflow
import pytest

from evalkit._errors import TrackingError
from evalkit.records import ScoredRun
from evalkit.tracking._span_process import WORKER_MIN_CALLS, SpanWriting
from evalkit.tracking._trace_writer import TraceWriter
from evalkit.tracking._traces import TraceContext, build_traces


def run_with_calls(uri: str, entries: int) -> tuple[TraceContext, list]:
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment(f"span/worker-{uuid.uuid4().hex[:8]}")
    run = client.create_run(experiment)
    context = TraceContext(run.info.run_id, experiment, run.info.start_time, {}, {})
    calls = [{"entry_id": f"e{i}", "repeat": r, "output": f"out {i}", "error": None,
              "latency_ms": 5.0, "input": f"in {i}"} for i in range(entries) for r in range(2)]
    return context, build_traces(context, ScoredRun(()), calls)


def stored(uri: str, context: TraceContext) -> dict[str, list[str]]:
    """trace id -> the names of its assessments, for every trace of the run in the store."""
    return TraceWriter(mlflow.MlflowClient(uri), context).assessment_names()


def test_a_large_run_on_a_local_store_writes_in_a_worker_process(tracking_uri: str) -> None:
    uri = tracking_uri
    context, traces = run_with_calls(uri, 30)
    writing = SpanWriting(uri)
    writing.start(WORKER_MIN_CALLS)
    assert writing.worker_pid not in (None, os.getpid())
    writing.write_calls(context, traces, check_held=False)
    assert stored(uri, context) == {t.trace_id: [] for t in traces}


def test_a_worker_that_dies_is_an_error_naming_it(tracking_uri: str) -> None:
    uri = tracking_uri
    context, traces = run_with_calls(uri, 3)
    writing = SpanWriting(uri)
    writing.start(WORKER_MIN_CALLS)
    pid = writing.worker_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(TrackingError, match="span writer process stopped"):
        writing.write_calls(context, traces, check_held=False)
    assert stored(uri, context) == {}
