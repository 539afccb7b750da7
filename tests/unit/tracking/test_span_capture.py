"""The spans a component makes during a call, captured through MLflow's own tracing: nested as
the component made them, per call on threads and on an event loop, none left behind in MLflow,
and MLflow's own provider back once the last run is done.

In-process and fast (no store: nothing here may reach one). That nothing lands in any
experiment of a real store is shown end to end in tests/e2e/test_component_spans.py.
"""

from __future__ import annotations

import asyncio
import contextvars
import pickle
import threading
from typing import Any

import mlflow
import pytest
from mlflow.tracing.provider import provider
from mlflow.tracing.trace_manager import InMemoryTraceManager

from evalkit.records import SpanRecord
from evalkit.tracking import MlflowSpanCapture

pytestmark = pytest.mark.mlflow_api  # what evalkit asks of MLflow's tracing: oldest and newest


@mlflow.trace(span_type="TOOL")
def lookup(city: str) -> str:
    if city == "Atlantis":
        raise LookupError("no such city")
    return {"Paris": "sunny", "Rome": "rain"}[city]


@mlflow.trace(span_type="AGENT")
def agent(question: str) -> str:
    with mlflow.start_span("plan", span_type="CHAIN") as plan:
        plan.set_inputs({"question": question})
        plan.set_outputs(["Paris", "Rome"])
        plan.set_attribute("steps", 2)
    return f"{lookup('Paris')}/{lookup('Rome')}"


def captured(capture: MlflowSpanCapture, work: Any) -> tuple[Any, list[SpanRecord]]:
    with capture() as spans:
        result = work()
    return result, spans


def open_traces() -> int:
    return len(InMemoryTraceManager.get_instance()._traces)


def test_a_calls_spans_are_kept_nested_in_the_order_they_started() -> None:
    with MlflowSpanCapture() as capture:
        answer, spans = captured(capture, lambda: agent("weather?"))
    assert answer == "sunny/rain"
    assert [(s.name, s.span_type, s.parent) for s in spans] == [
        ("agent", "AGENT", None), ("plan", "CHAIN", 0), ("lookup", "TOOL", 0),
        ("lookup", "TOOL", 0)]
    agent_span, plan, paris, rome = spans
    assert agent_span.inputs == {"question": "weather?"} and agent_span.outputs == "sunny/rain"
    assert (plan.inputs, plan.outputs, plan.attributes["steps"]) == (
        {"question": "weather?"}, ["Paris", "Rome"], 2)
    assert (paris.inputs, paris.outputs, rome.inputs) == ({"city": "Paris"}, "sunny",
                                                          {"city": "Rome"})
    assert all(0 <= s.start_ns <= s.end_ns for s in spans)
    assert agent_span.start_ns <= plan.start_ns <= paris.start_ns <= rome.start_ns
    assert rome.end_ns <= agent_span.end_ns
    # MLflow's own attributes are fields, not attributes again.
    assert not {"mlflow.spanInputs", "mlflow.spanType"} & set(plan.attributes)


def test_a_span_that_fails_is_kept_with_its_error() -> None:
    def component() -> str:
        try:
            return lookup("Atlantis")
        except LookupError:
            return "unknown"

    with MlflowSpanCapture() as capture:
        _, (span,) = captured(capture, component)
    assert span.name == "lookup" and span.error == "LookupError: no such city"
    assert span.outputs is None


def test_calls_on_threads_at_once_each_keep_their_own_spans() -> None:
    barrier = threading.Barrier(4)
    results: dict[str, list[SpanRecord]] = {}

    def call(city: str) -> None:
        def work() -> str:
            barrier.wait()  # all four calls in flight together
            return lookup(city)

        results[city] = captured(capture, work)[1]

    with MlflowSpanCapture() as capture:
        threads = [threading.Thread(target=call, args=(c,)) for c in
                   ("Paris", "Rome", "Paris", "Rome")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert {c: [(s.name, s.inputs) for s in spans] for c, spans in results.items()} == {
        "Paris": [("lookup", {"city": "Paris"})], "Rome": [("lookup", {"city": "Rome"})]}


def test_calls_on_one_event_loop_each_keep_their_own_spans() -> None:
    @mlflow.trace(span_type="TOOL")
    async def slow_lookup(city: str, delay: float) -> str:
        await asyncio.sleep(delay)
        return city.upper()

    async def call(city: str, delay: float) -> tuple[str, list[SpanRecord]]:
        with capture() as spans:
            # the two calls' spans interleave in time on the one loop
            answer = await slow_lookup(city, delay) + await slow_lookup(city, delay)
        return answer, spans

    async def both() -> list[tuple[str, list[SpanRecord]]]:
        return list(await asyncio.gather(call("Paris", 0.02), call("Rome", 0.01)))

    with MlflowSpanCapture() as capture:
        (paris, paris_spans), (rome, rome_spans) = asyncio.run(both())
    assert (paris, rome) == ("PARISPARIS", "ROMEROME")
    assert [s.inputs["city"] for s in paris_spans] == ["Paris", "Paris"]
    assert [s.inputs["city"] for s in rome_spans] == ["Rome", "Rome"]


def test_a_span_still_running_when_the_call_returns_is_not_the_calls() -> None:
    release = threading.Event()

    def background() -> None:
        with mlflow.start_span("left running"):
            release.wait(5)

    with MlflowSpanCapture() as capture:
        def work() -> threading.Thread:
            # in the call's context (as a well-behaved executor passes it on), so the span
            # is a descendant of the call's, but it ends after the call is over
            thread = threading.Thread(target=contextvars.copy_context().run,
                                      args=(background,))
            thread.start()
            return thread

        thread, spans = captured(capture, work)
        release.set()
        thread.join()
    assert spans == []


def test_the_last_run_to_finish_gives_mlflow_its_own_provider_back() -> None:
    outer = MlflowSpanCapture()
    with outer:
        ours = provider.get()
        with MlflowSpanCapture():
            assert provider.get() is ours  # one installation for runs at once
        assert provider.get() is ours
        _, spans = captured(outer, lambda: lookup("Rome"))
        assert len(spans) == 1
    assert provider.get() is not ours


def test_a_provider_mlflow_rebuilt_during_a_run_is_replaced_at_the_next_call() -> None:
    with MlflowSpanCapture() as capture:
        mlflow.tracing.reset()  # what set_destination, enable, ... do
        _, spans = captured(capture, lambda: lookup("Paris"))
    assert [s.name for s in spans] == ["lookup"]


def test_a_capture_pickles_as_its_class_alone() -> None:
    capture = pickle.loads(pickle.dumps(MlflowSpanCapture()))
    assert isinstance(capture, MlflowSpanCapture)
    assert len(pickle.dumps(capture)) < 100


@pytest.fixture(autouse=True)
def no_call_left_open() -> Any:
    """Whatever other tests of the process left open, a call leaves nothing behind."""
    before = open_traces()
    yield
    assert open_traces() == before
