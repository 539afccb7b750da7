"""Cost before and during a run, end to end: eval.py's command line on a real local MLflow
store, the component and the judge behind the OpenAI-compatible stub over real HTTP.

``--estimate`` makes no request (counted at the stub) and predicts the cost the next run then
logs, a sequential run's within the range it states; ``MAX_COST_USD`` stops a run (KILLED,
tagged, resumable), ``--resume`` finishes it, and a run whose estimate is above the limit is
refused unless ``--ignore-estimate``.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry
from tests.support.builders import entry, write_dataset
from tests.support.commands import eval_script
from tests.support.openai_stub import OpenAIStub

# Every word of a request is a prompt token at the stub; the component's model costs $0.001
# per input token, so an entry of five words costs $0.005 a call.
PRICES = {"comp": (1000.0, 0.0), "stub-judge": (100.0, 50.0)}


def _component(stub: OpenAIStub) -> Any:
    import openai

    client = openai.OpenAI(base_url=stub.base_url, api_key="sk-component-key", max_retries=0)

    def invoke_component(entry: Entry, call: Call) -> str:
        response = call.record_llm_response(client.chat.completions.create(
            model="comp", messages=[{"role": "user", "content": str(entry.input)}]))
        return str(response.choices[0].message.content)
    return invoke_component


def _constants(tmp_path: Path, entries: dict[str, Any], **more: Any) -> dict[str, Any]:
    dataset = write_dataset(tmp_path / "ds", entries)
    return {"EXPERIMENT_NAME": f"cost/{uuid.uuid4().hex[:10]}", "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0,
            "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0, "REPEAT_COUNT": 3,
            "TOKEN_PRICES": PRICES, "TRACE_CALLS": False, **more}


def _runs(tracking_uri: str, experiment: str) -> list[Any]:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return []
    return client.search_runs([found.experiment_id], order_by=["attributes.start_time DESC"])


def test_the_estimate_calls_nothing_and_predicts_what_the_next_run_logs(
        tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    entries = {"short": entry("functional", input="one two"),
               "long": entry("functional", input="one two three four five six seven"),
               "again": entry("functional", "repeatability", input="one two three"),
               "mid": entry("functional", input="one two three four")}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-key")
    with OpenAIStub() as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        constants = _constants(tmp_path, entries, SCORER="llm_judge",
                               SCORER_REPEATABILITY="exact", JUDGE_MODEL="stub-judge",
                               JUDGE_REPEATS=2)
        component = _component(stub)
        # before any run: calls only, and no request
        assert eval_script(constants, component, "--type=all", "--estimate") == 0
        first = capsys.readouterr().out
        assert "4 entries, 6 component calls, 8 judge calls at most; nothing was called" in first
        assert "no earlier finished run in this experiment: calls only" in first
        assert stub.chat_requests() == [] and _runs(tracking_uri,
                                                    constants["EXPERIMENT_NAME"]) == []

        assert eval_script(constants, component, "--type=all") == 0
        requests = len(stub.chat_requests())  # the judge's preflight, 6 calls, 8 judgements
        assert requests == 1 + 6 + 8
        capsys.readouterr()

        path = tmp_path / "estimate.json"
        assert eval_script(constants, component, "--type=all", "--estimate",
                           "--json", str(path)) == 0
        assert len(stub.chat_requests()) == requests  # nothing called, not even the preflight
        shown = capsys.readouterr().out
        estimate = json.loads(path.read_text(encoding="utf-8"))
        assert len(_runs(tracking_uri, constants["EXPERIMENT_NAME"])) == 1  # no run made

        assert eval_script(constants, component, "--type=all") == 0
    latest = _runs(tracking_uri, constants["EXPERIMENT_NAME"])[0].data.metrics
    logged = latest["cost_usd"] + latest["judge_cost_usd"]
    assert estimate["mode"] == "estimate" and estimate["exit_status"] == 0
    assert (estimate["component"]["calls"], estimate["judge"]["calls"]) == (6, 8)
    assert (estimate["component"]["sampled_calls"], estimate["judge"]["sampled_calls"]) == (6, 8)
    cost = estimate["cost_usd"]
    assert cost["low"] <= logged <= cost["high"]
    # the stub's usage is the same on the same inputs: the point estimate is the cost itself
    assert cost["estimate"] == pytest.approx(logged, rel=1e-9)
    assert estimate["tokens"]["estimate"] == pytest.approx(
        latest["tokens_total"] + latest["judge_tokens_total"])
    assert "sequential_cost_usd" not in estimate  # a sequential run's only
    assert f"estimate: total {estimate['tokens']['estimate']:,.0f} tokens" in shown
    assert "95% prediction intervals" in shown


def test_max_cost_usd_stops_a_run_that_resume_finishes_and_refuses_one_over_its_estimate(
        tmp_path: Path, tracking_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    entries = {f"e{i}": entry("functional", input="a b c d e") for i in range(10)}
    with OpenAIStub() as stub:
        component = _component(stub)
        constants = _constants(tmp_path, entries, MAX_COST_USD=0.022, MAX_CONCURRENCY=1)
        experiment = constants["EXPERIMENT_NAME"]
        # $0.005 a call: after 4 calls $0.020 is spent and a fifth would pass $0.022
        assert eval_script(constants, component, "--type=all") == 7
        err = capsys.readouterr().err
        (stopped,) = _runs(tracking_uri, experiment)
        run_id = stopped.info.run_id
        assert len(stub.chat_requests()) == 4
        assert stopped.info.status == "KILLED"
        assert stopped.data.tags["stopped_for"] == "budget"
        assert f"stopped for budget: run {run_id} spent $0.020 on 4 calls" in err
        assert f"continue it with: python eval.py --resume {run_id}" in err

        # the resume may spend MAX_COST_USD again; raised, it makes the 6 missing calls
        assert eval_script({**constants, "MAX_COST_USD": 1.0}, component,
                           "--resume", run_id) == 0
        assert len(stub.chat_requests()) == 10
        (finished,) = _runs(tracking_uri, experiment)
        assert finished.info.status == "FINISHED" and finished.data.tags["resumed"] == "true"
        assert finished.data.metrics["cost_usd"] == pytest.approx(0.050)
        capsys.readouterr()

        # now the last run says $0.050: a new run under $0.022 is refused before it starts
        assert eval_script(constants, component, "--type=all") == 7
        err = capsys.readouterr().err
        assert "estimated to cost $0.050" in err and "nothing was started" in err
        assert len(stub.chat_requests()) == 10 and len(_runs(tracking_uri, experiment)) == 1

        # forced, it starts, and the limit stops it as before
        assert eval_script(constants, component, "--type=all", "--ignore-estimate") == 7
        assert len(stub.chat_requests()) == 14
        assert _runs(tracking_uri, experiment)[0].info.status == "KILLED"


def test_the_estimate_of_a_sequential_run_calls_nothing_and_holds_what_the_run_logs(
        tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # 60 entries of one to four words, every fifth also a repeatability entry; the stub's
    # judge and the component both answer "1": every verdict right, so each type settles early
    entries = {f"e{i:02d}": entry("functional", *(("repeatability",) if i % 5 == 0 else ()),
                                  input=" ".join(["word"] * (1 + i % 4))) for i in range(60)}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-key")
    with OpenAIStub() as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        constants = _constants(tmp_path, entries, SCORER="llm_judge",
                               SCORER_REPEATABILITY="exact", JUDGE_MODEL="stub-judge",
                               EVAL_MIN_ACCURACY=0.5, EVAL_MIN_ACCURACY_REPEATABILITY=0.5)
        component = _component(stub)
        assert eval_script(constants, component, "--type=all") == 0  # the run it rests on
        requests = len(stub.chat_requests())
        capsys.readouterr()

        path = tmp_path / "estimate.json"
        assert eval_script(constants, component, "--type=all", "--estimate", "--sequential",
                           "--json", str(path)) == 0
        assert len(stub.chat_requests()) == requests  # nothing called, not even the preflight
        shown = capsys.readouterr().out
        estimate = json.loads(path.read_text(encoding="utf-8"))
        assert len(_runs(tracking_uri, constants["EXPERIMENT_NAME"])) == 1  # no run made

        assert eval_script(constants, component, "--type=all", "--sequential") == 0
    latest = _runs(tracking_uri, constants["EXPERIMENT_NAME"])[0]
    assert latest.data.tags["sequential"] == "dataset"
    metrics = latest.data.metrics
    sequential = estimate["sequential"]
    called = sequential["entries_called"]
    assert called["low"] <= metrics["sequential_entries_called"] <= called["high"] < 60
    logged = metrics["cost_usd"] + metrics["judge_cost_usd"]
    cost = estimate["sequential_cost_usd"]
    assert cost["low"] <= logged <= cost["high"] < estimate["cost_usd"]["estimate"]
    assert (f"estimate: sequential (dataset): {called['low']}-{called['high']} of 60 entries "
            f"(median {called['median']})") in shown
