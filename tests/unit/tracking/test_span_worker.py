"""The span writer: a worker process for a large run on a local SQL store, the caller's
thread otherwise; a worker that dies is an error, never silence. Which writer a run gets is
decided without a store; the worker itself on a real local store is
tests/e2e/test_span_worker_process.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.tracking._span_process import WORKER_MIN_CALLS, SpanWriting


@pytest.mark.parametrize("uri_kind, calls", [("sqlite", WORKER_MIN_CALLS - 1),
                                             ("server", WORKER_MIN_CALLS)])
def test_small_runs_and_servers_write_on_the_callers_thread(
        tmp_path: Path, uri_kind: str, calls: int) -> None:
    uri = (f"sqlite:///{tmp_path / 'mlflow.db'}" if uri_kind == "sqlite"
           else "http://127.0.0.1:9")
    writing = SpanWriting(uri)
    writing.start(calls)
    assert writing.worker_pid is None
