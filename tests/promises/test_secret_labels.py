"""A secret in any text a person or a component supplies never reaches the store, an artifact
or a report: label comments and reviewer names (``LABELS_PATH``, ``evalkit label --from``,
``--reviewer``), a component's output and a dataset entry's text, with ``OPENAI_API_KEY``
set. The labels are redacted where they enter evalkit (the label file as it is read, the
reviewer as it is named, the feedback typed in the MLflow UI as it is read back), so every path
downstream is covered once.

These tests read a label file and run a labelled evaluation in memory; test_secret_labels_store.py
(slow) greps
every byte of a real local store (the sqlite file and the artifact folder) after a real run,
an import, a reviewer's feedback typed into the MLflow UI and ``evalkit report``.
"""

from __future__ import annotations

import json
from pathlib import Path

from evalkit import RunContext, Selection, evaluate
from evalkit.cli._label import reviewer_name
from evalkit.dataset import read_label_file
from evalkit.records import HumanLabel
from evalkit.reports import render_reports
from evalkit.review import import_labels
from evalkit.tracking import Tracker
from tests.support.builders import RecordingComponent, config_for, entry, write_dataset

REDACTED = "[REDACTED:OPENAI_API_KEY]"
IN_A_CELL = r"\[REDACTED:OPENAI\_API\_KEY\]"
"""The same in a report's table cell, its markdown escaped."""
ENTRIES = {**{f"e{i:02d}": entry("functional") for i in range(11)},
           "hr": entry("functional", human_review=True, human_instructions="check the key")}


def label_rows(secret: str, reviewer: bool = True) -> str:
    """A JSONL label on every entry, its comment (and reviewer) quoting the key."""
    return "".join(json.dumps({
        "entry_id": e, "type": "functional", "verdict": "fail" if e == "e00" else "pass",
        **({"reviewer": f"ann {secret}"} if reviewer else {}),
        "comment": f"the reply pasted {secret} in clear"}) + "\n" for e in ENTRIES)


def test_a_label_file_is_read_with_its_reviewers_and_comments_redacted(
        tmp_path: Path, secret: str) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("entry_id,type,verdict,reviewer,comment\n"
                    f"e1,functional,pass,bob {secret},\"quoted {secret}, twice {secret}\"\n"
                    "e2,functional,fail,,\n", encoding="utf-8")
    assert read_label_file(path, {"functional": ["e1", "e2"]}, f"me-{secret}") == (
        HumanLabel("e1", "functional", True, f"bob {REDACTED}", 0,
                   f"quoted {REDACTED}, twice {REDACTED}"),
        HumanLabel("e2", "functional", False, f"me-{REDACTED}", 0, None))


def test_the_reviewer_named_on_the_command_line_is_redacted(secret: str) -> None:
    assert reviewer_name(f"tess {secret}") == f"tess {REDACTED}"
    assert reviewer_name("tess") == "tess"


def test_labels_quoting_the_key_reach_no_report_in_memory(
        tmp_path: Path, tracker: Tracker, secret: str) -> None:
    dataset = write_dataset(tmp_path / "ds", ENTRIES)
    labels = tmp_path / "labels.jsonl"
    labels.write_text(label_rows(secret), encoding="utf-8")
    config = config_for(tmp_path, dataset, LABELS_PATH=str(labels), LABEL_SAMPLE=12)
    outcome = evaluate(config, RecordingComponent(), Selection.parse("functional", None, False),
                       RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs"))
    more = tmp_path / "more.jsonl"
    more.write_text(label_rows(secret, reviewer=False), encoding="utf-8")
    given, _ = import_labels(tracker, outcome.run_id, more, reviewer_name(f"bob {secret}"))
    assert given == len(ENTRIES)
    record = tracker.reader.fetch(outcome.run_id)
    texts = [*render_reports(record).values(),
             *(p.read_text(encoding="utf-8") for p in (tmp_path / "reports").glob("*.md")),
             repr(record.labels), repr(record.reviewer_verdicts)]
    assert [text for text in texts if secret in text] == []
    assert f"ann {REDACTED}" in repr(record.labels) and f"bob {REDACTED}" in repr(record.labels)
    assert any(f"pasted {IN_A_CELL}" in text for text in texts[:-2])  # a report shows it
