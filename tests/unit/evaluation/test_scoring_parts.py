"""Scoring's smaller promises: what COMPARED_FIELDS compares, a scorer function's score and
rationale kept on the item, and the scorer params a run logs.

Fast (no MLflow, no model): among the tests ``make mutation`` runs.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry, EvalConfig, ScoreResult
from evalkit._secrets import Redactor
from evalkit.calls import CallWindow
from evalkit.evaluation._compared import absent_fields_problem, compared_part
from evalkit.evaluation._scorers import Scorers
from evalkit.evaluation._scoring import score_run
from evalkit.records import CallRecord, ItemResult, Threshold, TypeResult
from evalkit.scorers import (
    Case,
    Embedder,
    ExactScorer,
    FunctionScorer,
    LLMJudgeScorer,
    OutputGroup,
    ScorerVerdict,
    SemanticSimilarityScorer,
)
from evalkit.stats import TypeMetrics
from evalkit.tracking import RawResultsLog
from tests.support.builders import entry, plan_of


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
        outputs = CallWindow.of(answer, {}, Redactor(), concurrency=2).run(plan, log)
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


def test_a_compared_field_absent_from_every_output_leaves_the_type_unscored(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    results = scored(tmp_path, ("answer", "reply", "id"))
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    for test_type, outputs in (("repeatability", 3), ("bias", 2)):
        (item,) = results.type_result(test_type).items
        assert not item.passed and item.similarity is None
        assert item.error is not None and item.error.startswith(
            f"COMPARED_FIELDS names 'reply', 'id', which none of the {outputs} {test_type} "
            "outputs has (they have: answer, call)")
        # Said in the terminal too, under the type's name, with the same words.
        assert f"{test_type}: {item.error}" in logged
    # The functional type compares no fields: scored as ever.
    assert [i.passed for i in results.type_result("functional").items] == [True]


@pytest.mark.parametrize("expected_pass", [True, False])
def test_an_item_that_could_not_be_scored_agrees_with_no_annotation(expected_pass: bool) -> None:
    """Its failure is no evidence of the failure an ``expected_pass: false`` entry expects:
    unscored (a failed call, compared fields no output has), it counts against accuracy."""
    def item(error: str | None) -> ItemResult:
        return ItemResult("x", passed=False, expected_pass=expected_pass, input="q",
                          expected=None, outputs=("a",), entry_ids=("x",), error=error)

    unscored = item("COMPARED_FIELDS names 'reply', which none ...")
    assert not unscored.correct and unscored.counted_pass is (not expected_pass)
    assert item(None).correct is (not expected_pass)
    metrics = TypeMetrics.from_result(TypeResult("bias", "exact", (unscored, item(None))),
                                      Threshold(0.5))
    assert (metrics.correct, metrics.samples, metrics.errors) == (int(not expected_pass), 2, 1)


@pytest.mark.parametrize(("outputs", "fields", "absent"), [
    ([{"a": 1}, {"b": 2}], ("a", "b"), False),  # each field in some output is enough
    (['{"a": 1}', "text"], ("b",), True),  # a JSON object counts, text does not
    (["text", [1]], ("b",), False),  # no object: compared whole, nothing is hidden
    ([], ("b",), False),
    ([{"a": 1}], None, False),
])
def test_absent_fields_problem(outputs: list[Any], fields: tuple[str, ...] | None,
                               absent: bool) -> None:
    assert (absent_fields_problem("bias", outputs, fields) is not None) is absent


class OneShort:
    """A scorer that answers one verdict fewer than it is asked for."""

    name = "one-short"
    reads_traces = False

    def against_expected(self, cases: Sequence[Case]) -> list[ScorerVerdict]:
        return [ScorerVerdict(True) for _ in cases][1:]

    def among_outputs(self, groups: Sequence[OutputGroup]) -> list[ScorerVerdict]:
        return [ScorerVerdict(True) for _ in groups][1:]


@pytest.mark.parametrize("test_type", ["functional", "repeatability", "bias"])
def test_a_scorer_that_answers_fewer_verdicts_than_asked_is_an_error(
        tmp_path: Path, test_type: str) -> None:
    # never a silently unscored item: each verdict is matched to its item by position
    plan = plan_of(tmp_path, ENTRIES, repeats=3)
    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        outputs = CallWindow.of(answer, {}, Redactor(), concurrency=2).run(plan, log)
    scorers = Scorers({t: OneShort() if t == test_type else ExactScorer() for t in plan.types})
    with pytest.raises(ValueError, match="shorter"):
        score_run(outputs, plan.types, scorers)


def test_traces_are_made_only_for_the_scorers_that_read_them(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, ENTRIES, repeats=3)
    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        outputs = CallWindow.of(answer, {}, Redactor(), concurrency=2).run(plan, log)
    asked: list[tuple[str, int]] = []

    def traces(entry_id: str, call: CallRecord) -> str:
        asked.append((entry_id, call.repeat))
        return f"trace of {entry_id} {call.repeat}"

    def repeats_traced(outputs: list[Any], traces: list[str]) -> bool:
        return traces == ["trace of steady 0", "trace of steady 1", "trace of steady 2"]

    exact = Scorers({t: ExactScorer() for t in plan.types})
    score_run(outputs, plan.types, exact, traces=traces)
    assert asked == []
    reading = Scorers({**exact.by_type, "repeatability": FunctionScorer(repeats_traced)})
    run = score_run(outputs, plan.types, reading, traces=traces)
    assert asked == [("steady", 0), ("steady", 1), ("steady", 2)]
    assert [i.passed for i in run.type_result("repeatability").items] == [True]


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


def test_early_judging_gives_each_judged_entry_its_verdicts_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalkit.calls import EntryOutputs, Selection, plan_run
    from evalkit.dataset import load_dataset
    from evalkit.evaluation._scoring import EarlyJudging
    from evalkit.records import CallRecord
    from tests.support.builders import write_dataset
    from tests.support.openai_stub import OpenAIStub, RecordedRequest, ok

    def reply(request: RecordedRequest) -> Any:  # "1" unless the judged text says "wrong"
        return ok("0" if "wrong" in str((request.body or {}).get("messages")) else "1")

    entries = {"f-ok": entry("functional"), "f-wrong": entry("functional"),
               "f-error": entry("functional"), "r-ok": entry("repeatability"),
               "r-error": entry("repeatability"), "b1": entry("bias", bias_group="g"),
               "b2": entry("bias", bias_group="g"), "s": entry("smoke"),
               "sf": entry("safety", "functional")}
    with OpenAIStub(reply) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        config = EvalConfig.from_constants({
            "EXPERIMENT_NAME": "early/unit", "DATASET_PATH": str(write_dataset(
                tmp_path / "ds", entries)), "EVAL_MIN_ACCURACY": 0.5, "REPEAT_COUNT": 2,
            "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5, "SCORER": "llm_judge",
            "SCORER_SMOKE": "exact", "SCORER_SAFETY": "exact", "JUDGE_MODEL": "judge",
            "COMPARED_FIELDS": ["answer"]}, "test_eval.py")
        plan = plan_run(load_dataset(config.dataset_path), Selection("all"), config)
        scorers = Scorers.for_run(config, plan.types)
        judging = EarlyJudging(scorers)

        def outputs(planned: Any) -> EntryOutputs:
            broken = planned.entry.id.endswith("error")
            fails = [broken and r == planned.calls - 1 for r in range(planned.calls)]
            return EntryOutputs(planned, tuple(
                CallRecord(planned.entry.id, r, None if fails[r] else
                           {"answer": planned.entry.id, "volatile_stamp": r},
                           "Boom: x" if fails[r] else None, 1.0)
                for r in range(planned.calls)))

        every = [outputs(p) for p in plan.items]
        jobs = {o.entry.id: judging.follow_ups(o) for o in every}
        # "sf": safety (by exact) comes first in the canonical order, then functional, judged.
        assert {k: len(v) for k, v in jobs.items() if v} == {
            "f-ok": 1, "f-wrong": 1, "r-ok": 1, "sf": 1}
        for job in (j for v in jobs.values() for j in v):
            job()
        assert {k: v.passed for k, v in judging.verdicts.items()} == {
            ("functional", "f-ok"): True, ("functional", "f-wrong"): False,
            ("repeatability", "r-ok"): True, ("functional", "sf"): True}
        # The repeats are judged on COMPARED_FIELDS only: the volatile field never reaches it.
        assert not any("volatile_stamp" in str(r.body) and "r-ok" in str(r.body)
                       for r in stub.chat_requests())
        asked = len(stub.chat_requests())
        scored = score_run(every, plan.types, scorers, judging.verdicts)
        # Scoring asks only what was not given early: the bias group, once.
        assert len(stub.chat_requests()) == asked + 1
    passed = {(t.test_type, i.id): i.passed for t in scored.types for i in t.items}
    assert passed[("functional", "f-ok")] and not passed[("functional", "f-wrong")]
    assert passed[("repeatability", "r-ok")] and not passed[("repeatability", "r-error")]
