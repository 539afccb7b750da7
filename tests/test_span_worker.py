"""The span writer: a worker process for a large run on a local SQL store, the caller's
thread otherwise; a worker that dies is an error, never silence."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import mlflow
import pytest

from evalkit._errors import TrackingError
from evalkit.records import ScoredRun
from evalkit.tracking._span_process import WORKER_MIN_CALLS, SpanWriting
from evalkit.tracking._trace_writer import TraceWriter
from evalkit.tracking._traces import RunContext, build_traces


def run_with_calls(uri: str, entries: int) -> tuple[RunContext, list]:
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("span/worker")
    run = client.create_run(experiment)
    context = RunContext(run.info.run_id, experiment, run.info.start_time, {}, {})
    calls = [{"entry_id": f"e{i}", "repeat": r, "output": f"out {i}", "error": None,
              "latency_ms": 5.0, "input": f"in {i}"} for i in range(entries) for r in range(2)]
    return context, build_traces(context, ScoredRun(()), calls)


def stored(uri: str, context: RunContext) -> dict[str, int]:
    return TraceWriter(mlflow.MlflowClient(uri), context).stored()


def test_a_large_run_on_a_local_store_writes_in_a_worker_process(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    context, traces = run_with_calls(uri, 30)
    writing = SpanWriting(uri)
    writing.start(WORKER_MIN_CALLS)
    assert writing.worker_pid not in (None, os.getpid())
    writing.write_calls(context, traces, check_held=False)
    assert stored(uri, context) == {t.trace_id: 0 for t in traces}


@pytest.mark.parametrize("uri_kind, calls", [("sqlite", WORKER_MIN_CALLS - 1),
                                             ("server", WORKER_MIN_CALLS)])
def test_small_runs_and_servers_write_on_the_callers_thread(
        tmp_path: Path, uri_kind: str, calls: int) -> None:
    uri = (f"sqlite:///{tmp_path / 'mlflow.db'}" if uri_kind == "sqlite"
           else "http://127.0.0.1:9")
    writing = SpanWriting(uri)
    writing.start(calls)
    assert writing.worker_pid is None


def test_a_worker_that_dies_is_an_error_naming_it(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    context, traces = run_with_calls(uri, 3)
    writing = SpanWriting(uri)
    writing.start(WORKER_MIN_CALLS)
    pid = writing.worker_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(TrackingError, match="span writer process stopped"):
        writing.write_calls(context, traces, check_held=False)
    assert stored(uri, context) == {}
