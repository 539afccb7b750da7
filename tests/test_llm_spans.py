"""What the spans of LLM calls show: a judge call's span holds the messages sent (secrets
redacted) and is named for what it judges; spans carry the tokens used as MLflow reads them.

The spans are built in memory as they are written (fast); what a real store makes of them is
in the slow tests at the end. Every test carries the ``mlflow_api`` marker: the span entities
are MLflow's.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry, EvalConfig, Selection, evaluate
from evalkit.records import ItemResult, JudgeCall, ScoredRun, TokenUsage, TypeResult, names
from evalkit.tracking import MemoryBackend, Tracker
from evalkit.tracking._trace_writer import _judge_spans
from evalkit.tracking._traces import RunContext, build_traces
from tests.builders import entry, write_dataset
from tests.openai_stub import OpenAIStub

pytestmark = pytest.mark.mlflow_api

MESSAGES = ({"role": "system", "content": "Reply 0 or 1."},
            {"role": "user", "content": 'EXPECTED: "a"\nOUTPUT: "b"'})


def judged(*calls: JudgeCall, messages: Any = MESSAGES) -> ScoredRun:
    item = ItemResult("e1", False, True, "q", "a", ("b",), ("e1",), judge_reply="1 / 0",
                      judge_messages=messages, judge_calls=calls)
    return ScoredRun((TypeResult("functional", "llm_judge", (item,)),))


def judge_spans(scored: ScoredRun, **params: str) -> list[Any]:
    context = RunContext("run", "1", 1_000, {"judge_model": "judge-x", **params}, {})
    (trace,) = build_traces(context, scored, [])
    return _judge_spans(context, trace)


def test_a_judge_span_shows_the_messages_sent_and_names_the_type_and_ask() -> None:
    spans = judge_spans(judged(JudgeCall("1", usage=TokenUsage(12, 1, "judge-x")),
                               JudgeCall("0"),
                               JudgeCall(None, "judge failed: 503")), judge_repeats="3")
    assert [s.name for s in spans] == ["judge: functional (ask 1/3)",
                                       "judge: functional (ask 2/3)",
                                       "judge: functional (ask 3/3)"]
    for span in spans:
        assert span.span_type == "CHAT_MODEL"
        assert span.inputs == {"messages": [dict(m) for m in MESSAGES]}
        assert span.attributes[names.SPAN_MESSAGE_FORMAT] == "openai"
        assert span.attributes[names.SPAN_LLM_MODEL] == "judge-x"
        assert span.attributes[names.SPAN_PROMPT_USE] == "expected"
    assert [s.outputs for s in spans] == ["1", "0", None]
    assert [s.status.status_code for s in spans] == ["OK", "OK", "ERROR"]
    assert spans[0].attributes[names.SPAN_TOKEN_USAGE] == {
        "input_tokens": 12, "output_tokens": 1, "total_tokens": 13}
    assert names.SPAN_TOKEN_USAGE not in spans[1].attributes  # no usage reported


def test_a_judge_asked_once_is_named_for_the_type_alone() -> None:
    (span,) = judge_spans(judged(JudgeCall("1")))
    assert span.name == "judge: functional"


def test_a_failed_ask_ends_the_unit_but_its_name_counts_every_ask_planned() -> None:
    (span,) = judge_spans(judged(JudgeCall(None, "judge failed: 503")), judge_repeats="3")
    assert span.name == "judge: functional (ask 1/3)"


def test_results_without_the_calls_read_back_and_give_the_reply_alone() -> None:
    """A document written before the judge's messages and calls were kept."""
    doc = judged(JudgeCall("1")).to_json()
    item = doc["types"][0]["items"][0]
    del item["judge_messages"], item["judge_calls"]
    (read,) = ScoredRun.from_json(doc).types[0].items
    assert (read.judge_messages, read.judge_calls) == (None, ())
    (span,) = judge_spans(ScoredRun.from_json(doc))
    assert (span.name, span.inputs, span.outputs) == ("judge: functional", "q", "1 / 0")


def test_a_run_keeps_what_it_sent_the_judge_redacted_and_the_tokens_it_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-spans-" + uuid.uuid4().hex
    monkeypatch.setenv("OPENAI_API_KEY", key)
    tracker = Tracker.in_memory(bundles_dir=tmp_path / "bundles")
    dataset = write_dataset(tmp_path / "ds", {"e1": entry("functional", input=f"is {key} ok?",
                                                          expected="a")})

    def answer(item: Entry, call: Call) -> str:
        return "a"

    with OpenAIStub() as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        config = EvalConfig.from_constants({
            "EXPERIMENT_NAME": "spans/judged", "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0,
            "SCORER": "llm_judge", "JUDGE_MODEL": "stub-judge"}, "eval.py")
        outcome = evaluate(config, answer, Selection("all"), tracker=tracker,
                           runs_dir=tmp_path / "runs")
        sent = [r.body for r in stub.chat_requests() if r.body and key in json.dumps(r.body)]
    (item,) = outcome.scored.types[0].items
    (request,) = sent
    assert item.judge_messages is not None
    assert [m["role"] for m in item.judge_messages] == [m["role"] for m in request["messages"]]
    assert key in request["messages"][-1]["content"]  # sent as the entry holds it...
    assert key not in json.dumps(item.judge_messages)  # ...kept redacted
    assert "[REDACTED:OPENAI_API_KEY]" in item.judge_messages[-1]["content"]
    (call,) = item.judge_calls
    words = sum(len(m["content"].split()) for m in request["messages"])  # the stub's count
    assert call.usage == TokenUsage(words, 1, "stub-judge")
    backend = tracker.backend
    assert isinstance(backend, MemoryBackend)
    (trace,) = backend.traces.traces[outcome.run_id].values()
    assert [j.name for j in trace.judge_calls] == ["judge: functional"]
    assert trace.judge_calls[0].messages == item.judge_messages
