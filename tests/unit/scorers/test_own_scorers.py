"""Scorer functions of eval.py, and COMPARED_FIELDS for structured outputs: in-process, tracked
in memory, with the reports rendered back from what the run holds."""

from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from evalkit import ConfigError, RunContext, ScoreResult, Selection, evaluate
from evalkit.reports import render_reports
from evalkit.tracking import Tracker
from tests.support.builders import config_for, entry, write_dataset


def length_within(output: Any, expected: Any) -> ScoreResult:
    gap = abs(len(output) - len(expected))
    return ScoreResult(gap <= 2, score=gap, rationale=f"length gap {gap}")


def same_first_word(outputs: list[Any]) -> bool:
    return len({o.split()[0] for o in outputs}) == 1


def raises(output: Any, expected: Any) -> bool:
    raise RuntimeError("scorer bug")


def test_scorer_functions_score_record_and_report(tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {
        "near": entry("functional", expected="abcd"), "far": entry("functional", expected="a"),
        "r-same": entry("repeatability"), "r-diff": entry("repeatability"),
        "b1": entry("bias", bias_group="g"), "b2": entry("bias", bias_group="g")})

    def component(item: Any, call: Any) -> str:
        if item.id == "r-diff":
            return f"word{call.repeat} tail"
        return "abcdef"

    config = config_for(tmp_path, dataset, REPEAT_COUNT=3, SCORER_FUNCTIONAL=length_within,
                        SCORER_REPEATABILITY=same_first_word, SCORER_BIAS=same_first_word)
    outcome = evaluate(config, component, Selection("all"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    functional = outcome.scored.type_result("functional")
    assert functional.scorer == "length_within"
    by_id = {i.id: i for i in functional.items}
    assert (by_id["near"].passed, by_id["near"].score, by_id["near"].rationale) == \
        (True, 2.0, "length gap 2")
    assert (by_id["far"].passed, by_id["far"].score) == (False, 5.0)
    repeats = {i.id: i.passed for i in outcome.scored.type_result("repeatability").items}
    assert repeats == {"r-same": True, "r-diff": False}
    assert [i.passed for i in outcome.scored.type_result("bias").items] == [True]

    params = tracker.reader.stored(outcome.run_id).params
    digest = hashlib.sha256(inspect.getsource(length_within).encode()).hexdigest()
    assert params["functional_scorer_source_sha256"] == digest
    assert params["SCORER_FUNCTIONAL"] == "tests.unit.scorers.test_own_scorers.length_within"
    report = render_reports(tracker.reader.fetch(outcome.run_id))["report-functional.md"]
    assert "| Score | Rationale |" in report
    assert "length gap 5" in report


def test_a_failing_scorer_scores_zero_with_its_reason(tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {"f": entry("functional")})
    config = config_for(tmp_path, dataset, REPEAT_COUNT=3, SCORER=raises)
    outcome = evaluate(config, lambda e, c: "a", Selection("functional"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    (item,) = outcome.scored.type_result("functional").items
    assert not item.passed
    assert item.error == "scorer raises raised RuntimeError: scorer bug"


def test_a_scorer_with_the_wrong_signature_is_refused_before_any_call(
        tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {"r": entry("repeatability")})
    with pytest.raises(ConfigError, match=r"scorer 'length_within' of repeatability must take "
                                          r"\(outputs\)"):
        evaluate(config_for(tmp_path, dataset, REPEAT_COUNT=3, SCORER_REPEATABILITY=length_within),
                 lambda e, c: pytest.fail("called"), Selection("repeatability"),
                 RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert tracker.backend.journals == {}


def test_compared_fields_ignore_a_volatile_field(tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {
        "r": entry("repeatability"), "b1": entry("bias", bias_group="g"),
        "b2": entry("bias", bias_group="g"), "s": entry("repeatability")})

    def component(item: Any, call: Any) -> Any:
        stamp = f"{item.id}-{call.repeat}"
        if item.id == "s":  # a JSON string holding an object counts as an object
            return json.dumps({"category": "billing", "at": stamp})
        return {"category": "billing", "reply": "ok", "request_id": stamp}

    def run(**constants: Any) -> dict[str, bool]:
        config = config_for(tmp_path, dataset, REPEAT_COUNT=3, **constants)
        outcome = evaluate(config, component, Selection("all"),
                           RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
        return {i.id: i.passed for t in outcome.scored.types for i in t.items}

    assert run() == {"r": False, "s": False, "g": False}
    assert run(COMPARED_FIELDS=["category", "reply"]) == {"r": True, "s": True, "g": True}


def test_a_compared_field_no_output_has_fails_its_type_with_the_reason(
        tmp_path: Path, tracker: Tracker, caplog: pytest.LogCaptureFixture) -> None:
    # The scaffold compares "reply"; this component says "answer", a different one each call.
    dataset = write_dataset(tmp_path / "ds", {
        "r": entry("repeatability"), "b1": entry("bias", bias_group="g"),
        "b2": entry("bias", bias_group="g")})

    def component(item: Any, call: Any) -> Any:
        return {"category": "billing", "answer": f"{item.id} take {call.repeat}"}

    config = config_for(tmp_path, dataset, REPEAT_COUNT=3, COMPARED_FIELDS=["category", "reply"])
    outcome = evaluate(config, component, Selection("all"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert not outcome.passed
    assert {m.test_type: m.accuracy for m in outcome.metrics} == {"repeatability": 0.0,
                                                                  "bias": 0.0}
    reason = ("COMPARED_FIELDS names 'reply', which none of the 3 repeatability outputs has "
              "(they have: answer, category)")
    (item,) = outcome.scored.type_result("repeatability").items
    assert item.error is not None and item.error.startswith(reason)
    assert "evalkit rescore RUN_ID" in item.error
    (group,) = outcome.scored.type_result("bias").items
    assert group.error is not None and "none of the 2 bias outputs has" in group.error
    assert reason in caplog.text
    report = render_reports(tracker.reader.fetch(outcome.run_id))["report-repeatability.md"]
    assert f"Error in r: {item.error}" in report.replace("\\_", "_")
    # A field that one output has is compared as usual, missing elsewhere or not.
    config = config_for(tmp_path, dataset, REPEAT_COUNT=3, COMPARED_FIELDS=["category"])
    outcome = evaluate(config, component, Selection("all"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert outcome.passed and all(i.error is None for t in outcome.scored.types
                                  for i in t.items)


@pytest.mark.parametrize("value", ["category", [], [""], [1]])
def test_compared_fields_must_be_a_list_of_names(tmp_path: Path, value: Any) -> None:
    with pytest.raises(ConfigError, match="COMPARED_FIELDS=.* must be a non-empty list"):
        config_for(tmp_path, Path("ds"), COMPARED_FIELDS=value)
