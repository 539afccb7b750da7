"""Rows for ``evalkit dataset import`` read from MLflow: the records of a GenAI evaluation
dataset (``mlflow-dataset:NAME``) or an experiment's traces (``traces:EXPERIMENT[:FILTER]``).

Each record or trace is one row, numbered from 1 in the order MLflow returns them; its columns
are the top-level fields and, for each object among them, ``FIELD.KEY`` per key (so
``--input inputs.question`` picks one input field). A trace's ``tool_calls`` are its ``TOOL``
spans in the order they started, each ``{"name": SPAN NAME, "arguments": ITS INPUTS}``: what a
reviewed trace says the component must call (``--tool-calls tool_calls``).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evalkit._errors import ConfigError
from evalkit.tracking._connection import Connection, local_store

DATASET_PREFIX = "mlflow-dataset:"
TRACES_PREFIX = "traces:"
SOURCE_COLUMNS = {DATASET_PREFIX: ("inputs", "expectations"), TRACES_PREFIX: ("request",
                                                                               "response")}
"""The input and expected-output columns of each source when the command names none."""
_PAGE = 500


def is_mlflow_source(source: str) -> bool:
    return source.startswith((DATASET_PREFIX, TRACES_PREFIX))


def mlflow_rows(source: str, tracking_uri: str | None = None) -> list[tuple[int, dict[str, Any]]]:
    """The rows of ``source`` at ``tracking_uri`` (default: ``MLFLOW_TRACKING_URI``, else the
    local store)."""
    uri = _source_store(tracking_uri or os.environ.get("MLFLOW_TRACKING_URI"))
    import mlflow

    client = mlflow.MlflowClient(uri)
    if source.startswith(DATASET_PREFIX):
        records = _dataset_records(client, uri, source.removeprefix(DATASET_PREFIX))
    else:
        experiment, _, where = source.removeprefix(TRACES_PREFIX).partition(":")
        records = list(_traces(client, experiment, where or None))
    return [(number, _flattened(record)) for number, record in enumerate(records, start=1)]


def _source_store(given: str | None) -> str:
    """The store to read from: a server that answers, or a local store that exists (MLflow
    would create an empty one, printing its table creation, only to find nothing in it)."""
    connection = Connection.to(given or local_store())
    connection.check_reachable()
    database = _local_path(connection.uri)
    if database is not None and not Path(database).exists():
        named = (f"MLFLOW_TRACKING_URI names {connection.shown}" if given else
                 "MLFLOW_TRACKING_URI is not set")
        raise ConfigError(f"there is no MLflow store at {database} to import from ({named}): "
                          "set MLFLOW_TRACKING_URI to the store that holds the dataset or "
                          "traces, or run the command in the folder whose mlflow.db holds them")
    return connection.uri


def _local_path(uri: str) -> str | None:
    """Where a local store lives (an sqlite file, or a folder: ``file:`` or a bare path);
    ``None`` for a server or a database elsewhere."""
    if uri.startswith("sqlite:///"):
        return uri.removeprefix("sqlite:///")
    if uri.startswith("file:"):
        return urlsplit(uri).path
    return None if "://" in uri else uri


def _dataset_records(client: Any, uri: str, name: str) -> list[dict[str, Any]]:
    if not name:
        raise ConfigError(f"{DATASET_PREFIX}: name the dataset, e.g. {DATASET_PREFIX}capitals")
    found = client.search_datasets(filter_string=f"name = '{name}'", max_results=1)
    if not found:
        raise ConfigError(f"no MLflow evaluation dataset named {name!r} in the tracking store "
                          "(MLFLOW_TRACKING_URI, else ./mlflow.db): check the name in the "
                          "MLflow UI's Datasets tab")
    with _store(uri):  # MLflow reads a dataset's records from the process-wide store
        records = found[0].records
    return [{"record_id": r.dataset_record_id, "inputs": r.inputs, "expectations":
             r.expectations, "outputs": r.outputs, "tags": r.tags} for r in records]


@contextlib.contextmanager
def _store(uri: str) -> Iterator[None]:
    import mlflow

    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(previous)


def _traces(client: Any, experiment: str, where: str | None) -> Iterator[dict[str, Any]]:
    found = client.get_experiment_by_name(experiment) if experiment else None
    if found is None:
        raise ConfigError(f"{TRACES_PREFIX}{experiment}: no such experiment in the tracking "
                          "store (MLFLOW_TRACKING_URI, else ./mlflow.db): name it as the "
                          "MLflow UI lists it, e.g. traces:support-router/golden")
    from mlflow.exceptions import MlflowException

    token = None
    while True:
        try:
            page = client.search_traces(locations=[found.experiment_id], filter_string=where,
                                        max_results=_PAGE, page_token=token)
        except MlflowException as err:
            if where is None or err.error_code != "INVALID_PARAMETER_VALUE":
                raise
            raise ConfigError(f"traces filter {where!r}: {err.message} (write it as "
                              "mlflow.search_traces takes it, e.g. tag.reviewed = 'yes')") \
                from None
        for trace in page:
            yield {"trace_id": trace.info.trace_id, "request": _parsed(trace.data.request),
                   "response": _parsed(trace.data.response), "tags": dict(trace.info.tags),
                   "expectations": {a.name: a.value for a in trace.info.assessments
                                    if a.expectation is not None},
                   "tool_calls": _tool_calls(trace)}
        token = page.token
        if not token:
            return


def _tool_calls(trace: Any) -> list[dict[str, Any]]:
    """The trace's ``TOOL`` spans in start order, as expected tool calls (arguments that are
    not an object, which a tool call's cannot be, left out)."""
    from mlflow.entities import SpanType

    spans = sorted(trace.search_spans(span_type=SpanType.TOOL), key=lambda s: s.start_time_ns)
    return [{"name": s.name, **({"arguments": s.inputs} if isinstance(s.inputs, dict) else {})}
            for s in spans]


def _parsed(text: str | None) -> Any:
    """A span's inputs or outputs: MLflow keeps them as JSON text."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _flattened(record: dict[str, Any]) -> dict[str, Any]:
    row = dict(record)
    for field, value in record.items():
        if isinstance(value, dict):
            row.update({f"{field}.{key}": item for key, item in value.items()})
    return row
