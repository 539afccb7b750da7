"""The embedding model is loaded once per process: every run of a replicate series scores
with the one model its Scorers hold.

sentence-transformers is replaced by a stand-in that counts the models built and the texts
each encodes (the real model takes seconds to load, and what is tested here is evalkit's use
of it, not the model)."""

from __future__ import annotations

import hashlib
import importlib.machinery
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalkit import Call, Entry, RunContext, Selection
from evalkit.evaluation import evaluate_replicates
from evalkit.tracking import Tracker
from tests.support.builders import config_for, entry, write_dataset


class CountingModel:
    """A sentence-transformers model: each text's embedding is a unit vector drawn from its
    digest, so equal texts embed equally and different ones almost never do."""

    built: list[CountingModel] = []

    def __init__(self, path: str, device: str = "cpu") -> None:
        self.path = path
        self.encoded: list[str] = []
        CountingModel.built.append(self)

    def encode(self, texts: list[str], **options: Any) -> np.ndarray:
        assert options["normalize_embeddings"] and options["convert_to_numpy"]
        self.encoded += texts
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
            vector = np.random.default_rng(seed).normal(size=16)
            rows.append(vector / np.linalg.norm(vector))
        return np.array(rows, dtype=np.float32)


@pytest.fixture
def counting_model(monkeypatch: pytest.MonkeyPatch) -> type[CountingModel]:
    fake = types.ModuleType("sentence_transformers")
    fake.__spec__ = importlib.machinery.ModuleSpec("sentence_transformers", None)
    fake.SentenceTransformer = CountingModel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    monkeypatch.setattr(CountingModel, "built", [])
    return CountingModel


def test_a_replicate_series_loads_the_model_once(tmp_path: Path, tracker: Tracker,
                                                 counting_model: type[CountingModel]) -> None:
    dataset = write_dataset(tmp_path / "ds", {
        f"r{i}": entry("repeatability", input=f"question {i}") for i in range(3)})
    config = config_for(tmp_path, dataset, EVAL_MIN_ACCURACY=0.0, REPEAT_COUNT=3,
                        EVAL_MIN_ACCURACY_REPEATABILITY=0.0, REPLICATES=3,
                        SCORER="semantic_similarity", REPEAT_SEMANTIC_SIMILARITY_SCORE=0.9)

    def answer(entry: Entry, call: Call) -> Any:
        # r0 always gives one answer, r1 one answer per replicate (its seed), r2 a new
        # answer on every repeat.
        if entry.id == "r0":
            return "the same answer"
        if entry.id == "r1":
            return f"answer seeded {call.seed}"
        return f"answer {call.repeat} of replicate {call.replicate}"

    series = evaluate_replicates(config, answer, Selection("all"),
                                 RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert len(series.replicates) == 3
    (model,) = counting_model.built  # one model for the three runs
    assert Path(model.path).name == "model"  # the packaged all-MiniLM-L6-v2, loaded offline
    for replicate in series.replicates:
        items = {i.id: i for i in replicate.scored.type_result("repeatability").items}
        assert {k: i.passed for k, i in items.items()} == {"r0": True, "r1": True, "r2": False}
        assert items["r2"].similarity is not None and items["r2"].similarity < 0.9
        # the texts of every replicate went through the one model
        assert set(items["r2"].outputs) <= set(model.encoded)
    r1_answers = {r.scored.type_result("repeatability").items[1].outputs[0]
                  for r in series.replicates}
    assert len(r1_answers) == 3  # the seeds differ, so each replicate ran its own draws
    assert all(tracker.reader.stored(r.run_id).status == "FINISHED" for r in series.replicates)
