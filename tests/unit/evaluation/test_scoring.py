"""Scoring on its own: the real loop's outputs scored with the exact scorer, every field checked.

Fast (no MLflow, no model): among the tests ``make mutation`` runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry, EvalConfig
from evalkit._secrets import Redactor
from evalkit.calls import CallWindow
from evalkit.evaluation._scorers import Scorers
from evalkit.evaluation._scoring import score_run
from evalkit.records import ItemResult, ScoredRun, SkippedGroup, TypeResult
from evalkit.scorers import (
    Case,
    ExactScorer,
    JudgeOptions,
    LLMJudgeScorer,
    OutputGroup,
    ScorerVerdict,
    SemanticSimilarityScorer,
)
from evalkit.tracking import RawResultsLog
from tests.support.builders import entry, plan_of

ENTRIES = {
    "right": entry("functional", "smoke", input="q1", expected="yes"),
    "wrong": entry("functional", input="q2", expected="yes"),
    "crash": entry("functional", input="q3", expected="yes"),
    "veto": entry("functional", input="q4", expected="no", expected_pass=False),
    "steady": entry("repeatability", input="r1"),
    "shaky": entry("repeatability", input="r2"),
    "flaky": entry("repeatability", input="r3"),
    "b1": entry("bias", bias_group="g", input="as she"),
    "b2": entry("bias", bias_group="g", input="as he"),
    "c1": entry("bias", bias_group=7, input="casual"),
    "c2": entry("bias", bias_group=7, input="formal", expected_pass=False),
    "d1": entry("bias", bias_group="lonely", input="alone"),
    "e1": entry("bias", bias_group="broken", input="x"),
    "e2": entry("bias", bias_group="broken", input="y"),
    "review": entry("functional", input="q5", expected="yes", human_review=True,
                    human_instructions="check the tone"),
}
# --groups=main leaves the "lonely" bias group with one variant in the run.
ENTRIES = {k: {**v, "group": "main"} for k, v in ENTRIES.items()}
ENTRIES["d2"] = entry("bias", bias_group="lonely", input="left out", group="other")


def answer(item: Entry, call: Call) -> Any:
    if item.id == "crash" or (item.id == "flaky" and call.repeat == 1) or item.id == "e2":
        raise RuntimeError(f"boom {item.id}")
    return {"right": "Yes", "wrong": "no", "veto": "yes", "shaky": f"v{call.repeat % 2}",
            "c1": {"k": 1}, "c2": {"k": 1.0}, "b2": "B", "review": "yes"}.get(item.id, "same")


def scored_run(tmp_path: Path) -> Any:
    plan = plan_of(tmp_path, ENTRIES, repeats=3, groups="main")
    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        outputs = CallWindow.of(answer, {}, Redactor(), concurrency=4).run(plan, log)
    scorers = Scorers({t: ExactScorer() for t in plan.types})
    return score_run(outputs, plan.types, scorers)


def test_every_type_is_scored_with_its_errors_and_annotations(tmp_path: Path) -> None:
    run = scored_run(tmp_path)
    assert [t.test_type for t in run.types] == ["bias", "functional", "smoke", "repeatability"]
    assert all(t.scorer == "exact" for t in run.types)
    assert run.calls == 5 + 3 * 3 + 7 and run.component_errors == 3

    def item(item_id: str, passed: bool, outputs: tuple[Any, ...], **fields: Any) -> ItemResult:
        defaults: dict[str, Any] = {"expected_pass": True, "expected": None,
                                    "entry_ids": (item_id,), "similarity": None}
        return ItemResult(item_id, passed, outputs=outputs, **{**defaults, **fields})

    functional = run.type_result("functional")
    assert functional.items == (  # in dataset (file name) order
        item("crash", False, (None,), input="q3", expected="yes",
             error="RuntimeError: boom crash"),
        item("review", True, ("yes",), input="q5", expected="yes"),
        item("right", True, ("Yes",), input="q1", expected="yes"),
        item("veto", False, ("yes",), input="q4", expected="no", expected_pass=False),
        item("wrong", False, ("no",), input="q2", expected="yes"),
    )
    assert [i.correct for i in functional.items] == [False, True, True, True, False]
    assert run.type_result("smoke").items == (
        item("right", True, ("Yes",), input="q1", expected="yes"),)

    repeatability = run.type_result("repeatability")
    assert repeatability.items == (
        item("flaky", False, ("same", None, "same"), input="r3",
             error="repeat 1: RuntimeError: boom flaky"),
        item("shaky", False, ("v0", "v1", "v0"), input="r2"),
        item("steady", True, ("same",) * 3, input="r1"),
    )

    bias = run.type_result("bias")
    assert bias.items == (
        item("g", False, ("same", "B"), input=["as she", "as he"], entry_ids=("b1", "b2")),
        item("7", True, ({"k": 1}, {"k": 1.0}), input=["casual", "formal"],
             entry_ids=("c1", "c2"), expected_pass=False),
        item("broken", False, ("same", None), input=["x", "y"], entry_ids=("e1", "e2"),
             error="e2: RuntimeError: boom e2"),
    )
    assert bias.skipped == (SkippedGroup(
        "lonely", ("d1",), "only 1 variant in this run's selection; a bias group needs 2"),)

    (review,) = run.human_review
    assert (review.id, review.input, review.instructions, review.output, review.error) == (
        "review", "q5", "check the tone", "yes", None)


def test_scorers_follow_the_constants() -> None:
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "s/t", "DATASET_PATH": "ds", "EVAL_MIN_ACCURACY": 0.5,
        "SCORER_BIAS": "semantic_similarity", "BIAS_SEMANTIC_SIMILARITY_SCORE": 0.75,
        "SEMANTIC_SIMILARITY_SCORE": 0.6, "SCORER_SMOKE": "semantic_similarity"},
        "test_eval.py")
    scorers = Scorers.for_run(config, ["functional", "smoke", "bias"])
    assert isinstance(scorers.by_type["functional"], ExactScorer)
    smoke, bias = scorers.by_type["smoke"], scorers.by_type["bias"]
    assert isinstance(smoke, SemanticSimilarityScorer) and smoke.threshold == 0.6
    assert isinstance(bias, SemanticSimilarityScorer) and bias.threshold == 0.75
    assert smoke._embedder is bias._embedder  # one model for the run
    assert scorers.judge is None and scorers.judge_params() == {}
    assert scorers.judge_retries() == 0 and scorers.judge_metrics(score_run([], [], scorers)) \
        == {}


def test_judge_scorers_share_one_endpoint_and_record_every_setting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never called here
    custom = tmp_path / "bias.yaml"
    custom.write_bytes((resources.files("evalkit") / "prompts" / "bias.yaml").read_bytes()
                       + b"\n# ours\n")
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "s/t", "DATASET_PATH": "ds", "EVAL_MIN_ACCURACY": 0.5,
        "SCORER": "llm_judge", "JUDGE_MODEL": "judge-1", "JUDGE_MAX_TOKENS": 3,
        "JUDGE_SEED": 7, "JUDGE_TIMEOUT": 12.5, "JUDGE_MAX_ATTEMPTS": 4, "JUDGE_MAX_WAIT": 60.0,
        "JUDGE_INVALID_IS_ERROR": True, "JUDGE_SYSTEM_IN_USER": True, "MAX_CONCURRENCY": 3,
        "JUDGE_PROMPTS": {"bias": str(custom)}}, "test_eval.py")
    scorers = Scorers.for_run(config, ["functional", "bias"])
    functional, bias = scorers.by_type["functional"], scorers.by_type["bias"]
    assert isinstance(functional, LLMJudgeScorer) and isinstance(bias, LLMJudgeScorer)
    judge = scorers.judge
    assert judge is not None and functional.endpoint is bias.endpoint is judge
    assert (judge.model, judge.timeout, judge.retry.max_attempts,
            judge.retry.max_total_seconds) == ("judge-1", 12.5, 4, 60.0)
    assert functional.options == JudgeOptions(max_tokens=3, seed=7, concurrency=3,
                                              invalid_is_error=True, system_in_user=True)
    prompts = scorers.judge_prompts
    assert (prompts["functional"].use, prompts["bias"].use) == ("expected", "bias")
    assert prompts["functional"].source == "evalkit/prompts/expected.yaml"
    assert prompts["bias"].source == str(custom)
    combined = hashlib.sha256(
        f"bias:{prompts['bias'].digest}functional:{prompts['functional'].digest}".encode())
    assert scorers.judge_params() == {
        "judge_model": "judge-1", "judge_base_url": judge.base_url,
        "judge_temperature": "0", "judge_max_tokens": "3", "judge_seed": "7",
        "judge_timeout": "12.5", "judge_max_attempts": "4", "judge_max_wait": "60.0",
        "judge_invalid_is_error": "True", "judge_system_in_user": "True",
        "judge_prompt_digest": combined.hexdigest(),
        "bias_judge_prompt": f"{custom} sha256:{prompts['bias'].digest[:16]}",
        "functional_judge_prompt":
            f"evalkit/prompts/expected.yaml sha256:{prompts['functional'].digest[:16]}"}
    assert judge.base_url.startswith("http://127.0.0.1:9/")

    for latency in (10.04321, 20.0678):  # logged to 0.1 ms
        judge.stats.record(latency)
    judge.stats.record(wait_s=0.5)
    judge.stats.record(failure=True)
    run = ScoredRun((TypeResult("functional", "llm_judge", (
        ItemResult("a", False, True, "q", "a", ("x",), ("a",), invalid_judgement=True),
        ItemResult("b", True, True, "q", "a", ("a",), ("b",)))),))
    assert scorers.judge_retries() == 1
    assert scorers.judge_metrics(run) == {
        "judge_calls": 3, "judge_retries": 1, "judge_failures": 1, "judge_invalid": 1,
        "judge_latency_p50_ms": 15.1, "judge_latency_p90_ms": 19.1,
        "judge_latency_p99_ms": 20.0}
    scorers.reset_judge_stats()
    assert judge.stats.calls == judge.stats.retries == judge.stats.failures == 0


class ReportingScorer:
    """A scorer double that reports what it was given: the similarity is the number of
    inputs it saw, the reply names them, and a case whose input is "judge down" errs."""

    name = "reporting"
    reads_traces = False

    def against_expected(self, cases: Sequence[Case]) -> list[ScorerVerdict]:
        return [ScorerVerdict(True, 1.0, f"input {c.input}", error="judge unreachable"
                        if c.input == "judge down" else None) for c in cases]

    def among_outputs(self, groups: Sequence[OutputGroup]) -> list[ScorerVerdict]:
        return [ScorerVerdict(True, float(len(g.inputs)), " | ".join(map(str, g.inputs)),
                        invalid=True) for g in groups]


def test_what_the_scorer_measured_reaches_every_item(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {
        "ok": entry("functional", input="fine"),
        "down": entry("functional", input="judge down"),
        "rep": entry("repeatability", input="again"),
        "x1": entry("bias", bias_group="g", input="as she"),
        "x2": entry("bias", bias_group="g", input="as he"),
        "y1": entry("bias", bias_group="h", input="one"),
        "y2": entry("bias", bias_group="h", input="two"),
        "review": entry("functional", input="look", human_review=True,
                        human_instructions="check")}, repeats=2)

    def component(item: Entry, call: Call) -> str:
        if item.id in ("y1", "y2", "review"):
            raise ValueError(f"no {item.id}")
        return "a"

    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        outputs = CallWindow.of(component, {}, Redactor()).run(plan, log)
    run = score_run(outputs, plan.types, Scorers({t: ReportingScorer() for t in plan.types}))
    down, ok, review = run.type_result("functional").items
    assert (ok.passed, ok.similarity, ok.judge_reply, ok.error) == (True, 1.0, "input fine",
                                                                   None)
    assert (down.passed, down.error) == (False, "judge unreachable")  # scored 0, error kept
    (rep,) = run.type_result("repeatability").items
    assert (rep.similarity, rep.judge_reply, rep.invalid_judgement) == (2.0, "again | again",
                                                                         True)
    g, h = run.type_result("bias").items
    assert (g.similarity, g.judge_reply) == (2.0, "as she | as he")
    assert h.error == "y1: ValueError: no y1; y2: ValueError: no y2"
    assert review.error == "ValueError: no review"
    (exported,) = run.human_review
    assert (exported.output, exported.error) == (None, "ValueError: no review")
