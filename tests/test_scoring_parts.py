"""Scoring's smaller promises: what COMPARED_FIELDS compares, a scorer function's score and
rationale kept on the item, and the scorer params a run logs.

Fast (no MLflow, no model): among the tests ``make mutation`` runs.
"""

from __future__ import annotations

import hashlib
import inspect
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry, EvalConfig, ScoreResult
from evalkit._secrets import Redactor
from evalkit.run._loop import run_calls
from evalkit.run._raw import RawResultsLog
from evalkit.run._scoring import Scorers, compared_part, score_run
from evalkit.scorers import (
    Embedder,
    ExactScorer,
    FunctionScorer,
    LLMJudgeScorer,
    SemanticSimilarityScorer,
)
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


def config(**constants: Any) -> EvalConfig:
    return EvalConfig.from_constants({"EXPERIMENT_NAME": "s/t", "DATASET_PATH": "ds",
                                      "EVAL_MIN_ACCURACY": 0.5, **constants}, "test_eval.py")


def test_for_run_builds_each_types_scorer_and_keeps_compared_fields() -> None:
    scorers = Scorers.for_run(config(
        SCORER_FUNCTIONAL=close_enough, SCORER_SMOKE="semantic_similarity",
        SCORER_REPEATABILITY="semantic_similarity", SEMANTIC_SIMILARITY_SCORE=0.8,
        REPEAT_SEMANTIC_SIMILARITY_SCORE=0.9, COMPARED_FIELDS=["answer"]),
        ["functional", "smoke", "repeatability", "bias"])
    function, smoke, repeats = (scorers.by_type[t] for t in ("functional", "smoke",
                                                              "repeatability"))
    assert isinstance(function, FunctionScorer) and function.function is close_enough
    assert isinstance(smoke, SemanticSimilarityScorer)
    assert isinstance(repeats, SemanticSimilarityScorer)
    assert (smoke.threshold, repeats.threshold) == (0.8, 0.9)
    # One embedding model for every similarity type (loaded on first use: not here).
    assert isinstance(smoke._embedder, Embedder) and smoke._embedder is repeats._embedder
    assert isinstance(scorers.by_type["bias"], ExactScorer)
    assert scorers.compared_fields == ("answer",) and scorers.judge is None


def test_judge_prompts_by_test_type_then_by_use(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never called here
    shipped = resources.files("evalkit") / "prompts" / "expected.yaml"
    ours = {}
    for name in ("expected", "smoke"):
        ours[name] = tmp_path / f"{name}.yaml"
        ours[name].write_bytes(shipped.read_bytes() + f"\n# {name}\n".encode())
    scorers = Scorers.for_run(config(SCORER="llm_judge", JUDGE_MODEL="judge-1", JUDGE_PROMPTS={
        "expected": str(ours["expected"]), "smoke": str(ours["smoke"])}),
        ["functional", "smoke", "repeatability"])
    prompts = scorers.judge_prompts
    # smoke's own prompt wins over its use's; functional takes its use's ("expected");
    # repeatability, named by neither, the one shipped with evalkit.
    assert {t: (p.use, p.source) for t, p in prompts.items()} == {
        "functional": ("expected", str(ours["expected"])),
        "smoke": ("expected", str(ours["smoke"])),
        "repeatability": ("repeatability", "evalkit/prompts/repeatability.yaml")}
    for test_type, prompt in prompts.items():
        scorer = scorers.by_type[test_type]
        assert isinstance(scorer, LLMJudgeScorer) and scorer.prompt is prompt
