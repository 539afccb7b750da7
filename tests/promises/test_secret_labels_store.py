"""Secrets against a real local store (slow): no text a person or a component supplies puts
the key in the store or a report.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import mlflow
import pytest
from mlflow.entities import AssessmentSource

from evalkit.records import names
from tests.promises.test_secret_labels import ENTRIES, IN_A_CELL, REDACTED, label_rows
from tests.support.builders import RecordingComponent, entry, write_dataset
from tests.support.commands import eval_script, evalkit_command

pytestmark = pytest.mark.slow


def files_holding(folder: Path, secret: str) -> list[str]:
    """Every file under ``folder`` whose bytes hold ``secret`` (as UTF-8); at least one file
    is looked at."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files, folder
    return [str(p) for p in files if secret.encode() in p.read_bytes()]


def test_no_text_a_person_or_component_supplies_puts_the_key_in_the_store_or_a_report(
        tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch,
        secret: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    entries = {**ENTRIES, "e01": entry("functional", input=f"my key is {secret}, help")}
    dataset = write_dataset(project / "ds", entries)
    (project / "labels.jsonl").write_text(label_rows(secret), encoding="utf-8")
    (project / "more.jsonl").write_text(label_rows(secret, reviewer=False), encoding="utf-8")
    component = RecordingComponent({"e02": f"a, sent with {secret}"})
    constants: dict[str, Any] = {
        "EXPERIMENT_NAME": f"tests/{uuid.uuid4().hex[:12]}", "DATASET_PATH": str(dataset),
        "EVAL_MIN_ACCURACY": 0.5, "REPEAT_COUNT": 2, "LABELS_PATH": "labels.jsonl",
        "LABEL_SAMPLE": 12, "COMPONENT_PARAMS": {"key": secret}}

    assert eval_script(constants, component, "--type=all", "--json", "run.json") == 0
    run_id = json.loads((project / "run.json").read_text(encoding="utf-8"))["run_id"]
    assert evalkit_command("label", run_id, "--from", "more.jsonl",
                           "--reviewer", f"bob {secret}") == 0

    client = mlflow.MlflowClient(tracking_uri)
    run = client.get_run(run_id)
    store = Path(tracking_uri.removeprefix("sqlite:///"))
    artifacts = Path(run.info.artifact_uri.removeprefix("file://")).parent
    assert artifacts.is_dir() and store.is_file()
    assert files_holding(store.parent, secret) == []  # the sqlite file, its journal or WAL
    # The key was planted where it shows: the labels and their comments, redacted.
    traces = {t.info.tags[names.ENTRY_ID_TRACE_TAG]: t for t in client.search_traces(
        locations=[run.info.experiment_id], run_id=run_id)}
    feedback = [(a.source.source_id, a.rationale) for t in traces.values()
                for a in t.info.assessments if a.source.source_type == "HUMAN"]
    assert (f"ann {REDACTED}", f"the reply pasted {REDACTED} in clear") in feedback
    assert (f"bob {REDACTED}", f"the reply pasted {REDACTED} in clear") in feedback

    # A reviewer types the key into the MLflow UI: MLflow keeps it, evalkit's reports do not.
    mlflow.log_feedback(
        trace_id=traces["hr"].info.trace_id, name=names.REVIEW_ASSESSMENT, value=True,
        rationale=f"typed {secret} in the UI",
        source=AssessmentSource(source_type="HUMAN", source_id=f"cy {secret}"))
    assert evalkit_command("report", run_id, "--json", "check.json") == 0

    assert files_holding(artifacts, secret) == []
    assert sorted(files_holding(project, secret)) == [str(project / p) for p in (
        "ds/data/e01.json", "labels.jsonl", "more.jsonl")]  # only what the user wrote
    reports = [p.read_text(encoding="utf-8") for p in project.rglob("report-*.md")]
    for shown in ("pasted", "sent with", "my key is", "typed", "cy"):
        assert any(f"{shown} {IN_A_CELL}" in text for text in reports), shown
