"""The golden dataset as the run's input in MLflow (the run page and the runs table show it)."""

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
