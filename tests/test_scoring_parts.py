"""Scoring's smaller promises: what COMPARED_FIELDS compares, a scorer function's score and
rationale kept on the item, and the scorer params a run logs.

Fast (no MLflow, no model): among the tests ``make mutation`` runs.
"""

from __future__ import annotations

import hashlib
import inspect
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry, ScoreResult
from evalkit._secrets import Redactor
from evalkit.run._loop import run_calls
from evalkit.run._raw import RawResultsLog
from evalkit.run._scoring import Scorers, compared_part, score_run
from evalkit.scorers import ExactScorer, FunctionScorer
from tests.conftest import entry, plan_of


@pytest.mark.parametrize(("output", "fields", "part"), [
    ({"answer": "a", "id": 1}, None, {"answer": "a", "id": 1}),  # no fields: the whole output
    ({"answer": "a", "id": 1}, ("answer",), {"answer": "a"}),
    ({"id": 1}, ("answer", "id"), {"answer": None, "id": 1}),  # a missing field is None
    ('{"answer": "a", "id": 1}', ("answer",), {"answer": "a"}),  # JSON text of an object
    ("not json", ("answer",), "not json"),  # anything else is compared whole
    ("[1, 2]", ("answer",), "[1, 2]"),
    ([1, 2], ("answer",), [1, 2]),
    (None, ("answer",), None),
])
def test_compared_part(output: Any, fields: tuple[str, ...] | None, part: Any) -> None:
    assert compared_part(output, fields) == part


def close_enough(output: Any, expected: Any) -> ScoreResult:
    return ScoreResult(output == expected, 0.75, f"{output} against {expected}")


def test_scorer_params_name_each_type_and_a_functions_source() -> None:
    scorers = Scorers({"functional": FunctionScorer(close_enough), "smoke": ExactScorer()})
    digest = hashlib.sha256(inspect.getsource(close_enough).encode("utf-8")).hexdigest()
    assert scorers.scorer_params() == {
        "functional_scorer": "close_enough", "functional_scorer_source_sha256": digest,
        "smoke_scorer": "exact"}


ENTRIES = {
    "f": entry("functional", input="q", expected="yes"),
    "steady": entry("repeatability", input="r"),
    "b1": entry("bias", bias_group="g", input="as she"),
    "b2": entry("bias", bias_group="g", input="as he"),
}


def answer(item: Entry, call: Call) -> Any:
    if item.id == "f":
        return "yes"
    # The same answer each time, with a field that differs on every call.
    return {"answer": "same", "call": f"{item.id}-{call.repeat}"}


def scored(tmp_path: Path, compared_fields: tuple[str, ...] | None) -> Any:
    plan = plan_of(tmp_path / str(compared_fields), ENTRIES, repeats=3)
    with RawResultsLog(tmp_path / f"raw-{compared_fields}.jsonl") as log:
        outputs = run_calls(plan, answer, {}, log, Redactor(), concurrency=2)
    scorers = Scorers({"functional": FunctionScorer(close_enough),
                       "repeatability": ExactScorer(), "bias": ExactScorer()},
                      compared_fields=compared_fields)
    return score_run(outputs, plan.types, scorers)


def test_compared_fields_decide_repeatability_and_bias(tmp_path: Path) -> None:
    by_fields = scored(tmp_path, ("answer",))
    whole = scored(tmp_path, None)
    for test_type in ("repeatability", "bias"):
        (with_fields,) = by_fields.type_result(test_type).items
        (compared_whole,) = whole.type_result(test_type).items
        assert with_fields.passed and not compared_whole.passed
        # What is kept is the whole output, whichever part was compared.
        assert with_fields.outputs == compared_whole.outputs
        assert all(o["answer"] == "same" for o in with_fields.outputs)


def test_a_scorer_functions_score_and_rationale_are_kept(tmp_path: Path) -> None:
    (item,) = scored(tmp_path, None).type_result("functional").items
    assert item.passed and item.error is None
    assert (item.score, item.rationale) == (0.75, "yes against yes")
