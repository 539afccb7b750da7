"""The embedding model is loaded once per process: every run of a replicate series scores
with the one model its Scorers hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sentence_transformers

from evalkit import Call, Entry, EvalConfig, Selection
from evalkit.run import evaluate_replicates
from evalkit.tracking import Tracker
from tests.conftest import entry, write_dataset


def test_a_replicate_series_loads_the_model_once(tmp_path: Path, tracking_uri: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[str] = []
    real = sentence_transformers.SentenceTransformer

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            loads.append(str(args[0]))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", Counting)
    dataset = write_dataset(tmp_path / "ds", {
        f"r{i}": entry("repeatability", input=f"question {i}") for i in range(3)})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "embedding/reuse", "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0,
        "REPEAT_COUNT": 3, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0, "REPLICATES": 3,
        "SCORER": "semantic_similarity", "REPEAT_SEMANTIC_SIMILARITY_SCORE": 0.9},
        "eval.py")

    def answer(entry: Entry, call: Call) -> Any:
        return f"answer to {entry.input}, take {(call.seed or 0) % 2}"

    series = evaluate_replicates(config, answer, Selection("all"),
                                 tracker=Tracker(tracking_uri), runs_dir=tmp_path / "runs")
    assert len(series.replicates) == 3
    assert all(r.scored.type_result("repeatability").items for r in series.replicates)
    assert len(loads) == 1
