"""What the spans of LLM calls show: a judge call's span holds the messages sent (secrets
redacted) and is named for what it judges; spans carry the tokens used as MLflow reads them.

The spans are built in memory as they are written; what a real store makes of them is in
tests/e2e/test_llm_spans_store.py. Every test carries the ``mlflow_api`` marker: the span entities
are MLflow's.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry, EvalConfig, RunContext, Selection, evaluate, evaluate_replicates
from evalkit.records import (
    ItemResult,
    JudgeCall,
    RunUsage,
    ScoredRun,
    TokenUsage,
    TypeResult,
    names,
)
from evalkit.records._usage import usd
from evalkit.review import load_side
from evalkit.tracking import StoredRun, Tracker, history, render_history
from evalkit.tracking._history import _usage as series_usage
from evalkit.tracking._memory import MemoryBackend
from evalkit.tracking._trace_writer import _judge_spans
from evalkit.tracking._traces import TraceContext, build_traces
from tests.support.builders import entry, write_dataset
from tests.support.openai_stub import OpenAIStub

pytestmark = pytest.mark.mlflow_api

MESSAGES = ({"role": "system", "content": "Reply 0 or 1."},
            {"role": "user", "content": 'EXPECTED: "a"\nOUTPUT: "b"'})


def judged(*calls: JudgeCall, messages: Any = MESSAGES) -> ScoredRun:
    item = ItemResult("e1", False, True, "q", "a", ("b",), ("e1",), judge_reply="1 / 0",
                      judge_messages=messages, judge_calls=calls)
    return ScoredRun((TypeResult("functional", "llm_judge", (item,)),))


def judge_spans(scored: ScoredRun, **params: str) -> list[Any]:
    context = TraceContext("run", "1", 1_000, {"judge_model": "judge-x", **params}, {})
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
        outcome = evaluate(config, answer, Selection("all"),
                           RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
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


def test_an_entry_also_in_repeatability_is_judged_on_its_first_output_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Functional judges one output per entry, call 0's (the repeats are repeatability's to
    compare): the judge is sent that output alone, and the span's name, the verdict's
    rationale and the functional report say which output it was."""
    tracker = Tracker.in_memory(bundles_dir=tmp_path / "bundles")
    dataset = write_dataset(tmp_path / "ds", {
        "both": entry("functional", "repeatability", input="capital of NZ?",
                      expected="Wellington"),
        "alone": entry("functional", input="capital of AU?", expected="Canberra")})

    def answer(item: Entry, call: Call) -> str:
        if item.id == "alone":
            return "Canberra"
        return ["Wellington", "Auckland", "Auckland-on-sea"][call.repeat]

    with OpenAIStub() as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-first-output")
        config = EvalConfig.from_constants({
            "EXPERIMENT_NAME": "spans/first", "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0,
            "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0, "REPEAT_COUNT": 3,
            "SCORER": "llm_judge", "JUDGE_MODEL": "stub-judge"}, "eval.py")
        outcome = evaluate(config, answer, Selection("all"),
                           RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
        sent = [json.dumps(r.body) for r in stub.chat_requests()
                if r.body and "capital of NZ" in json.dumps(r.body)]
    against_expected = [body for body in sent if "Auckland-on-sea" not in body]
    (functional_request,) = against_expected  # the repeats went to repeatability's judge
    assert "Wellington" in functional_request and "Auckland" not in functional_request
    backend = tracker.backend
    assert isinstance(backend, MemoryBackend)
    traces = {t.entry_id: t for t in backend.traces.traces[outcome.run_id].values()}
    assert sorted(j.name for j in traces["both"].judge_calls) == [
        "judge: functional (call 0 of 3)", "judge: repeatability"]
    assert [j.name for j in traces["alone"].judge_calls] == ["judge: functional"]
    (rationale,) = [a.rationale for a in traces["both"].assessments if a.name == "functional"]
    assert "scored on call 0's output, the first of the entry's 3 (repeatability compares " \
           "them all)" in str(rationale)
    (alone,) = [a.rationale for a in traces["alone"].assessments if a.name == "functional"]
    assert "call 0" not in str(alone)
    report = (tmp_path / "reports" / "report-functional.md").read_text()
    assert "- 1 of these entries are also repeatability entries, invoked the repeat count " \
           "times: each is scored here on its first output (call 0)" in report
    assert "(report-repeatability.md): both." in report
    assert "also repeatability" not in (tmp_path / "reports" /
                                        "report-repeatability.md").read_text()


def test_the_span_name_counts_calls_and_asks_together() -> None:
    from evalkit.tracking._traces import JudgeSpan

    span = JudgeSpan("functional", 2, 3, None, JudgeCall("1"), of_calls=5)
    assert span.name == "judge: functional (call 0 of 5, ask 2/3)"


# --- tokens and cost of the component's calls ---------------------------------------------------

def chat_completion(prompt_tokens: int, completion_tokens: int, model: str = "gpt-x") -> Any:
    """A real ``openai`` Chat Completions response object."""
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate({
        "id": "c1", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "hi"}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}})


def test_a_call_records_the_usage_its_llm_responses_report() -> None:
    from evalkit.scorers._endpoint import ChatReply

    call = Call(mocks={}, repeat=0, repeats=1)
    response = chat_completion(10, 2)
    assert call.record_llm_response(response) is response  # handed back, to go on with
    call.record_llm_response({"model": "gpt-x",
                              "usage": {"prompt_tokens": 5, "completion_tokens": 1}})
    call.record_llm_response({"usage": {"input_tokens": 7, "output_tokens": 3}}, model="claude")
    call.record_llm_response(ChatReply("hi", TokenUsage(4, 4, "local")))
    call.record_llm_response({"choices": []})  # no usage reported: nothing recorded
    call.record_usage(input_tokens=1, output_tokens=0, model="claude")
    assert call.meter.recorded() == (TokenUsage(15, 3, "gpt-x"), TokenUsage(8, 3, "claude"),
                                     TokenUsage(4, 4, "local"))


@pytest.mark.parametrize("counts", [{"input_tokens": -1, "output_tokens": 0},
                                    {"input_tokens": 1.5, "output_tokens": 0},
                                    {"input_tokens": True, "output_tokens": 0},
                                    {"input_tokens": 1, "output_tokens": "2"}])
def test_a_usage_that_is_no_count_is_refused_naming_it(counts: dict[str, Any]) -> None:
    call = Call(mocks={}, repeat=0, repeats=1)
    with pytest.raises(ValueError, match="must be a whole number of at least 0"):
        call.record_usage(**counts)
    assert call.meter.recorded() == ()


def test_raw_results_keep_the_usage_and_read_older_lines_without_it(tmp_path: Path) -> None:
    from evalkit.records import CallRecord
    from evalkit.tracking._raw import RawResultsLog, read_raw_results

    path = tmp_path / "raw.jsonl"
    path.write_text(json.dumps({"entry_id": "old", "repeat": 0, "output": "a", "error": None,
                                "latency_ms": 1.0}) + "\n", encoding="utf-8")
    with RawResultsLog(path) as raw:
        raw.append(CallRecord("new", 0, "a", None, 2.0, (TokenUsage(3, 4, "m"),)))
    old, new = read_raw_results(path).records
    assert (old.entry_id, old.usage) == ("old", ())
    assert (new.entry_id, new.usage) == ("new", (TokenUsage(3, 4, "m"),))


def call_spans(calls: list[dict[str, Any]], **params: str) -> list[Any]:
    from evalkit.tracking._trace_writer import _call_spans

    context = TraceContext("run", "1", 1_000, params, {})
    (trace,) = build_traces(context, ScoredRun(()), calls)
    return _call_spans(context, trace)[1:]


def test_a_call_that_reported_usage_is_an_llm_span_with_its_tokens_and_cost() -> None:
    usage = [{"model": "gpt-x", "input_tokens": 1000, "output_tokens": 500}]
    priced, plain = call_spans(
        [{"entry_id": "e", "repeat": 0, "output": "a", "error": None, "latency_ms": 1.0,
          "usage": usage},
         {"entry_id": "e", "repeat": 1, "output": "a", "error": None, "latency_ms": 1.0}],
        TOKEN_PRICES=json.dumps({"gpt-x": [2.0, 8.0]}))
    assert priced.span_type == "LLM"
    assert priced.attributes[names.SPAN_TOKEN_USAGE] == {
        "input_tokens": 1000, "output_tokens": 500, "total_tokens": 1500}
    assert priced.attributes[names.SPAN_LLM_MODEL] == "gpt-x"
    assert priced.attributes[names.SPAN_COST] == pytest.approx(
        {"input_cost": 0.002, "output_cost": 0.004, "total_cost": 0.006})
    assert plain.span_type == "UNKNOWN"  # no usage reported: no LLM request known
    assert not {names.SPAN_TOKEN_USAGE, names.SPAN_COST} & set(plain.attributes)


def test_a_call_of_two_models_sums_them_and_prices_what_is_priced() -> None:
    usage = [{"model": "a", "input_tokens": 10, "output_tokens": 1},
             {"model": "b", "input_tokens": 20, "output_tokens": 2}]
    (span,) = call_spans([{"entry_id": "e", "repeat": 0, "output": "x", "error": None,
                           "latency_ms": 1.0, "usage": usage}],
                         TOKEN_PRICES=json.dumps({"b": [1e6, 0.0]}))
    assert span.attributes[names.SPAN_TOKEN_USAGE]["total_tokens"] == 33
    assert names.SPAN_LLM_MODEL not in span.attributes  # two models: neither names the span
    assert span.attributes[names.SPAN_COST]["total_cost"] == pytest.approx(20.0)


USAGE_ENTRIES = {"ok": entry("functional"), "boom": entry("functional", input="explode")}


def reporting(item: Entry, call: Call) -> str:
    """100 input and 10 output tokens of gpt-x per call; the one that raises spent them too."""
    call.record_usage(input_tokens=60, output_tokens=4, model="gpt-x")
    call.record_llm_response(chat_completion(40, 6))
    if item.input == "explode":
        raise RuntimeError("after the LLM answered")
    return "a"


def usage_run(tmp_path: Path, component: Any, entries: dict[str, Any],
              **constants: Any) -> tuple[Tracker, Any]:
    """One run of ``component`` over ``entries`` on a tracker in memory: (tracker, outcome)."""
    tracker = Tracker.in_memory(bundles_dir=tmp_path / "bundles")
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "spans/usage", "EVAL_MIN_ACCURACY": 0.0,
        "DATASET_PATH": str(write_dataset(tmp_path / "ds", entries)),
        "REPORTS_DIR": str(tmp_path / "reports"), **constants}, "eval.py")
    return tracker, evaluate(config, component, Selection("all"),
                             RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))


def test_a_run_sums_the_tokens_and_cost_of_its_calls_into_metrics(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    tracker, outcome = usage_run(tmp_path, reporting, USAGE_ENTRIES,
                                 TOKEN_PRICES={"gpt-x": (1.0, 10.0)})
    stored = tracker.reader.stored(outcome.run_id)
    assert {k: v for k, v in stored.metrics.items() if "tokens" in k or "cost" in k} == {
        "tokens_input": 200, "tokens_output": 20, "tokens_total": 220,
        "cost_usd": pytest.approx(200 * 1.0 / 1e6 + 20 * 10.0 / 1e6)}
    assert json.loads(stored.params["TOKEN_PRICES"]) == {"gpt-x": [1.0, 10.0]}
    raw = [json.loads(line) for line in outcome.raw_results.read_text().splitlines()]
    assert [r["usage"] for r in raw] == [[{"model": "gpt-x", "input_tokens": 100,
                                           "output_tokens": 10}]] * 2
    assert "TOKEN_PRICES prices no" not in caplog.text
    # evalkit's own outputs say it too: the outcome (the verdict line, --json) and summary.md
    assert outcome.usage == RunUsage(220, pytest.approx(0.0004), None, None)
    assert "- **Tokens and cost:** 220 tokens, $0.00040\n" in (
        tmp_path / "reports" / "summary.md").read_text()


def test_tokens_of_a_model_without_a_price_are_counted_not_priced_and_named(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    tracker, outcome = usage_run(tmp_path, reporting, USAGE_ENTRIES,
                                 TOKEN_PRICES={"other": (1.0, 1.0)})
    metrics = tracker.reader.stored(outcome.run_id).metrics
    assert (metrics["tokens_total"], metrics["cost_usd"]) == (220, 0.0)
    assert "TOKEN_PRICES prices no 'gpt-x' (220 tokens)" in caplog.text


def test_a_run_without_reported_usage_logs_no_token_metrics(tmp_path: Path) -> None:
    tracker, outcome = usage_run(tmp_path, lambda item, call: "a",
                                 {"ok": entry("functional")})
    assert not [k for k in tracker.reader.stored(outcome.run_id).metrics if "tokens" in k]
    assert not outcome.usage.reported and outcome.usage.text() == ""
    assert "Tokens and cost" not in (tmp_path / "reports" / "summary.md").read_text()


def test_the_judges_tokens_and_cost_are_metrics_of_their_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-usage-key")
    tracker = Tracker.in_memory(bundles_dir=tmp_path / "bundles")
    dataset = write_dataset(tmp_path / "ds", {"e1": entry("functional"), "e2": entry("smoke")})
    with OpenAIStub() as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        config = EvalConfig.from_constants({
            "EXPERIMENT_NAME": "spans/judge-usage", "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0,
            "SCORER": "llm_judge", "JUDGE_MODEL": "stub-judge",
            "TOKEN_PRICES": {"stub-judge": (1e6, 0)}}, "eval.py")
        outcome = evaluate(config, lambda item, call: "a", Selection("all"),
                           RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    calls = [c for t in outcome.scored.types for i in t.items for c in i.judge_calls]
    inputs = sum(c.usage.input_tokens for c in calls if c.usage)
    assert len(calls) == 2 and inputs > 0
    metrics = tracker.reader.stored(outcome.run_id).metrics
    assert (metrics["judge_tokens_input"], metrics["judge_tokens_output"],
            metrics["judge_tokens_total"]) == (inputs, 2, inputs + 2)
    assert metrics["judge_cost_usd"] == pytest.approx(inputs)  # $1 per input token
    assert "tokens_total" not in metrics and "cost_usd" not in metrics  # the component's
    assert outcome.usage.text() == f"judge {inputs + 2:,} tokens, ${inputs:,.2f}"


@pytest.mark.parametrize(("cost", "shown"), [
    (0.0, "$0.00"), (12.345, "$12.35"), (1234.5, "$1,234.50"), (0.5, "$0.50"),
    (0.0123, "$0.012"), (0.000042, "$0.000042"), (0.0099, "$0.0099"),
])
def test_a_cost_keeps_two_significant_digits_under_a_dollar(cost: float, shown: str) -> None:
    assert usd(cost) == shown


def test_history_shows_each_runs_tokens_and_cost_a_series_its_replicates_summed(
        tmp_path: Path) -> None:
    tracker = Tracker.in_memory(bundles_dir=tmp_path / "bundles")
    dataset = write_dataset(tmp_path / "ds", USAGE_ENTRIES)

    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "spans/history", "EVAL_MIN_ACCURACY": 0.0,
        "DATASET_PATH": str(dataset), "REPORTS_DIR": str(tmp_path / "reports"),
        "REPLICATES": 2, "TOKEN_PRICES": {"gpt-x": (1.0, 10.0)}}, "eval.py")
    runs_dir = tmp_path / "runs"
    single = evaluate(config, reporting, Selection("all"),
                      RunContext(tracker=tracker, runs_dir=runs_dir)).run_id
    series = evaluate_replicates(config, reporting, Selection("all"),
                                 RunContext(tracker=tracker, runs_dir=runs_dir)).parent_run_id
    silent = evaluate(config, lambda item, call: "a", Selection("all"),
                      RunContext(tracker=tracker, runs_dir=runs_dir)).run_id
    rows = history(tracker.reader, "spans/history")
    assert [r.run_id for r in rows] == [silent, series, single]
    # 220 tokens and $0.00040 a run (2 calls of 100 in, 10 out at $1 and $10 a million)
    assert [r.to_json()["usage"] for r in rows] == [
        {"tokens": None, "cost_usd": None, "judge_tokens": None, "judge_cost_usd": None},
        {"tokens": 440, "cost_usd": pytest.approx(0.0008), "judge_tokens": None,
         "judge_cost_usd": None},
        {"tokens": 220, "cost_usd": pytest.approx(0.0004), "judge_tokens": None,
         "judge_cost_usd": None}]
    usage_lines = [line for line in render_history(rows).splitlines() if "usage:" in line]
    assert usage_lines == [" " * 18 + "usage: 440 tokens, $0.00080",
                           " " * 18 + "usage: 220 tokens, $0.00040"]
    # the series' parent logs its replicates' usage summed, so compare and MLflow's own run
    # list show it as they show a single run's
    assert tracker.reader.stored(series).metrics["tokens_total"] == 440
    assert load_side(tracker.reader, series).usage == RunUsage(440, pytest.approx(0.0008))


def test_history_sums_the_replicates_of_a_series_recorded_before_its_parent_logged_usage(
) -> None:
    def run(run_id: str, tags: dict[str, str], metrics: dict[str, float]) -> StoredRun:
        return StoredRun(run_id, run_id, "0", 0, "FINISHED", {}, tags, metrics)

    parent = run("p", {names.MODE_TAG: "replicates"}, {"functional_accuracy": 1.0})
    children = [run(f"r{k}", {names.MODE_TAG: "evaluation", names.PARENT_RUN_TAG: "p"},
                    {"tokens_total": 100 + k, "cost_usd": 0.25}) for k in range(2)]
    stranger = run("x", {names.MODE_TAG: "evaluation", names.PARENT_RUN_TAG: "other"},
                   {"tokens_total": 1000})
    assert series_usage(parent, [parent, *children, stranger]) == RunUsage(201, 0.5)
    assert series_usage(children[0], [parent, *children]) == RunUsage(100, 0.25)


def test_the_usage_of_replicates_is_summed_figure_by_figure() -> None:
    total = RunUsage.total([RunUsage(100, 0.5, None, None), RunUsage(50, None, 10, 0.25),
                            RunUsage()])
    assert total == RunUsage(150, 0.5, 10, 0.25)
    assert total.text() == "150 tokens, $0.50; judge 10 tokens, $0.25"
    assert RunUsage(None, None, 5, None).text() == "judge 5 tokens"
    assert RunUsage.total([]) == RunUsage() and not RunUsage().reported


# --- the price table ------------------------------------------------------------------------------

@pytest.mark.parametrize(("prices", "message"), [
    ([("gpt-x", 1, 2)], r"TOKEN_PRICES must be a dict of model name -> \(USD per million "
                        r"input tokens, USD per million output tokens\)"),
    ({"": (1, 2)}, "TOKEN_PRICES has key '': name the model"),
    ({"gpt-x": 3}, r"TOKEN_PRICES\['gpt-x'\]=3 must be two numbers of at least 0"),
    ({"gpt-x": (1, -2)}, r"TOKEN_PRICES\['gpt-x'\]=\(1, -2\) must be two numbers"),
    ({"gpt-x": (1, float("nan"))}, r"TOKEN_PRICES\['gpt-x'\]=\(1, nan\) must be two numbers"),
    ({"gpt-x": (True, 1)}, r"TOKEN_PRICES\['gpt-x'\]=\(True, 1\) must be two numbers of at "
                           r"least 0: \(USD per million input tokens, USD per million "
                           r"output tokens\), e\.g\. TOKEN_PRICES = "
                           r"\{\"gpt-4o-mini\": \(0\.15, 0\.60\)\}$"),
    ({"gpt-x": (1, 2, 3)}, r"TOKEN_PRICES\['gpt-x'\]=\(1, 2, 3\) must be two numbers"),
])
def test_a_price_table_that_cannot_price_is_refused_naming_the_fix(prices: Any,
                                                                     message: str) -> None:
    from evalkit import ConfigError

    with pytest.raises(ConfigError, match=r"^eval\.py: " + message):
        EvalConfig.from_constants({"EXPERIMENT_NAME": "a/b", "DATASET_PATH": "ds",
                                   "TOKEN_PRICES": prices}, "eval.py")


def test_a_misspelt_price_table_is_named_and_a_good_one_is_read() -> None:
    from evalkit import ConfigError
    from evalkit.records import TokenPrice

    with pytest.raises(ConfigError, match="unknown constant TOKEN_PRICE: did you mean "
                                          "TOKEN_PRICES"):
        EvalConfig.from_constants({"EXPERIMENT_NAME": "a/b", "DATASET_PATH": "ds",
                                   "TOKEN_PRICE": {}}, "eval.py")
    config = EvalConfig.from_constants({"EXPERIMENT_NAME": "a/b", "DATASET_PATH": "ds",
                                        "TOKEN_PRICES": {"m": [0.15, 0.6]}}, "eval.py")
    assert config.token_prices == {"m": TokenPrice(0.15, 0.6)}
    assert EvalConfig.from_constants({"EXPERIMENT_NAME": "a/b", "DATASET_PATH": "ds"},
                                     "eval.py").token_prices == {}


def test_a_call_past_its_timeout_keeps_the_tokens_it_reported(tmp_path: Path) -> None:
    import threading

    release = threading.Event()

    def slow(item: Entry, call: Call) -> str:
        call.record_usage(input_tokens=7, output_tokens=3, model="gpt-x")
        release.wait(10)  # past CALL_TIMEOUT: abandoned, then let go
        return "a"

    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "spans/timeout", "EVAL_MIN_ACCURACY": 0.0, "CALL_TIMEOUT": 0.3,
        "DATASET_PATH": str(write_dataset(tmp_path / "ds", {"ok": entry("functional")})),
        "REPORTS_DIR": str(tmp_path / "reports")}, "eval.py")
    try:
        outcome = evaluate(config, slow, Selection("all"),
                           RunContext(tracker=Tracker.in_memory(bundles_dir=tmp_path / "bundles"),
                                      runs_dir=tmp_path / "runs"))
    finally:
        release.set()
    (raw,) = [json.loads(line) for line in outcome.raw_results.read_text().splitlines()]
    assert raw["error"].startswith("CallTimeout")
    assert raw["usage"] == [{"model": "gpt-x", "input_tokens": 7, "output_tokens": 3}]


def test_a_resumed_run_counts_the_tokens_of_the_calls_it_reused(tmp_path: Path) -> None:
    from evalkit import Progress, RunInterrupted, Stop
    from evalkit import resume as resume_run

    tracker = Tracker.in_memory(bundles_dir=tmp_path / "bundles")
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "spans/resume", "EVAL_MIN_ACCURACY": 0.0, "MAX_CONCURRENCY": 1,
        "DATASET_PATH": str(write_dataset(tmp_path / "ds", {f"e{i}": entry("functional")
                                                            for i in range(4)})),
        "REPORTS_DIR": str(tmp_path / "reports")}, "eval.py")
    stop = Stop()

    def stop_after_two(progress: Progress) -> None:
        if progress.calls_done == 2:
            stop.request()

    def tokens(item: Entry, call: Call) -> str:
        call.record_usage(input_tokens=10, output_tokens=1)
        return "a"

    with pytest.raises(RunInterrupted):
        evaluate(config, tokens, Selection("all"),
                 RunContext(tracker=tracker, runs_dir=tmp_path / "runs", stop=stop,
                            progress=stop_after_two))
    (run,) = tracker.reader.runs(config.experiment_name)
    kept = len((tmp_path / "runs" / run.run_id / "raw-results.jsonl").read_text().splitlines())
    made: list[str] = []

    def counted(item: Entry, call: Call) -> str:
        made.append(item.id)
        return tokens(item, call)

    resume_run(config, counted, run.run_id, RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert 0 < kept < 4 and len(made) == 4 - kept  # calls reused, with the tokens they reported
    metrics = tracker.reader.stored(run.run_id).metrics
    assert (metrics["tokens_input"], metrics["tokens_total"]) == (40, 44)
