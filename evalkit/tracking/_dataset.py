"""The golden dataset in MLflow: the run's input (the run page and the runs table show it), and
a GenAI evaluation dataset (the experiment's Datasets page)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DATASET_CONTEXT = "evaluation"


def log_dataset_input(client: Any, run_id: str, params: Mapping[str, str]) -> None:
    """``log_inputs`` of the dataset the params name (``DATASET_PATH``, ``dataset_digest``),
    with its source path; a run without a dataset (planning) logs nothing."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    if "DATASET_PATH" not in params or "dataset_digest" not in params:
        return
    path = Path(params["DATASET_PATH"]).resolve()
    # MLflow's own "local" source: a JSON document naming the folder's URI
    dataset = Dataset(name=path.name, digest=params["dataset_digest"][:36],
                      source_type="local", source=json.dumps({"uri": str(path)}))
    client.log_inputs(run_id, datasets=[DatasetInput(
        dataset=dataset, tags=[InputTag("mlflow.data.context", DATASET_CONTEXT)])])


def register_evaluation_dataset(client: Any, experiment_id: str, params: Mapping[str, str],
                                entries: Mapping[str, tuple[Any, Any]]) -> bool:
    """Register the dataset as an MLflow GenAI evaluation dataset (records = entries, entry id
    -> (input, expected output); expectations = ``expected_output``), once per digest, when the
    run covered every entry (a ``--groups`` or single-type run holds only part of it). Returns
    whether it registered one now."""
    if "dataset_digest" not in params or len(entries) != int(params.get("dataset_entries", -1)):
        return False
    digest = params["dataset_digest"]
    name = f"{Path(params['DATASET_PATH']).name}-{digest[:12]}"
    found = client.search_datasets(filter_string=f"name = '{name}'", max_results=1)
    if found:
        if experiment_id not in (found[0].experiment_ids or []):
            client.add_dataset_to_experiments(found[0].dataset_id, [experiment_id])
        return False
    dataset = client.create_dataset(name=name, experiment_id=experiment_id, tags={
        "evalkit.dataset_digest": digest,
        "evalkit.source": str(Path(params["DATASET_PATH"]).resolve())})
    # the store's own upsert: the entity's merge_records would use the global tracking URI.
    # MLflow keys records by their inputs: the entry id is one, so two entries with the same
    # input stay two records.
    client._tracking_client.store.upsert_dataset_records(dataset_id=dataset.dataset_id, records=[
        {"inputs": {"entry_id": entry_id, "input": given}, "tags": {"entry_id": entry_id},
         "expectations": {} if expected is None else {"expected_output": expected}}
        for entry_id, (given, expected) in sorted(entries.items())])
    return True
