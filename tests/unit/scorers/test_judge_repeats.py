"""``JUDGE_REPEATS``: the judge asked k times about the same outputs, over real HTTP against
a stub judge that changes its mind between identical requests: the votes, their strict
majority (a tie fails, an invalid reply votes 0), k sequential calls per unit; k = 1 as before."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from evalkit import (
    Call,
    ChatEndpoint,
    ConfigError,
    Entry,
    EvalConfig,
    RunContext,
    Selection,
    evaluate,
)
from evalkit.records import ItemResult, ScoredRun, TypeResult, names
from evalkit.reports import render_reports
from evalkit.review import LabelSession
from evalkit.scorers import Case, JudgeOptions, JudgePrompt, LLMJudgeScorer, ScorerVerdict
from evalkit.scorers._llm_judge import majority
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset
from tests.support.openai_stub import OpenAIStub, RecordedRequest, Reply, ok, status

PREFLIGHT = "Reply 1."


def user_text(request: RecordedRequest) -> str:
    return str(request.body["messages"][-1]["content"]) if request.body else ""


class ChangingJudge:
    """Answers each unit (found by a marker in the judged text) with its script of replies,
    one per request in arrival order, then ``1``; records each unit's requests and the most
    of its requests in flight at once."""

    def __init__(self, scripts: dict[str, list[Reply]], delay: float = 0.0) -> None:
        self.scripts = {marker: list(replies) for marker, replies in scripts.items()}
        self.delay = delay
        self.requests: dict[str, list[RecordedRequest]] = defaultdict(list)
        self.in_flight: dict[str, int] = defaultdict(int)
        self.peak: dict[str, int] = defaultdict(int)
        self.all_in_flight, self.all_peak, self.lock = 0, 0, threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        text = user_text(request)
        if text == PREFLIGHT:
            return ok("1")
        marker = next((m for m in self.scripts if m in text), "other")
        with self.lock:
            self.requests[marker].append(request)
            self.in_flight[marker], self.all_in_flight = (self.in_flight[marker] + 1,
                                                          self.all_in_flight + 1)
            self.peak[marker] = max(self.peak[marker], self.in_flight[marker])
            self.all_peak = max(self.all_peak, self.all_in_flight)
            script = self.scripts.get(marker, [])
            reply = script.pop(0) if script else ok("1")
        time.sleep(self.delay)
        with self.lock:
            self.in_flight[marker], self.all_in_flight = (self.in_flight[marker] - 1,
                                                          self.all_in_flight - 1)
        return reply

    def calls(self, marker: str) -> int:
        return len(self.requests[marker])


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", key := "sk-repeats-" + uuid.uuid4().hex)
    return key


def constants(dataset: Path | str = "ds", **extra: Any) -> dict[str, Any]:
    return {"EXPERIMENT_NAME": f"repeats/{uuid.uuid4().hex[:10]}", "DATASET_PATH": str(dataset),
            "EVAL_MIN_ACCURACY": 0.0, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0,
            "REPEAT_COUNT": 3, "SCORER": "llm_judge", "JUDGE_MODEL": "stub-judge",
            "JUDGE_TIMEOUT": 2.0, "JUDGE_MAX_ATTEMPTS": 2, "JUDGE_MAX_WAIT": 5, **extra}


def evaluate_with(tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
                  stub: OpenAIStub, entries: dict[str, dict[str, Any]], **extra: Any) -> Any:
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    config = EvalConfig.from_constants(
        constants(write_dataset(tmp_path / "ds", entries), REPORTS_DIR=str(tmp_path / "rep"),
                  **extra), "test_eval.py")

    def echo(item: Entry, call: Call) -> str:
        return f"answer for {item.id}."

    return evaluate(config, echo, Selection("all"),
                    RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs"))


def items_of(outcome: Any) -> dict[str, ItemResult]:
    return {i.id: i for t in outcome.scored.types for i in t.items}


def stored_items(tracker: Tracker, outcome: Any) -> dict[str, dict[str, Any]]:
    doc = json.loads(tracker.reader.read_text(outcome.run_id, names.EVALUATION_ARTIFACT))
    return {i["id"]: i for t in doc["types"] for i in t["items"]}


def test_each_case_is_judged_k_times_and_the_majority_decides(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch, api_key: str) -> None:
    judge = ChangingJudge({"for flip.": [ok("1"), ok("0"), ok("1")],
                           "for drop.": [ok("0"), ok("1"), ok("0")],
                           "for steady.": [ok("1"), ok("1"), ok("1")]})
    with OpenAIStub(judge) as stub:
        outcome = evaluate_with(tmp_path, tracker, monkeypatch, stub, {
            "flip": entry("functional"), "drop": entry("functional"),
            "steady": entry("functional")}, JUDGE_REPEATS=3, JUDGE_SEED=5)
    items = items_of(outcome)
    assert {k: (i.passed, i.judge_votes) for k, i in items.items()} == {
        "flip": (True, (True, False, True)), "drop": (False, (False, True, False)),
        "steady": (True, (True, True, True))}
    assert items["flip"].judge_reply == "1 / 0 / 1"  # every reply, in call order
    assert not any(i.invalid_judgement or i.error for i in items.values())
    for marker in ("for flip.", "for drop.", "for steady."):
        requests = judge.requests[marker]
        assert len(requests) == 3
        assert all(r.body == requests[0].body for r in requests)  # the identical request
        assert (requests[0].body["temperature"], requests[0].body["seed"]) == (0, 5)
    assert stored_items(tracker, outcome)["flip"]["judge_votes"] == [True, False, True]
    data = tracker.reader.stored(outcome.run_id)
    assert data.metrics["judge_calls"] == 9  # every call, not every unit
    assert data.metrics["functional_correct"] == 2
    assert data.params["judge_repeats"] == "3" and data.params["JUDGE_REPEATS"] == "3"
    # the judge's stability: 2 of 3 items changed its mind; on the record's report too
    assert data.metrics["functional_judge_flip_rate"] == pytest.approx(2 / 3)
    report = render_reports(tracker.reader.fetch(outcome.run_id))[names.JUDGE_REPORT]
    assert "| 3 | 2 (66.7%) | 0.2222 |" in report
    # what a person labelling the run sees of the judge: its prompt, never its verdicts
    rubric = LabelSession(tracker, outcome.run_id, None).rubric()
    assert rubric.startswith("Is the output a right answer to the input")
    assert "\nscorer llm_judge; judge prompt evalkit/prompts/expected.yaml" in rubric
    assert "You are a strict evaluator" in rubric


def test_a_tie_fails(tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
                     api_key: str) -> None:
    judge = ChangingJudge({"for tie.": [ok("1"), ok("0")], "for both.": [ok("1"), ok("1")],
                           "for late.": [ok("0"), ok("1")]})
    with OpenAIStub(judge) as stub:
        outcome = evaluate_with(tmp_path, tracker, monkeypatch, stub, {
            "tie": entry("functional"), "both": entry("functional"),
            "late": entry("functional")}, JUDGE_REPEATS=2)
    items = items_of(outcome)
    assert {k: (i.passed, i.judge_votes) for k, i in items.items()} == {
        "tie": (False, (True, False)), "both": (True, (True, True)),
        "late": (False, (False, True))}
    assert items["tie"].error is None  # a tie is a verdict, not an error
    assert judge.calls("for tie.") == judge.calls("for both.") == 2
    assert tracker.reader.stored(outcome.run_id).params["judge_repeats"] == "2"
    # the stability in the run's --json: 2 of 3 items changed the judge's mind
    stability = outcome.checks["functional"].to_json()["judge_stability"]
    assert stability == {"repeats": 2, "items": 3, "flip_rate": 2 / 3,
                         "majority_error": pytest.approx(1 - (2 / 3) ** 2),
                         "failures": 2, "failures_from_judge": 2}


def test_an_invalid_reply_is_a_fail_vote_and_marks_the_item(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch, api_key: str) -> None:
    judge = ChangingJudge({"for outvoted.": [ok("1"), ok("yes"), ok("1")],
                           "for decisive.": [ok("1"), ok("yes"), ok("0")],
                           "for garbage.": [ok("1."), ok(""), ok("maybe")]})
    with OpenAIStub(judge) as stub:
        outcome = evaluate_with(tmp_path, tracker, monkeypatch, stub, {
            "outvoted": entry("functional"), "decisive": entry("functional"),
            "garbage": entry("functional")}, JUDGE_REPEATS=3)
    items = items_of(outcome)
    assert {k: (i.passed, i.invalid_judgement, i.judge_votes) for k, i in items.items()} == {
        "outvoted": (True, True, (True, False, True)),
        "decisive": (False, True, (True, False, False)),
        "garbage": (False, True, (False, False, False))}  # no valid vote: a fail
    assert items["outvoted"].judge_reply == "1 / yes / 1"
    assert all(i.error is None for i in items.values())
    metrics = tracker.reader.stored(outcome.run_id).metrics
    assert metrics["judge_invalid"] == 5  # every invalid reply, not the 3 items
    assert metrics["judge_calls"] == 9


def test_an_invalid_reply_among_votes_can_be_an_error(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch, api_key: str) -> None:
    judge = ChangingJudge({"for outvoted.": [ok("1"), ok("yes"), ok("1")]})
    with OpenAIStub(judge) as stub:
        outcome = evaluate_with(tmp_path, tracker, monkeypatch, stub, {
            "outvoted": entry("functional"), "fine": entry("functional")},
            JUDGE_REPEATS=3, JUDGE_INVALID_IS_ERROR=True)
    items = items_of(outcome)
    assert not items["outvoted"].passed
    assert items["outvoted"].error.startswith("invalid judgement 'yes'")
    assert items["outvoted"].judge_votes == (True, False, True)
    assert items["fine"].passed and items["fine"].error is None


def test_a_failed_judge_call_ends_the_unit_as_an_error(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch, api_key: str) -> None:
    judge = ChangingJudge({"for refused.": [ok("1"), status(400), ok("1")]})
    with OpenAIStub(judge) as stub:
        outcome = evaluate_with(tmp_path, tracker, monkeypatch, stub, {
            "refused": entry("functional"), "fine": entry("functional")}, JUDGE_REPEATS=3)
    items = items_of(outcome)
    refused = items["refused"]
    assert not refused.passed and "judge failed" in refused.error and "permanent" in refused.error
    assert refused.judge_votes == (True,)  # the judgement given before the failure
    assert judge.calls("for refused.") == 2  # no third call after the failure
    assert items["fine"].passed and items["fine"].judge_votes == (True, True, True)
    metrics = tracker.reader.stored(outcome.run_id).metrics
    assert metrics["judge_failures"] == 1 and metrics["judge_calls"] == 5


def test_repeatability_and_bias_groups_are_judged_k_times(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch, api_key: str) -> None:
    judge = ChangingJudge({"for wobbly.": [ok("1"), ok("0"), ok("0")],
                           "for sure.": [ok("1"), ok("1"), ok("1")],
                           "for b1.": [ok("0"), ok("1"), ok("1")]})
    with OpenAIStub(judge) as stub:
        outcome = evaluate_with(tmp_path, tracker, monkeypatch, stub, {
            "wobbly": entry("repeatability"), "sure": entry("repeatability"),
            "b1": entry("bias", bias_group="g", input="from Alice"),
            "b2": entry("bias", bias_group="g", input="from Bob")}, JUDGE_REPEATS=3)
    repeatability = {i.id: i for i in outcome.scored.type_result("repeatability").items}
    (group,) = outcome.scored.type_result("bias").items  # wobbly's repeats are identical:
    assert (repeatability["wobbly"].passed, repeatability["wobbly"].judge_votes) == (
        False, (True, False, False))  # its failure is the judge changing its mind
    assert repeatability["sure"].passed and repeatability["sure"].judge_votes == (True,) * 3
    assert (group.passed, group.judge_votes) == (True, (False, True, True))
    assert [judge.calls(m) for m in ("for wobbly.", "for sure.", "for b1.")] == [3, 3, 3]
    stored = stored_items(tracker, outcome)
    assert stored["wobbly"]["judge_votes"] == [True, False, False]
    assert stored[group.id]["judge_votes"] == [False, True, True]
    assert tracker.reader.stored(outcome.run_id).metrics["judge_calls"] == 9


def test_one_judgement_stores_no_votes_and_no_new_param(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch, api_key: str) -> None:
    judge = ChangingJudge({"for flip.": [ok("0"), ok("1"), ok("1")]})
    with OpenAIStub(judge) as stub:
        outcome = evaluate_with(tmp_path, tracker, monkeypatch, stub, {
            "flip": entry("functional"), "r": entry("repeatability")})
    items = items_of(outcome)
    assert not items["flip"].passed and items["flip"].judge_reply == "0"
    assert all(i.judge_votes is None for i in items.values())
    assert judge.calls("for flip.") == 1
    stored = stored_items(tracker, outcome)
    assert all("judge_votes" not in i for i in stored.values())  # the document as before,
    assert list(stored["flip"]) == [  # with what was sent to the judge and its one call
        "id", "passed", "expected_pass", "input", "expected", "outputs", "entry_ids",
        "similarity", "error", "judge_reply", "invalid_judgement", "score", "rationale",
        "judge_messages", "judge_calls"]
    assert [c["reply"] for c in stored["flip"]["judge_calls"]] == ["0"]
    data = tracker.reader.stored(outcome.run_id)
    assert "judge_repeats" not in data.params and "JUDGE_REPEATS" not in data.params
    assert data.metrics["judge_calls"] == 2


def test_k_calls_of_one_unit_are_sequential_within_the_concurrency(api_key: str) -> None:
    markers = [f"case-{n}-end" for n in range(6)]
    judge = ChangingJudge({m: [ok("1"), ok("0"), ok("1")] for m in markers}, delay=0.05)
    with OpenAIStub(judge) as stub:
        scorer = LLMJudgeScorer(ChatEndpoint("judge", base_url=stub.base_url),
                                JudgePrompt.load("expected"),
                                JudgeOptions(concurrency=3, repeats=3))
        verdicts = scorer.against_expected([Case("q", m, "a") for m in markers])
    assert [v.votes for v in verdicts] == [(True, False, True)] * 6
    assert all(judge.peak[m] == 1 for m in markers)  # one unit's calls one after the other
    assert 1 < judge.all_peak <= 3  # the units in parallel, within the bound
    assert scorer.endpoint.stats.calls == 18


@pytest.mark.parametrize(("judgements", "passed", "votes"), [
    ([ScorerVerdict(True, reply="1"), ScorerVerdict(False, reply="0"),
      ScorerVerdict(True, reply="1")], True, (True, False, True)),
    ([ScorerVerdict(True, reply="1"), ScorerVerdict(False, reply="0")], False, (True, False)),
    ([ScorerVerdict(False, reply="x", invalid=True)] * 3, False, (False, False, False)),
    ([ScorerVerdict(True, reply="1"), ScorerVerdict(False, error="judge failed: down")],
     False, (True,)),
    ([ScorerVerdict(False, error="judge failed: down")], False, ()),
])
def test_majority(judgements: list[ScorerVerdict], passed: bool,
                  votes: tuple[bool, ...]) -> None:
    verdict = majority(judgements)
    assert (verdict.passed, verdict.votes) == (passed, votes)
    assert verdict.invalid == any(j.invalid for j in judgements)
    assert verdict.error == next((j.error for j in judgements if j.error), None)


@pytest.mark.parametrize("value", [0, -1, "3", 2.0, True, None])
def test_judge_repeats_must_be_a_positive_integer(value: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        EvalConfig.from_constants(constants(JUDGE_REPEATS=value), "test_eval.py")
    assert f"JUDGE_REPEATS={value!r} must be an integer of at least 1" in str(raised.value)
    assert "JUDGE_REPEATS = 3" in str(raised.value)  # the fix


def test_judge_repeats_is_a_judge_setting() -> None:
    assert EvalConfig.from_constants(constants(JUDGE_REPEATS=4), "t.py").judge.repeats == 4
    assert EvalConfig.from_constants(constants(), "test_eval.py").judge.repeats == 1
    without_judge = {k: v for k, v in constants(SCORER="exact", JUDGE_REPEATS=3).items()
                     if not k.startswith("JUDGE_") or k == "JUDGE_REPEATS"}
    with pytest.raises(ConfigError, match="JUDGE_REPEATS declared without JUDGE_MODEL"):
        EvalConfig.from_constants(without_judge, "test_eval.py")
    with pytest.raises(ConfigError, match="did you mean JUDGE_REPEATS"):
        EvalConfig.from_constants(constants(JUDGE_REPEAT=3), "test_eval.py")


def test_votes_round_trip_and_old_documents_load() -> None:
    voted = ItemResult("e", False, True, "q", "a", ("x",), ("e",), judge_reply="1 / 0",
                       judge_votes=(True, False))
    once = ItemResult("f", True, True, "q", "a", ("a",), ("f",), judge_reply="1")
    run = ScoredRun((TypeResult("functional", "llm_judge", (voted, once)),))
    doc = json.loads(json.dumps(run.to_json()))
    voted_doc, once_doc = doc["types"][0]["items"]
    assert voted_doc["judge_votes"] == [True, False] and "judge_votes" not in once_doc
    assert ScoredRun.from_json(doc) == run  # the votes a tuple again; old documents load
