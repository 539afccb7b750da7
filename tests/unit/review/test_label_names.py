"""People's labels apart from the scorer's verdicts, and the run in MLflow up to date with them.

A label is HUMAN feedback named ``<type>_label``, so that MLflow's traces table and compare
view never count it with the verdict named ``<type>``; labels given after a run (``evalkit
label``, ``--from``, the MLflow UI read by ``evalkit report``) reach the run's ``summary.md``
artifact and description. In memory, as the fast tests do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalkit import ConfigError, RunContext, Selection, evaluate
from evalkit.evaluation import EvaluationOutcome
from evalkit.records import TypeNames, names
from evalkit.review import LabelSession, feedback_taken_in, import_labels
from evalkit.tracking import Assessment, Tracker
from evalkit.tracking._memory import MemoryBackend
from evalkit.tracking._traces import TraceContext, trace_id_for
from tests.support.builders import RecordingComponent, config_for, entry, write_dataset

ENTRIES = {f"e{i:02d}": entry("functional") for i in range(24)}
WRONG = [f"e{i:02d}" for i in range(6)]
"""Entries a person fails although the scorer (exact match) passes them."""


def run_of(tmp_path: Path, tracker: Tracker, entries: dict[str, Any] | None = None,
           types: str = "functional", **constants: object) -> EvaluationOutcome:
    dataset = write_dataset(tmp_path / "ds", entries or ENTRIES)
    return evaluate(config_for(tmp_path, dataset, **constants), RecordingComponent(),
                    Selection.parse(types, None, False),
                    RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs"))


def labels_file(tmp_path: Path, entry_ids: list[str]) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps({
        "entry_id": e, "type": "functional", "verdict": "fail" if e in WRONG else "pass",
        "reviewer": "ann"}) + "\n" for e in entry_ids), encoding="utf-8")
    return path


def feedback_on(tracker: Tracker, run_id: str) -> dict[str, list[Assessment]]:
    """Entry id -> every assessment on its trace."""
    assert isinstance(tracker.backend, MemoryBackend)
    traces = tracker.backend.traces
    return {t.entry_id: list(traces.assessments[t.trace_id])
            for t in traces.traces[run_id].values()}


def summary_of(tracker: Tracker, run_id: str) -> str:
    return tracker.reader.read_text(run_id, names.report_artifact(names.SUMMARY_REPORT))


def give_in_the_ui(tracker: Tracker, run_id: str, entry_id: str, name: str,
                   passed: bool) -> None:
    """Feedback a person adds on an entry's trace in the MLflow UI."""
    tracker.backend.trace_store().add_assessments(TraceContext(run_id, "1", 0, {}, {}), [(
        trace_id_for(run_id, entry_id), Assessment(name, passed, None, "HUMAN", "User"))])


def test_a_label_is_named_apart_from_the_verdict_and_the_draw_asks_for_that_name(
        tmp_path: Path, tracker: Tracker) -> None:
    outcome = run_of(tmp_path, tracker, LABELS_PATH=str(labels_file(tmp_path, list(ENTRIES))),
                     LABEL_SAMPLE=20)
    held = feedback_on(tracker, outcome.run_id)
    by_source = {(a.name, a.source_type) for found in held.values() for a in found}
    assert TypeNames.of("functional").label == "functional_label"
    assert ("functional", "CODE") in by_source and ("functional_label", "HUMAN") in by_source
    assert ("functional", "HUMAN") not in by_source  # a verdict's name holds verdicts only
    wanted = [a for found in held.values() for a in found
              if a.name == names.LABEL_WANTED_ASSESSMENT]
    assert len(wanted) == 20 and {a.value for a in wanted} == {"functional_label"}
    assert "Add feedback named 'functional_label' (not 'functional'" in str(wanted[0].rationale)
    record = tracker.reader.fetch(outcome.run_id)
    assert len(record.labels) == 24 and {x.test_type for x in record.labels} == {"functional"}


def test_labels_of_a_run_labelled_before_they_had_their_own_name_still_count(
        tmp_path: Path, tracker: Tracker) -> None:
    """HUMAN feedback named for the type itself, as evalkit wrote labels before: a label."""
    outcome = run_of(tmp_path, tracker)
    give_in_the_ui(tracker, outcome.run_id, "e00", "functional", False)  # the old form
    give_in_the_ui(tracker, outcome.run_id, "e01", "functional_label", True)
    give_in_the_ui(tracker, outcome.run_id, "e02", "functional_stability", True)  # no label
    labels = tracker.reader.fetch(outcome.run_id).labels
    assert sorted((x.entry_id, x.test_type, x.passed) for x in labels) == [
        ("e00", "functional", False), ("e01", "functional", True)]


def test_labels_from_a_file_reach_the_runs_summary_and_description(
        tmp_path: Path, tracker: Tracker) -> None:
    outcome = run_of(tmp_path, tracker, EVAL_MIN_ACCURACY=0.9)
    before = summary_of(tracker, outcome.run_id)
    assert "Corrected by labels" not in before and "**PASS**" in before
    LabelSession(tracker, outcome.run_id, "functional", sample=24, seed=1)  # all drawn
    given, after = import_labels(tracker, outcome.run_id,
                                 labels_file(tmp_path, list(ENTRIES)), "carl")

    assert given == 24 and after.verdict == "FAIL"  # 6 of 24 wrong: corrected 0.750
    summary = summary_of(tracker, outcome.run_id)
    assert "| 0.750 [" in summary and "(24 labels)" in summary and "**FAIL**" in summary
    stored = tracker.reader.stored(outcome.run_id)
    description = stored.tags[names.DESCRIPTION_TAG]
    assert "corrected by 24 labels 0.750 [" in description
    assert "**evalkit verdict: FAIL**" in description
    judge = tracker.reader.read_text(outcome.run_id, names.report_artifact(names.JUDGE_REPORT))
    assert "| corrected (stratified PPI) | 0.750 |" in judge
    record = tracker.reader.fetch(outcome.run_id)
    assert stored.tags[names.FEEDBACK_DIGEST_TAG] == record.feedback_digest != ""
    assert feedback_taken_in(tracker, record) is None  # up to date: nothing written again


def test_labels_given_in_the_ui_reach_the_run_when_evalkit_report_reads_them(
        tmp_path: Path, tracker: Tracker) -> None:
    outcome = run_of(tmp_path, tracker)
    LabelSession(tracker, outcome.run_id, "functional", sample=24, seed=1)  # all drawn
    record = tracker.reader.fetch(outcome.run_id)
    assert names.FEEDBACK_DIGEST_TAG not in record.tags
    assert feedback_taken_in(tracker, record) is None  # no feedback: the run is as it was
    for e in ENTRIES:
        give_in_the_ui(tracker, outcome.run_id, e, "functional_label", e not in WRONG)

    taken = feedback_taken_in(tracker, tracker.reader.fetch(outcome.run_id))
    assert taken is not None and taken.verdict == "PASS"  # thresholds of 0.5
    check = taken.checks["functional"].corrected
    assert check is not None and check.estimate == 0.75
    assert "(24 labels)" in summary_of(tracker, outcome.run_id)
    stored = tracker.reader.stored(outcome.run_id)
    assert "corrected by 24 labels 0.750" in stored.tags[names.DESCRIPTION_TAG]
    assert stored.metrics["functional_accuracy_corrected"] == 0.75
    assert feedback_taken_in(tracker, tracker.reader.fetch(outcome.run_id)) is None


def test_a_run_given_labels_as_it_finishes_is_up_to_date_with_them(
        tmp_path: Path, tracker: Tracker) -> None:
    """LABELS_PATH: the run's own summary.md counts them, and evalkit report has nothing to
    write back; a label on an entry for review is a label, not a reviewer's verdict."""
    entries = {**ENTRIES, "e23": entry("functional", human_review=True,
                                       human_instructions="check tone")}
    outcome = run_of(tmp_path, tracker, entries, "all",
                     LABELS_PATH=str(labels_file(tmp_path, list(ENTRIES))), LABEL_SAMPLE=24)
    assert "(24 labels)" in summary_of(tracker, outcome.run_id)
    record = tracker.reader.fetch(outcome.run_id)
    assert record.reviewer_verdicts == () and len(record.labels) == 24
    assert record.tags[names.FEEDBACK_DIGEST_TAG] == record.feedback_digest
    assert feedback_taken_in(tracker, record) is None


class ReadOnly(MemoryBackend):
    """A store this user may read but not edit (a reader on a tracking server)."""

    editable = True

    def log_batch(self, run_id: str, **logged: Any) -> None:
        if not self.editable:
            raise PermissionError("PERMISSION_DENIED")
        super().log_batch(run_id, **logged)

    def log_artifact(self, run_id: str, path: str, content: bytes | Path) -> None:
        if not self.editable:
            raise PermissionError("PERMISSION_DENIED")
        super().log_artifact(run_id, path, content)

    def refusal(self, err: BaseException, experiment: str | None,
                permission: str) -> ConfigError | None:
        if isinstance(err, PermissionError):
            return ConfigError(f"user reader lacks {permission} permission (HTTP 403)")
        return None


def test_a_reader_who_may_not_edit_the_run_is_told_so_and_the_run_is_left_as_it_was(
        tmp_path: Path) -> None:
    backend = ReadOnly()
    tracker = Tracker(backend=backend, bundles_dir=tmp_path / "bundles")
    outcome = run_of(tmp_path, tracker)
    give_in_the_ui(tracker, outcome.run_id, "e00", "functional_label", False)
    backend.editable = False
    before = summary_of(tracker, outcome.run_id)
    with pytest.raises(ConfigError, match="lacks EDIT permission"):
        feedback_taken_in(tracker, tracker.reader.fetch(outcome.run_id))
    assert summary_of(tracker, outcome.run_id) == before
    assert names.FEEDBACK_DIGEST_TAG not in tracker.reader.stored(outcome.run_id).tags
