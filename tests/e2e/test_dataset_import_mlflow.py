"""``evalkit dataset import`` from MLflow: the records of a GenAI evaluation dataset and an
experiment's traces (filtered), on a real local store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.dataset import load_dataset
from tests.support.commands import evalkit_command

pytestmark = pytest.mark.mlflow_api


def test_an_mlflow_evaluation_dataset_becomes_a_golden_dataset(
        tracking_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import mlflow
    from mlflow.genai.datasets import create_dataset

    name = f"capitals-{tmp_path.name}"
    experiment = mlflow.set_experiment(f"import/{tmp_path.name}")
    create_dataset(name=name, experiment_id=experiment.experiment_id).merge_records([
        {"inputs": {"question": "Capital of France?"},
         "expectations": {"expected_response": "Paris"}},
        {"inputs": {"question": "Capital of Japan?"},
         "expectations": {"expected_response": "Tokyo"}}])
    assert evalkit_command("dataset", "import", f"mlflow-dataset:{name}", "--to", "ds",
                           "--expected", "expectations.expected_response") == 0, \
        capsys.readouterr().err
    assert "ignored columns: outputs, record_id, tags" in capsys.readouterr().out
    entries = load_dataset("ds").entries
    assert sorted((e.input["question"], e.expected_output) for e in entries) == [
        ("Capital of France?", "Paris"), ("Capital of Japan?", "Tokyo")]
    assert evalkit_command("dataset", "import", "mlflow-dataset:no-such-set", "--to",
                           "other") == 2
    assert "no MLflow evaluation dataset named 'no-such-set'" in capsys.readouterr().err


def test_reviewed_traces_become_a_golden_dataset(
        tracking_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import mlflow

    experiment = f"traced/{tmp_path.name}"
    mlflow.set_experiment(experiment)
    ids = {}
    for question, answer, reviewed in (("Capital of Peru?", "Lima", "yes"),
                                       ("Capital of Chile?", "Santiago", "yes"),
                                       ("Capital of Mars?", "none", "no")):
        with mlflow.start_span(name="answer") as span:
            span.set_inputs({"question": question})
            span.set_outputs(answer)
        mlflow.flush_trace_async_logging()
        mlflow.log_expectation(trace_id=span.trace_id, name="expected_response", value=answer)
        mlflow.set_trace_tag(span.trace_id, "reviewed", reviewed)
        ids[question] = span.trace_id
    assert evalkit_command("dataset", "import", f"traces:{experiment}:tag.reviewed = 'yes'",
                           "--to", "reviewed", "--input", "request.question", "--expected",
                           "expectations.expected_response", "--id", "trace_id") == 0, \
        capsys.readouterr().err
    assert {(e.id, e.input, e.expected_output) for e in load_dataset("reviewed").entries} == {
        (ids["Capital of Peru?"], "Capital of Peru?", "Lima"),
        (ids["Capital of Chile?"], "Capital of Chile?", "Santiago")}
    schema = json.loads(Path("reviewed/dataset.schema.json").read_text(encoding="utf-8"))
    assert schema["properties"]["input"] == {"type": "string"}
    # Without --input/--expected: the request (an object) and the response
    assert evalkit_command("dataset", "import", f"traces:{experiment}", "--to", "all") == 0
    assert sorted((e.input["question"], e.expected_output)
                  for e in load_dataset("all").entries)[0] == ("Capital of Chile?", "Santiago")
    assert evalkit_command("dataset", "import", f"traces:{experiment}:reviewed ==", "--to",
                           "bad") == 2
    assert "traces filter 'reviewed ==':" in capsys.readouterr().err
    assert not Path("bad").exists()


def test_a_reviewed_traces_tool_spans_become_its_expected_tool_calls(
        tracking_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import mlflow
    from mlflow.entities import SpanType

    @mlflow.trace(span_type=SpanType.TOOL)
    def lookup(city: str, units: str = "metric") -> str:
        return f"{city}: 20C"

    @mlflow.trace(span_type=SpanType.TOOL)
    def book(hotel: str) -> str:
        return "booked"

    @mlflow.trace(span_type=SpanType.AGENT)
    def agent(question: str) -> str:
        with mlflow.start_span("plan"):
            pass
        lookup("Rome")
        return book("Roma")

    experiment = f"agent/{tmp_path.name}"
    mlflow.set_experiment(experiment)
    agent("Book me a room in Rome")
    mlflow.flush_trace_async_logging()
    assert evalkit_command("dataset", "import", f"traces:{experiment}", "--to", "agent",
                           "--input", "request.question", "--tool-calls", "tool_calls") == 0, \
        capsys.readouterr().err
    (entry,) = load_dataset("agent").entries
    assert (entry.input, entry.expected_output) == ("Book me a room in Rome", "booked")
    assert entry.expected_trajectory == {"tool_calls": [
        {"name": "lookup", "arguments": {"city": "Rome", "units": "metric"}},
        {"name": "book", "arguments": {"hotel": "Roma"}}]}
