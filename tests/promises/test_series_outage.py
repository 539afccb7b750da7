"""A replicate series that loses its tracking server, in memory: every replicate makes all its
calls offline, and after sync each trace and the series' stability are there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit import RunContext, Selection, TrackingOffline
from evalkit.evaluation import evaluate_replicates
from evalkit.tracking import Tracker
from tests.support.outages import STABILITY, series_answer, series_config
from tests.support.servers import FlakyServer, Outage
from tests.support.traces import (
    assert_memory_traces_match_results,
    memory_assessments,
)


def test_a_series_that_went_offline_gets_every_trace_and_its_stability_after_sync(
        tmp_path: Path) -> None:
    server = FlakyServer()
    tracker = Tracker(backend=server, bundles_dir=tmp_path / "bundles")
    outage = Outage(server, 2)  # during replicate 0; the server stays down for 1 and 2
    with pytest.raises(TrackingOffline) as offline:
        evaluate_replicates(series_config(tmp_path, "outage/replicates"), series_answer(outage),
                            Selection("functional"),
                            RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert len(offline.value.bundles) == 4  # the three replicates and the parent
    assert len(outage.calls) == 3 * 3  # every replicate made all its calls
    parent_id = json.loads((offline.value.bundles[-1] / "bundle.json").read_text())["run_id"]
    known = set(server.journals)  # the parent and replicate 0 began before the outage

    server.down = False
    synced = [tracker.upload(bundle) for bundle in offline.value.bundles]
    assert synced[-1] == parent_id and synced[0] in known
    assert not set(synced[1:3]) & known  # begun offline: created by sync
    children = {int(tracker.reader.stored(r).tags["replicate"]): r for r in synced[:3]}
    assert sorted(children) == [0, 1, 2]
    for run_id in [parent_id, *children.values()]:
        stored = tracker.reader.stored(run_id)
        assert stored.status == "FINISHED"
        if run_id != parent_id:
            assert stored.tags["mlflow.parentRunId"] == parent_id
            assert_memory_traces_match_results(server, run_id)
    stability = {entry_id: [(a.value, a.rationale) for a in held["functional_stability"]]
                 for entry_id, held in memory_assessments(tracker, children[2]).items()}
    assert stability == STABILITY
    for earlier in (0, 1):  # only the replicate that completes the series carries them
        assert all("functional_stability" not in held
                   for held in memory_assessments(tracker, children[earlier]).values())
    for bundle in offline.value.bundles:  # a second sync adds nothing
        tracker.upload(bundle)
    assert {e: [(a.value, a.rationale) for a in held["functional_stability"]]
            for e, held in memory_assessments(tracker, children[2]).items()} == STABILITY


class DownAfterReplicate0(FlakyServer):
    """Goes down once replicate 0 has finished: between two runs, no write has failed yet."""

    def set_status(self, run_id: str, status: str) -> None:
        super().set_status(run_id, status)
        if status == "FINISHED" and self.journals[run_id].tags.get("replicate") == "0":
            self.down = True


def test_a_series_whose_server_goes_down_between_two_replicates_goes_on_offline(
        tmp_path: Path) -> None:
    server = DownAfterReplicate0()
    tracker = Tracker(backend=server, bundles_dir=tmp_path / "bundles")
    outage = Outage(server, 10**6)  # never strikes: the server goes down on its own
    with pytest.raises(TrackingOffline) as offline:
        evaluate_replicates(series_config(tmp_path, "outage/between"), series_answer(outage),
                            Selection("functional"),
                            RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert len(outage.calls) == 3 * 3  # replicates 1 and 2 still made all their calls
    assert len(offline.value.bundles) == 3  # replicates 1 and 2 (begun offline), the parent
    assert str(offline.value).endswith(
        "evalkit sync " + " ".join(str(b) for b in offline.value.bundles))
    server.down = False
    synced = [tracker.upload(bundle) for bundle in offline.value.bundles]
    assert all(tracker.reader.stored(r).status == "FINISHED" for r in synced)
    assert sorted(int(tracker.reader.stored(r).tags["replicate"]) for r in synced[:2]) == [1, 2]
