"""Judging while the calls run: each entry's judge verdicts are follow-up jobs of the loop,
started once the entry's calls are in, inside the same MAX_CONCURRENCY bound as the calls."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from evalkit import (
    Call,
    ChatEndpoint,
    Component,
    Entry,
    EvalConfig,
    RunContext,
    Selection,
    evaluate,
)
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset
from tests.support.openai_stub import OpenAIStub, RecordedRequest, Reply, ok

CONCURRENCY = 3
LAST_ENTRY = "z-slow"  # last in dataset order (f0..f5, r0..r5, z-slow); one call


class CountingResponder:
    """Answers after a short delay, counting the requests in flight at once (component and
    judge alike), the order in which each model's requests arrive, and how many component
    requests were in flight when each judge request arrived."""

    def __init__(self, judge_reply: str) -> None:
        self.judge_reply = judge_reply
        self.in_flight: dict[str, int] = {"component": 0, "judge": 0}
        self.peak = 0
        self.arrivals: list[str] = []
        self.calls_beside_judge: list[int] = []
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        model = str((request.body or {}).get("model"))
        with self.lock:
            if model == "judge":
                self.calls_beside_judge.append(self.in_flight["component"])
            self.in_flight[model] += 1
            self.peak = max(self.peak, sum(self.in_flight.values()))
            self.arrivals.append(model)
        # Held here, in the server's thread, the request is in flight. The last entry's call
        # is slow, so the other entries' verdicts are asked for while it is still out.
        messages = (request.body or {}).get("messages") or [{}]
        time.sleep(0.5 if messages[-1].get("content") == LAST_ENTRY else 0.05)
        with self.lock:
            self.in_flight[model] -= 1
        return ok(self.judge_reply if model == "judge" else "the answer")


@pytest.mark.parametrize("judge_reply, accuracy, kind", [
    ("1", 1.0, "threads"), ("0", 0.0, "threads"), ("1", 1.0, "async")])
def test_judging_overlaps_the_calls_within_the_concurrency_bound(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        judge_reply: str, accuracy: float, kind: str) -> None:
    responder = CountingResponder(judge_reply)
    entries = {f"r{i}": entry("repeatability") for i in range(6)}
    entries |= {f"f{i}": entry("functional") for i in range(6)}
    entries[LAST_ENTRY] = entry("functional")
    with OpenAIStub(responder) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        component = threaded_component() if kind == "threads" else async_component()

        config = EvalConfig.from_constants({
            "EXPERIMENT_NAME": "early/judging",
            "DATASET_PATH": str(write_dataset(tmp_path / "ds", entries)),
            "REPORTS_DIR": str(tmp_path / "reports"), "REPEAT_COUNT": 3,
            "EVAL_MIN_ACCURACY": 0.0, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0,
            "SCORER": "llm_judge", "JUDGE_MODEL": "judge", "MAX_CONCURRENCY": CONCURRENCY,
            "TRACE_CALLS": False}, "test_eval.py")
        outcome = evaluate(config, component, Selection.parse("all"),
                           RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))

    assert responder.peak == CONCURRENCY  # calls and judge requests share the bound
    assert responder.arrivals.count("judge") == 1 + 13  # the preflight, then one per entry
    # The window's last calls share it with the first verdicts: judging does not wait for
    # the last call to end.
    assert max(responder.calls_beside_judge[1:]) > 0
    assert responder.arrivals.count("component") == 6 * 3 + 7
    by_type = {m.test_type: m for m in outcome.metrics}
    assert by_type["repeatability"].accuracy == accuracy
    assert by_type["functional"].accuracy == accuracy
    assert all(i.judge_reply == judge_reply for t in outcome.scored.types for i in t.items)


def threaded_component() -> Component:
    component_llm = ChatEndpoint("component")

    def component(item: Entry, call: Call) -> str:
        return component_llm.complete([{"role": "user", "content": item.id}], temperature=1)
    return component


def async_component() -> Component:
    import openai

    client = openai.AsyncOpenAI(max_retries=0)  # OPENAI_BASE_URL names the stub

    async def component(item: Entry, call: Call) -> str:
        reply = await client.chat.completions.create(
            model="component", temperature=1, messages=[{"role": "user", "content": item.id}])
        return reply.choices[0].message.content or ""
    return component
