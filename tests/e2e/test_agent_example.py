"""examples/agent/eval.py, the LangGraph agent, run as a user runs it (its own ``run_eval_script``
with its own constants) against the OpenAI stub's tool calling, under
``mlflow.langchain.autolog()``, on a real local store: each entry's trace holds the agent's
whole LangGraph run under the call's span (the graph, each model request with its tokens,
each tool with its arguments), no other experiment gains a trace, the trajectory verdict is on
every trace, and the run's tokens and cost are the sum of the model spans' usage. A model that
calls a forbidden tool fails the ``safety`` type with a rationale naming the call.

Needs the agent extra (``make test-slow`` installs it into .venv).
"""

from __future__ import annotations

import json
import runpy
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlflow
import pytest

from evalkit import run_eval_script
from evalkit.cli._init import init_command
from evalkit.records import ScoredRun, names
from tests.support.openai_stub import OpenAIStub, requested_calls
from tests.support.traces import traces_of

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "agent" / "eval.py"
DATASET = SCRIPT.parent / "datasets" / "orders"
EXPERIMENT = "orders-agent/orders"
TOOLS = {"lookup_order", "refund_order"}


@pytest.fixture(scope="module")
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


@pytest.fixture
def example(stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The eval script's globals, its agent pointed at the stub; langchain autolog (which the
    script turns on) is off again afterwards."""
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    # offline: MLflow would fetch its model catalog (prices of known models) from GitHub
    monkeypatch.setenv("MLFLOW_MODEL_CATALOG_URI", "")
    try:
        namespace = runpy.run_path(str(SCRIPT), run_name="agent_example")
    except SystemExit as missing:
        pytest.fail(f"{missing}; `make test-slow` installs the agent extra", pytrace=False)
    yield namespace
    mlflow.langchain.autolog(disable=True)


def run_example(namespace: dict[str, Any]) -> tuple[int, str]:
    """One call, as ``python examples/agent/eval.py --type=all``: (exit status, run id)."""
    status = run_eval_script(namespace, namespace["invoke_component"], ["--type=all"],
                             script=str(SCRIPT))
    client = mlflow.MlflowClient()
    experiment = client.get_experiment_by_name(EXPERIMENT)
    (latest,) = client.search_runs([experiment.experiment_id], order_by=["start_time DESC"],
                                   max_results=1)
    return status, latest.info.run_id


def trace_counts(tracking_uri: str) -> dict[str, int]:
    client = mlflow.MlflowClient(tracking_uri)
    return {e.name: len(client.search_traces(locations=[e.experiment_id], max_results=1000))
            for e in client.search_experiments()}


def entries(dataset: Path) -> dict[str, dict[str, Any]]:
    return {str(p.relative_to(dataset / "data").with_suffix("")):
            json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((dataset / "data").rglob("*.json"))}


def descendants(spans: list[Any], root: Any) -> list[Any]:
    """The spans under ``root``, at any depth, in the order they started."""
    children: dict[str, list[Any]] = {}
    for span in spans:
        children.setdefault(span.parent_id, []).append(span)
    found, todo = [], [root]
    while todo:
        found += (under := children.get(todo.pop().span_id, []))
        todo += under
    return sorted(found, key=lambda s: s.start_time_ns)


def test_the_agent_example_keeps_langgraphs_spans_in_each_entrys_trace(
        example: dict[str, Any], stub: OpenAIStub, tracking_uri: str) -> None:
    before = trace_counts(tracking_uri)
    requests_before = len(stub.chat_requests())
    status, run_id = run_example(example)
    assert status == 0

    dataset = entries(DATASET)
    traces = {t.info.tags["mlflow.traceName"]: t for t in traces_of(tracking_uri, run_id)}
    assert set(traces) == set(dataset)  # traces == entries
    after = trace_counts(tracking_uri)
    gained = {name: count - before.get(name, 0) for name, count in after.items()}
    assert {name: n for name, n in gained.items() if n} == {EXPERIMENT: len(dataset)}
    assert gained.get("Default", 0) == 0

    chat_usage = []
    for entry_id, trace in traces.items():
        spans = trace.data.spans
        (root,) = [s for s in spans if s.parent_id is None]
        (call,) = [s for s in spans if s.parent_id == root.span_id]
        assert call.name == "call 0"
        (graph,) = [s for s in spans if s.parent_id == call.span_id]
        assert graph.name == "orders-agent"  # the compiled graph, LangGraph's root span
        under = descendants(spans, graph)
        assert len(under) == len(spans) - 3  # every span of the agent is under the graph's
        tools = [s for s in under if s.span_type == "TOOL"]
        chats = [s for s in under if s.span_type == "CHAT_MODEL"]
        # the stub makes the calls the input names, in its order, one model request each
        named = requested_calls(dataset[entry_id]["input"], TOOLS)
        assert [(s.name, s.inputs) for s in tools] == named
        assert [s.name for s in chats] == ["ChatOpenAI"] * (len(named) + 1)
        for span in chats:
            usage = span.attributes["mlflow.chat.tokenUsage"]
            assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
            chat_usage.append(usage)
        verdicts = {a.name: a for a in trace.info.assessments
                    if a.feedback is not None and a.name in ("functional", "safety")}
        assert verdicts["functional"].value is True
        assert verdicts["safety"].value is True
        assert verdicts["safety"].source.source_id == "evalkit.trajectory"
        assert trace.info.token_usage["total_tokens"] == sum(
            s.attributes["mlflow.chat.tokenUsage"]["total_tokens"] for s in chats)

    assert len(chat_usage) == len(stub.chat_requests()) - requests_before == 12
    metrics = mlflow.MlflowClient(tracking_uri).get_run(run_id).data.metrics
    tokens_in = sum(u["input_tokens"] for u in chat_usage)
    tokens_out = sum(u["output_tokens"] for u in chat_usage)
    assert (metrics["tokens_input"], metrics["tokens_output"], metrics["tokens_total"]) == (
        tokens_in, tokens_out, tokens_in + tokens_out)
    input_price, output_price = example["TOKEN_PRICES"][example["COMPONENT_MODEL"]]
    assert metrics["cost_usd"] == pytest.approx(
        (tokens_in * input_price + tokens_out * output_price) / 1e6)
    assert metrics["safety_accuracy"] == metrics["functional_accuracy"] == 1.0


def test_a_forbidden_refund_fails_safety_with_the_call_named(
        example: dict[str, Any], tmp_path: Path, tracking_uri: str) -> None:
    # The model refunds the order in transit: the answer may look fine, the trajectory not.
    dataset = tmp_path / "orders"
    shutil.copytree(DATASET, dataset)
    entry = dataset / "data" / "refunds" / "not-delivered.json"
    late = json.loads(entry.read_text(encoding="utf-8"))
    late["input"] += ' refund_order(order_id="B-22", amount=25.0)'
    entry.write_text(json.dumps(late), encoding="utf-8")
    example["DATASET_PATH"] = str(dataset)

    status, run_id = run_example(example)
    assert status == 1  # safety below its threshold
    traces = {t.info.tags["mlflow.traceName"]: t for t in traces_of(tracking_uri, run_id)}
    verdicts = {name: {a.name: a for a in t.info.assessments if a.feedback is not None}
                for name, t in traces.items()}
    assert [n for n, v in verdicts.items() if v["safety"].value is not True] == [
        "refunds/not-delivered"]
    assert verdicts["refunds/not-delivered"]["safety"].rationale.startswith("FAIL")
    client = mlflow.MlflowClient(tracking_uri)
    scored = ScoredRun.from_json(json.loads(Path(client.download_artifacts(
        run_id, names.EVALUATION_ARTIFACT)).read_text(encoding="utf-8")))
    (safety,) = [r for r in scored.types if r.test_type == "safety"]
    (failed,) = [i for i in safety.items if not i.passed]
    assert failed.entry_ids == ("refunds/not-delivered",)
    assert failed.rationale == ("called forbidden tool 'refund_order' with "
                                "{'order_id': 'B-22', 'amount': 25.0} (call #2)")
    metrics = mlflow.MlflowClient(tracking_uri).get_run(run_id).data.metrics
    assert metrics["safety_accuracy"] == pytest.approx(4 / 5)


def test_evalkit_init_template_agent_writes_the_example_which_runs_where_it_lands(
        stub: OpenAIStub, tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "my-agent"
    assert init_command(project, None, None, "agent") == 0
    assert "pip install 'evalkit-mlflow[agent]'" in capsys.readouterr().out
    written = sorted(p.relative_to(project).as_posix() for p in project.rglob("*")
                     if p.is_file())
    example = sorted(f"datasets/orders/{p.relative_to(DATASET).as_posix()}"
                     for p in DATASET.rglob("*") if p.is_file())
    assert written == sorted([".gitignore", "Makefile", "eval.py", *example])
    assert (project / "eval.py").read_bytes() == SCRIPT.read_bytes()

    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("MLFLOW_MODEL_CATALOG_URI", "")
    monkeypatch.chdir(project)
    namespace = runpy.run_path(str(project / "eval.py"), run_name="scaffolded_agent")
    try:
        assert namespace["DATASET_PATH"] == str(project / "datasets" / "orders")
        status = run_eval_script(namespace, namespace["invoke_component"], ["--type=all"],
                                 script=str(project / "eval.py"))
    finally:
        mlflow.langchain.autolog(disable=True)
    assert status == 0
