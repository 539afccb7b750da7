"""Traces and assessments survive an outage: a run, or a replicate series, that loses its
tracking server mid-run ends as a bundle, and after ``evalkit sync`` the server holds one trace
per entry with every verdict, as an uninterrupted run would.

What goes into the bundles and comes out of sync is checked against a server in memory that
stops answering on cue in tests/promises/test_series_outage.py; here the same goes through a
real team server (PostgreSQL + MLflow on loopback), whose stored traces sync must not
duplicate."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest

from evalkit import Call, Entry, EvalConfig, RunContext, Selection, TrackingOffline, evaluate
from evalkit.cli._common import _PROCESS_DEFAULTS
from evalkit.evaluation import evaluate_replicates
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset
from tests.support.commands import evalkit_command
from tests.support.outages import STABILITY, series_answer, series_config
from tests.support.servers import Outage
from tests.support.team_server import TeamServer
from tests.support.traces import (
    assert_traces_match_results,
    traces_of,
)


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamServer]:
    with TeamServer.create(tmp_path_factory.mktemp("team")) as server:
        yield server


@pytest.fixture
def bounded_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """MLflow's HTTP retries bounded as the command line bounds them for its process: an
    evaluation called from Python leaves MLflow's defaults, about four minutes of retries per
    request to a server that stopped."""
    for name, value in _PROCESS_DEFAULTS.items():
        monkeypatch.setenv(name, value)


def restart(team: TeamServer) -> None:
    if team.mlflow.process is None or team.mlflow.process.poll() is not None:
        team.mlflow.start()


def sync(bundles: list[Path], team: TeamServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server back, then ``evalkit sync`` (the command's own code, in this process)."""
    restart(team)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", team.tracking_uri)
    assert evalkit_command("sync", *bundles) == 0




def test_200_entries_x_5_repeats_at_concurrency_16_keep_every_trace_through_an_outage(
        tmp_path: Path, team: TeamServer, monkeypatch: pytest.MonkeyPatch,
        bounded_retries: None) -> None:
    dataset = write_dataset(tmp_path / "ds", {f"e{i:03d}": entry("repeatability")
                                              for i in range(200)})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "outage/traces", "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports"), "REPEAT_COUNT": 5,
        "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0, "MAX_CONCURRENCY": 16}, "eval.py")
    outage = Outage(team, 400)  # entries complete in batches of 50 traces streamed meanwhile

    def component(item: Entry, call: Call) -> str:
        outage.tick(item, call)
        return "a" if int(item.id[1:]) % 4 else f"b{call.repeat % 2}"  # every 4th flips

    with pytest.raises(TrackingOffline) as offline:
        evaluate(config, component, Selection("repeatability"),
                 RunContext(tracker=Tracker(team.tracking_uri), runs_dir=tmp_path / "runs"))
    (bundle,) = offline.value.bundles
    run_id = json.loads((bundle / "bundle.json").read_text())["run_id"]
    restart(team)
    before = len(traces_of(team.tracking_uri, run_id))
    assert before < 200  # the outage cut the run's traces short
    sync([bundle], team, monkeypatch)
    assert_traces_match_results(team.tracking_uri, run_id)  # no entry or verdict missing or twice
    traces = traces_of(team.tracking_uri, run_id)
    assert len(traces) == 200
    assert sum(len(t.data.spans) for t in traces) == 200 * (1 + 5)  # each entry and its calls
    verdicts = Counter(a.value for t in traces for a in t.info.assessments
                       if a.name == "repeatability")
    assert verdicts == {True: 150, False: 50}
    run = mlflow.MlflowClient(team.tracking_uri).get_run(run_id)
    assert run.info.status == "FINISHED" and "traces_missing" not in run.data.metrics


def test_a_replicate_series_that_went_offline_gets_its_stability_after_sync(
        tmp_path: Path, team: TeamServer, monkeypatch: pytest.MonkeyPatch,
        bounded_retries: None) -> None:
    outage = Outage(team, 2)  # during replicate 0; the server stays down for 1 and 2
    with pytest.raises(TrackingOffline) as offline:
        evaluate_replicates(series_config(tmp_path, "outage/replicates"), series_answer(outage),
                            Selection("functional"),
                            RunContext(tracker=Tracker(team.tracking_uri),
                                       runs_dir=tmp_path / "runs"))
    assert len(offline.value.bundles) == 4  # the three replicates and the parent
    sync(offline.value.bundles, team, monkeypatch)

    client = mlflow.MlflowClient(team.tracking_uri)
    (parent,) = client.search_runs(
        [client.get_experiment_by_name("outage/replicates").experiment_id],
        filter_string="tags.mode = 'replicates'")
    children = {int(r.data.tags["replicate"]): r for r in client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")}
    assert sorted(children) == [0, 1, 2]
    assert {r.info.status for r in [parent, *children.values()]} == {"FINISHED"}
    for child in children.values():
        assert_traces_match_results(team.tracking_uri, child.info.run_id)
    stability = {t.info.tags["evalkit.entry_id"]: [
        (a.value, a.rationale) for a in t.info.assessments if a.name == "functional_stability"]
        for t in traces_of(team.tracking_uri, children[2].info.run_id)}
    assert stability == STABILITY
    for earlier in (0, 1):  # only the replicate that completes the series carries them
        assert not [a for t in traces_of(team.tracking_uri, children[earlier].info.run_id)
                    for a in t.info.assessments if a.name == "functional_stability"]
