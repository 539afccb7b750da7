"""An agent traced the way MLflow teaches, evaluated on a real local store: every span it makes
(``@mlflow.trace``, ``mlflow.start_span``, ``mlflow.openai.autolog()`` over real HTTP) is in
its entry's trace under the call's span, on threads, on an event loop, across a resume and in
a rescore, with the usage its LLM spans carry counted once; and no experiment holds a trace
of its own (MLflow would otherwise send each call's spans to ``Default``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlflow
import openai
import pytest

from evalkit import (
    Call,
    Entry,
    EvalConfig,
    RunContext,
    RunInterrupted,
    Selection,
    evaluate,
    resume,
)
from evalkit.evaluation import rescore
from evalkit.tracking import Tracker
from tests.support.builders import config_for, entry, write_dataset
from tests.support.openai_stub import OpenAIStub
from tests.support.traces import traces_of

pytestmark = pytest.mark.mlflow_api  # on the oldest and the newest MLflow supported too

SECRET = "sk-live-0123456789abcdefghij"
CITIES = {"e0": "Paris", "e1": "Rome", "e2": "Oslo"}
WEATHER = {"Paris": "sunny", "Rome": "rain", "Oslo": "snow"}


@pytest.fixture(scope="module")
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


@pytest.fixture
def autolog() -> Iterator[None]:
    mlflow.openai.autolog()
    yield
    mlflow.openai.autolog(disable=True)


@pytest.fixture(autouse=True)
def the_key_is_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)


@mlflow.trace(span_type="TOOL")
def weather(city: str, key: str) -> str:
    return WEATHER[city]


def agent_steps(entry_id: str) -> str:
    with mlflow.start_span("plan", span_type="CHAIN") as plan:
        plan.set_inputs({"entry": entry_id})
        plan.set_outputs([CITIES[entry_id]])
    # a tool given the key as an argument: the stored span must not show it
    return weather(CITIES[entry_id], key=SECRET)


def all_traces(tracking_uri: str) -> dict[str, int]:
    client = mlflow.MlflowClient(tracking_uri)
    return {e.name: len(client.search_traces(locations=[e.experiment_id], max_results=1000))
            for e in client.search_experiments()}


def spans_by_entry(tracking_uri: str, run_id: str) -> dict[str, list[Any]]:
    return {t.info.tags["mlflow.traceName"]: t.data.spans for t in traces_of(tracking_uri, run_id)}


def assert_agent_spans_under_calls(spans: list[Any], calls: int, llm: bool) -> None:
    """Each call span holds the agent span; under it the plan, the tool (and the LLM)."""
    by_id = {s.span_id: s for s in spans}
    call_spans = [s for s in spans if s.name.startswith("call ")]
    assert len(call_spans) == calls
    for call_span in call_spans:
        (agent,) = [s for s in spans if s.parent_id == call_span.span_id]
        assert (agent.name, agent.span_type) == ("agent", "AGENT")
        under = sorted(s.span_type for s in spans if s.parent_id == agent.span_id)
        assert under == sorted(["CHAIN", "TOOL"] + (["CHAT_MODEL"] if llm else []))
        assert by_id[call_span.parent_id].parent_id is None  # the entry's root span
    tools = [s for s in spans if s.span_type == "TOOL"]
    assert tools and all(SECRET not in str(s.inputs) for s in tools)
    assert all(s.inputs["key"] == "[REDACTED:OPENAI_API_KEY]" for s in tools)


def agent_config(tmp_path: Path, **constants: Any) -> EvalConfig:
    dataset = write_dataset(tmp_path / "ds", {
        e: entry("functional", input=e, expected=WEATHER[c]) for e, c in CITIES.items()})
    return config_for(tmp_path, dataset, **constants)


def run_agent(tmp_path: Path, tracking_uri: str, config: EvalConfig, component: Any) -> Any:
    return evaluate(config, component, Selection("functional"),
                    RunContext(tracker=Tracker(tracking_uri),
                               runs_dir=tmp_path / ".evalkit" / "runs"))


def test_an_agent_on_threads_keeps_every_span_in_its_entrys_trace(
        tmp_path: Path, tracking_uri: str) -> None:
    before = all_traces(tracking_uri)

    @mlflow.trace(span_type="AGENT", name="agent")
    def component(item: Entry, call: Call) -> str:
        return agent_steps(item.id)

    outcome = run_agent(tmp_path, tracking_uri, agent_config(tmp_path, MAX_CONCURRENCY=3),
                        component)
    assert outcome.metrics[0].accuracy == 1.0
    traced = spans_by_entry(tracking_uri, outcome.run_id)
    assert set(traced) == set(CITIES)  # traces == entries
    for spans in traced.values():
        assert_agent_spans_under_calls(spans, 1, llm=False)
    after = all_traces(tracking_uri)
    new = {name: after[name] - before.get(name, 0) for name in after}
    assert {n: c for n, c in new.items() if c} == {outcome.experiment_name: 3}
    assert new.get("Default", 0) == 0


def test_an_async_agent_with_autologged_llm_calls_counts_their_tokens_once(
        tmp_path: Path, tracking_uri: str, stub: OpenAIStub, autolog: None) -> None:
    client = openai.AsyncOpenAI(base_url=stub.base_url, api_key=SECRET, max_retries=0)

    @mlflow.trace(span_type="AGENT", name="agent")
    async def component(item: Entry, call: Call) -> str:
        reply = await client.chat.completions.create(
            model="stub-model", messages=[{"role": "user", "content": item.input}])
        call.record_llm_response(reply)  # reported too: counted once all the same
        await asyncio.sleep(0.01)
        return agent_steps(item.id)

    before = all_traces(tracking_uri)
    outcome = run_agent(tmp_path, tracking_uri, agent_config(tmp_path, MAX_CONCURRENCY=3),
                        component)
    traced = spans_by_entry(tracking_uri, outcome.run_id)
    assert set(traced) == set(CITIES)
    for spans in traced.values():
        assert_agent_spans_under_calls(spans, 1, llm=True)
    run = mlflow.MlflowClient(tracking_uri).get_run(outcome.run_id)
    llm_usage = [s.attributes["mlflow.chat.tokenUsage"] for t in traced.values() for s in t
                 if s.span_type == "CHAT_MODEL"]
    assert len(llm_usage) == 3
    assert run.data.metrics["tokens_total"] == sum(u["total_tokens"] for u in llm_usage)
    for trace in traces_of(tracking_uri, outcome.run_id):
        # the trace's Token Usage: the LLM span's alone, not again on the call's span
        (usage,) = [s.attributes["mlflow.chat.tokenUsage"] for s in trace.data.spans
                    if s.span_type == "CHAT_MODEL"]
        assert trace.info.token_usage["total_tokens"] == usage["total_tokens"]
    after = all_traces(tracking_uri)
    assert after.get("Default", 0) == before.get("Default", 0)


def test_a_resumed_run_and_its_rescore_keep_the_spans_of_every_call(
        tmp_path: Path, tracking_uri: str) -> None:
    interrupted = {"e2"}

    @mlflow.trace(span_type="AGENT", name="agent")
    def component(item: Entry, call: Call) -> str:
        answer = agent_steps(item.id)
        if item.id in interrupted:
            interrupted.clear()
            raise KeyboardInterrupt  # a Ctrl-C during e2's call: e0 and e1 are kept
        return answer

    config = agent_config(tmp_path, MAX_CONCURRENCY=1)
    with pytest.raises(RunInterrupted):
        run_agent(tmp_path, tracking_uri, config, component)
    runs_dir = tmp_path / ".evalkit" / "runs"
    (stopped,) = [p.name for p in runs_dir.iterdir()]
    context = RunContext(tracker=Tracker(tracking_uri), runs_dir=runs_dir)
    resumed = resume(config, component, stopped, context)
    for spans in spans_by_entry(tracking_uri, resumed.run_id).values():
        assert_agent_spans_under_calls(spans, 1, llm=False)

    rescored = rescore(config, resumed.run_id, context)
    traced = spans_by_entry(tracking_uri, rescored.run_id)
    assert set(traced) == set(CITIES)
    for spans in traced.values():
        assert_agent_spans_under_calls(spans, 1, llm=False)


def test_a_judged_run_under_autolog_keeps_the_judges_requests_out_of_every_experiment(
        tmp_path: Path, tracking_uri: str, stub: OpenAIStub, autolog: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    client = openai.OpenAI(base_url=stub.base_url, api_key=SECRET, max_retries=0)

    def component(item: Entry, call: Call) -> str:
        reply = client.chat.completions.create(
            model="stub-model", messages=[{"role": "user", "content": str(item.input)}])
        return str(reply.choices[0].message.content)

    before = all_traces(tracking_uri)
    config = agent_config(tmp_path, SCORER="llm_judge", JUDGE_MODEL="stub-judge",
                          EVAL_MIN_ACCURACY=0.0)
    outcome = run_agent(tmp_path, tracking_uri, config, component)
    traced = spans_by_entry(tracking_uri, outcome.run_id)
    assert set(traced) == set(CITIES)
    for spans in traced.values():
        # the component's request under its call; the judge's own span, and nothing of the
        # judge's autologged request
        by_id = {s.span_id: s.name for s in spans}
        assert sorted((s.name, s.span_type, by_id.get(s.parent_id)) for s in spans[1:]) == [
            ("Completions", "CHAT_MODEL", "call 0"), ("call 0", "UNKNOWN", spans[0].name),
            ("judge: functional", "CHAT_MODEL", spans[0].name)]
    after = all_traces(tracking_uri)
    assert {n: after[n] - before.get(n, 0) for n in after if after[n] != before.get(n, 0)} == {
        outcome.experiment_name: 3}
