"""The GenAI side of a run in MLflow: the golden dataset (the run's input, and an evaluation
dataset of the experiment), the judge's prompts in the prompt registry, people's feedback on
the run's traces, and the store the traces are written to.

The YAML judge prompts stay the source; the registry holds a copy per prompt name, in
MLflow's ``{{variable}}`` form, with a new version only when the content changes (found by the
``evalkit.sha256`` tag of the latest version).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalkit.records import ReviewerVerdict, names
from evalkit.tracking import _mlflow_private as private
from evalkit.tracking._backend import PromptTemplate
from evalkit.tracking._span_process import SpanWriting
from evalkit.tracking._trace_writer import TraceWriter
from evalkit.tracking._traces import Assessment, EntryTrace, TraceContext


def log_dataset_input(client: Any, run_id: str, params: Mapping[str, str]) -> None:
    """``log_inputs`` of the dataset the params name (``DATASET_PATH``, ``dataset_digest``),
    with its source path; a run without a dataset (planning) logs nothing."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    if names.DATASET_PATH_PARAM not in params or names.DATASET_DIGEST_PARAM not in params:
        return
    path = Path(params[names.DATASET_PATH_PARAM]).resolve()
    # MLflow's own "local" source: a JSON document naming the folder's URI
    dataset = Dataset(name=path.name, digest=params[names.DATASET_DIGEST_PARAM][:36],
                      source_type="local", source=json.dumps({"uri": str(path)}))
    client.log_inputs(run_id, datasets=[DatasetInput(
        dataset=dataset, tags=[InputTag(names.DATASET_CONTEXT_TAG, names.DATASET_CONTEXT)])])


def register_evaluation_dataset(client: Any, experiment_id: str, params: Mapping[str, str],
                                entries: Mapping[str, tuple[Any, Any]]) -> bool:
    """Register the dataset as an MLflow GenAI evaluation dataset (records = entries, entry id
    -> (input, expected output); expectations = ``expected_output``), once per digest, when the
    run covered every entry (a ``--groups`` or single-type run holds only part of it). Returns
    whether it registered one now."""
    digest = params.get(names.DATASET_DIGEST_PARAM)
    if digest is None or len(entries) != int(params.get(names.DATASET_ENTRIES_PARAM, -1)):
        return False
    source = Path(params[names.DATASET_PATH_PARAM])
    name = f"{source.name}-{digest[:12]}"
    by_name = f"name = '{name}'"
    if client.search_datasets(experiment_ids=[experiment_id], filter_string=by_name,
                              max_results=1):
        return False
    # Registered by another experiment's run: add this experiment. (Asked by search, not by
    # the dataset's experiment_ids, which MLflow reads from the process-wide store.)
    found = client.search_datasets(filter_string=by_name, max_results=1)
    if found:
        client.add_dataset_to_experiments(found[0].dataset_id, [experiment_id])
        return False
    dataset = client.create_dataset(name=name, experiment_id=experiment_id, tags={
        names.DATASET_DIGEST_TAG: digest, names.DATASET_SOURCE_TAG: str(source.resolve())})
    # MLflow keys records by their inputs: the entry id is one, so two entries with the same
    # input stay two records.
    private.upsert_dataset_records(client, dataset.dataset_id, [
        {"inputs": {"entry_id": entry_id, "input": given}, "tags": {"entry_id": entry_id},
         "expectations": {} if expected is None
         else {names.EXPECTATION_ASSESSMENT: expected}}
        for entry_id, (given, expected) in sorted(entries.items())])
    return True


def register_prompts(client: Any, run_id: str,
                     prompts: Mapping[str, PromptTemplate]) -> list[str]:
    """Register each template (name -> text or chat messages) unless its latest version holds
    the same content, link that version to the run, and return the versions' URIs."""
    uris = []
    for name, given in sorted(prompts.items()):
        template = given if isinstance(given, str) else [dict(m) for m in given]
        sha = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
        latest = client.load_prompt(f"prompts:/{name}@latest", allow_missing=True)
        if latest is None or latest.tags.get(names.PROMPT_SHA_TAG) != sha:
            latest = client.register_prompt(
                name=name, template=template, tags={names.PROMPT_SHA_TAG: sha},
                commit_message=f"evalkit: content sha256 {sha[:16]}")
        private.link_prompt_to_run(client, run_id, latest)
        uris.append(latest.uri)
    return uris


def human_feedback(client: Any, experiment_id: str, run_id: str
                   ) -> tuple[ReviewerVerdict, ...]:
    """Feedback people added to the run's traces in the MLflow UI (source ``HUMAN``), as
    MLflow holds it (:func:`~evalkit.tracking._backend.people_feedback` redacts it)."""
    verdicts = []
    token = None
    while True:
        page = client.search_traces(locations=[experiment_id], run_id=run_id, max_results=500,
                                    page_token=token, include_spans=False)
        verdicts += [
            ReviewerVerdict(trace.info.tags.get(names.ENTRY_ID_TRACE_TAG, trace.info.trace_id),
                            a.source.source_id, int(a.create_time_ms or 0), a.name, a.value,
                            a.rationale)
            for trace in page for a in trace.info.assessments
            if a.source.source_type == "HUMAN" and a.feedback is not None and a.valid
            is not False]
        token = page.token
        if not token:
            return tuple(sorted(verdicts, key=lambda v: (v.entry_id, v.time_ms, v.reviewer)))


class MlflowTraceStore:
    """Traces in MLflow: spans through :class:`SpanWriting` (a worker process for a large run
    on a local store), assessments and counts through :class:`TraceWriter`."""

    def __init__(self, client: Any, uri: str) -> None:
        self._client = client
        self._spans = SpanWriting(uri)

    def prepare(self, calls: int) -> None:
        self._spans.start(calls)

    def write_calls(self, context: TraceContext, traces: Sequence[EntryTrace],
                    check_held: bool) -> None:
        self._spans.write_calls(context, traces, check_held)

    def write_verdicts(self, context: TraceContext, traces: Sequence[EntryTrace]) -> None:
        self._spans.write_verdicts(context, traces)

    def add_assessments(self, context: TraceContext,
                        assessments: Sequence[tuple[str, Assessment]]) -> None:
        TraceWriter(self._client, context).log_assessments(assessments)

    def assessment_names(self, context: TraceContext) -> dict[str, list[str]]:
        return TraceWriter(self._client, context).assessment_names()
