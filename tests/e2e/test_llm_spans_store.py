"""The spans of LLM calls on a real local store: each trace's tokens summed from its call and
judge spans.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit import EvalConfig, RunContext, Selection, evaluate
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset
from tests.support.openai_stub import OpenAIStub
from tests.unit.tracking.test_llm_spans import reporting

pytestmark = pytest.mark.mlflow_api


# --- what a real store makes of them --------------------------------------------------------------

def test_a_local_store_sums_each_traces_tokens_from_its_call_and_judge_spans(
        tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``trace.info.token_usage`` (the trace list's tokens, the Overview's Token Usage) is
    the store's sum of the spans' ``mlflow.chat.tokenUsage``: the component's and the
    judge's."""
    import mlflow

    monkeypatch.setenv("OPENAI_API_KEY", "sk-store-usage-key")
    dataset = write_dataset(tmp_path / "ds", {"ok": entry("functional")})
    with OpenAIStub() as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        config = EvalConfig.from_constants({
            "EXPERIMENT_NAME": "spans/store-usage", "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0,
            "SCORER": "llm_judge", "JUDGE_MODEL": "stub-judge",
            "TOKEN_PRICES": {"gpt-x": (1.0, 10.0), "stub-judge": (2.0, 0.0)}}, "eval.py")
        outcome = evaluate(config, reporting, Selection("all"),
                           RunContext(tracker=Tracker(tracking_uri), runs_dir=tmp_path / "runs"))
    (judge_call,) = outcome.scored.types[0].items[0].judge_calls
    assert judge_call.usage is not None
    judge_in = judge_call.usage.input_tokens
    client = mlflow.MlflowClient(tracking_uri)
    experiment = client.get_run(outcome.run_id).info.experiment_id
    (trace,) = client.search_traces(locations=[experiment], run_id=outcome.run_id)
    assert trace.info.token_usage == {"input_tokens": 100 + judge_in, "output_tokens": 11,
                                      "total_tokens": 111 + judge_in}
    call, judge = trace.data.spans[1:]
    assert (call.name, call.span_type, judge.name, judge.span_type) == (
        "call 0", "LLM", "judge: functional", "CHAT_MODEL")
    assert call.attributes["mlflow.llm.cost"] == pytest.approx(
        {"input_cost": 100e-6, "output_cost": 100e-6, "total_cost": 200e-6})
    assert judge.attributes["mlflow.llm.cost"]["total_cost"] == pytest.approx(2e-6 * judge_in)
    metrics = client.get_run(outcome.run_id).data.metrics
    assert (metrics["tokens_total"], metrics["judge_tokens_total"]) == (110, judge_in + 1)
