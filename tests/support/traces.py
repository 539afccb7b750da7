"""Traces read back, from a real MLflow store or a store in memory, and held against the run's
results: one trace per entry, each per-item verdict a feedback on the trace of each entry it
covers.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import mlflow

from evalkit.records import ScoredRun, names
from evalkit.tracking import Tracker
from evalkit.tracking._memory import MemoryBackend


def traces_of(tracking_uri: str, run_id: str) -> list[Any]:
    """Every trace an MLflow store links to the run, with its spans and assessments."""
    client = mlflow.MlflowClient(tracking_uri)
    experiment = client.get_run(run_id).info.experiment_id
    found, token = [], None
    while True:
        page = client.search_traces(locations=[experiment], run_id=run_id, max_results=500,
                                    page_token=token)
        found += page
        token = page.token
        if not token:
            return found


def expected_verdicts(scored: ScoredRun) -> Counter[tuple[str, str, bool]]:
    """(entry id, test type, passed) of every per-item result, once per entry it covers."""
    return Counter((e, r.test_type, i.passed) for r in scored.types for i in r.items
                   for e in i.entry_ids)


def assert_traces_match_results(tracking_uri: str, run_id: str) -> None:
    """One trace per entry; each per-item result of ``results/evaluation.json`` is a feedback
    on the trace of each entry it covers, with the verdict as its value."""
    client = mlflow.MlflowClient(tracking_uri)
    scored = ScoredRun.from_json(json.loads(Path(client.download_artifacts(
        run_id, names.EVALUATION_ARTIFACT)).read_text(encoding="utf-8")))
    traces = {t.info.tags[names.ENTRY_ID_TRACE_TAG]: t for t in traces_of(tracking_uri, run_id)}
    assert set(traces) == {e for r in scored.types for i in r.items for e in i.entry_ids}
    types = {r.test_type for r in scored.types}
    held = Counter((entry_id, a.name, a.value) for entry_id, t in traces.items()
                   for a in t.info.assessments if a.feedback is not None and a.name in types)
    assert held == expected_verdicts(scored)


def assert_memory_traces_match_results(backend: MemoryBackend, run_id: str) -> None:
    """:func:`assert_traces_match_results` for a run in memory."""
    scored = ScoredRun.from_json(json.loads(backend.artifact(run_id,
                                                             names.EVALUATION_ARTIFACT)))
    traces = backend.traces.traces.get(run_id, {})
    by_entry = {t.entry_id: trace_id for trace_id, t in traces.items()}
    assert set(by_entry) == {e for r in scored.types for i in r.items for e in i.entry_ids}
    types = {r.test_type for r in scored.types}
    held = Counter((entry_id, a.name, a.value) for entry_id, trace_id in by_entry.items()
                   for a in backend.traces.assessments[trace_id] if a.name in types)
    assert held == expected_verdicts(scored)


def memory_assessments(tracker: Tracker, run_id: str) -> dict[str, dict[str, list[Any]]]:
    """entry id -> assessment name -> the assessments of that name on the entry's trace."""
    backend = tracker.backend
    assert isinstance(backend, MemoryBackend)
    found: dict[str, dict[str, list[Any]]] = {}
    for trace_id, trace in backend.traces.traces.get(run_id, {}).items():
        for assessment in backend.traces.assessments[trace_id]:
            found.setdefault(trace.entry_id, {}).setdefault(assessment.name, []).append(
                assessment)
    return found
