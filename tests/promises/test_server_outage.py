"""A run that loses its tracking server, in memory against a store that stops answering on cue: it
goes on, ends as a local bundle that sync uploads into its own run; stopped during the outage it
leaves its whole bundle; a resume supersedes the bundle and makes only the missing calls, and
refuses a changed dataset.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalkit import (
    Call,
    ConfigError,
    Entry,
    EvalConfig,
    RunContext,
    RunInterrupted,
    Selection,
    TrackingOffline,
    evaluate,
)
from evalkit._errors import TrackingError
from evalkit.calls import Stop
from evalkit.evaluation import resume
from evalkit.reports import render_reports
from evalkit.tracking import Tracker, history
from evalkit.tracking._memory import MemoryBackend
from tests.support.builders import entry, write_dataset
from tests.support.outages import project_config, right_when_0_to_6
from tests.support.servers import FlakyServer, Outage
from tests.support.traces import assert_memory_traces_match_results


@pytest.fixture
def server(tmp_path: Path) -> Tracker:
    return Tracker(backend=FlakyServer(), bundles_dir=tmp_path / ".evalkit" / "bundles")


def test_a_run_that_loses_its_server_goes_on_and_sync_uploads_it(tmp_path: Path,
                                                                  server: Tracker) -> None:
    flaky = server.backend
    assert isinstance(flaky, FlakyServer)
    config = project_config(tmp_path, "team/outage", entries=16)
    outage = Outage(flaky, at=3)

    def component(item: Entry, call: Call) -> str:
        outage.tick(item, call)
        return right_when_0_to_6(item, call)

    with pytest.raises(TrackingOffline) as offline:
        evaluate(config, component, Selection("all"),
                 RunContext(tracker=server, runs_dir=tmp_path / "runs"))
    assert flaky.refused >= 1
    (bundle,) = offline.value.bundles
    assert f"evalkit sync {bundle}" in str(offline.value)
    assert bundle == tmp_path / ".evalkit" / "bundles" / bundle.name
    raw = (bundle / "artifacts" / "raw" / "raw-results.jsonl").read_text().splitlines()
    assert len(raw) == len(outage.calls) == 16 + 3  # the run went on; nothing paid for lost
    bundled = {p.name: p.read_bytes() for p in (bundle / "artifacts" / "reports").iterdir()}
    assert bundled == {p.name: p.read_bytes() for p in (tmp_path / "reports").iterdir()}
    assert set(bundled) == {"report-functional.md", "report-repeatability.md", "summary.md",
                            "convergence-functional.svg", "convergence-repeatability.svg"}
    document = json.loads((bundle / "bundle.json").read_text())
    run_id = document["run_id"]
    assert document["status"] == "FINISHED" and document["params"]["REPEAT_COUNT"] == "3"
    assert server.unsynced_bundles() == [bundle]

    flaky.down = False
    assert server.reader.stored(run_id).status == "RUNNING"  # left dangling by the outage
    assert server.upload(bundle) == run_id  # into its own run
    stored = server.reader.stored(run_id)
    assert stored.status == "FINISHED"
    assert stored.metrics["functional_accuracy"] == pytest.approx(13 / 16)
    assert stored.tags["verdict"] == "PASS"
    for name, content in bundled.items():
        assert flaky.artifact(run_id, f"reports/{name}") == content
    assert flaky.artifact(run_id, "raw/raw-results.jsonl").decode().splitlines() == raw
    assert render_reports(server.reader.fetch(run_id)) == {
        name: content.decode() for name, content in bundled.items() if name.endswith(".md")}
    assert_memory_traces_match_results(flaky, run_id)  # written by sync from the bundle
    metrics = [(p.key, p.step, p.value) for p in flaky.journals[run_id].metrics]
    assert len(metrics) == len(set(metrics))  # each point once, those logged before included
    assert [(r.run_id, r.verdict) for r in history(server.reader, "team/outage")] == [
        (run_id, "PASS")]
    assert server.unsynced_bundles() == []
    assert server.upload(bundle) == run_id  # a second sync changes nothing
    assert [(p.key, p.step, p.value) for p in flaky.journals[run_id].metrics] == metrics


def stopped_during_an_outage(tmp_path: Path, server: Tracker,
                             config: EvalConfig) -> tuple[Path, Outage]:
    """A run the server leaves at its 3rd call, then stopped: its bundle and the outage."""
    flaky = server.backend
    assert isinstance(flaky, FlakyServer)
    stop = Stop()
    outage = Outage(flaky, at=3, stop=stop)

    def component(item: Entry, call: Call) -> str:
        outage.tick(item, call)
        return "a"

    with pytest.raises(RunInterrupted, match="--resume"):
        evaluate(config, component, Selection("all"),
                 RunContext(tracker=server, runs_dir=tmp_path / "runs", stop=stop))
    (bundle,) = server.unsynced_bundles()
    return bundle, outage


def test_a_run_stopped_during_an_outage_leaves_its_whole_bundle(tmp_path: Path,
                                                                server: Tracker) -> None:
    flaky = server.backend
    assert isinstance(flaky, FlakyServer)
    bundle, outage = stopped_during_an_outage(
        tmp_path, server, project_config(tmp_path, "team/stopped", entries=40))
    document = json.loads((bundle / "bundle.json").read_text())
    assert document["status"] == "KILLED"
    raw = (bundle / "artifacts" / "raw" / "raw-results.jsonl").read_text().splitlines()
    assert [tuple(json.loads(line)[k] for k in ("entry_id", "repeat")) for line in raw] == \
        outage.calls  # every call paid for, none invented
    assert 3 <= len(raw) < 40 + 3
    run_id = document["run_id"]

    flaky.down = False
    assert server.reader.stored(run_id).status == "RUNNING"  # the server never heard
    assert server.upload(bundle) == run_id
    assert server.reader.stored(run_id).status == "KILLED"
    assert flaky.artifact(run_id, "raw/raw-results.jsonl").decode().splitlines() == raw


def test_a_resume_after_the_outage_supersedes_the_bundle_it_left(tmp_path: Path,
                                                                  server: Tracker) -> None:
    flaky = server.backend
    assert isinstance(flaky, FlakyServer)
    config = project_config(tmp_path, "team/resumed", entries=10)
    bundle, _ = stopped_during_an_outage(tmp_path, server, config)
    run_id = bundle.name
    flaky.down = False
    resume(config, lambda item, call: "a", run_id,
           RunContext(tracker=server, runs_dir=tmp_path / "runs"))
    assert server.reader.stored(run_id).status == "FINISHED"
    raw = flaky.artifact(run_id, "raw/raw-results.jsonl")
    assert len(raw.splitlines()) == 10 + 3
    assert server.unsynced_bundles() == []  # nothing left to upload: the run holds it all

    with pytest.raises(TrackingError, match=f"run {run_id} was resumed and finished after the "
                                            "bundle .* was saved: the bundle is out of date"):
        server.upload(bundle)  # named by hand, the old bundle still changes nothing
    assert server.reader.stored(run_id).status == "FINISHED"
    assert flaky.artifact(run_id, "raw/raw-results.jsonl") == raw


def interrupted(tmp_path: Path, tracker: Tracker, config: EvalConfig, after: int,
                component: Callable[[Entry, Call], Any], stop: Stop | None = None
                ) -> tuple[str, list[tuple[str, int]]]:
    """A run stopped (by ``stop``) once ``after`` calls are made: its id and the calls it
    made."""
    stop = stop or Stop()
    made: list[tuple[str, int]] = []

    def stopping(item: Entry, call: Call) -> Any:
        made.append((item.id, call.repeat))
        if len(made) == after:
            stop.request()
        return component(item, call)

    with pytest.raises(RunInterrupted) as stopped:
        evaluate(config, stopping, Selection("all"),
                 RunContext(tracker=tracker, runs_dir=tmp_path / "runs", stop=stop))
    run_id = re.search(r"--resume (\w+)", str(stopped.value)).group(1)  # type: ignore[union-attr]
    return run_id, made


def test_an_interrupted_run_resumes_with_only_the_missing_calls(tmp_path: Path,
                                                                tracker: Tracker) -> None:
    reference = evaluate(project_config(tmp_path, "team/resume", reports="reference"),
                         right_when_0_to_6, Selection("all"),
                         RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    config = project_config(tmp_path, "team/resume", reports="interrupted")
    stop = Stop()  # the same one for the resume, as a notebook keeps its own
    run_id, before = interrupted(tmp_path, tracker, config, 5, right_when_0_to_6, stop)
    assert tracker.reader.stored(run_id).status == "KILLED"
    assert len(before) == 5

    after: list[tuple[str, int]] = []

    def component(item: Entry, call: Call) -> str:
        after.append((item.id, call.repeat))
        return right_when_0_to_6(item, call)

    resumed = resume(config, component, run_id,
                     # spent with the run it stopped: this one runs to its end
                     RunContext(tracker=tracker, runs_dir=tmp_path / "runs", stop=stop))
    everything = [(f"e{i:02d}", 0) for i in range(12)] + [("rep", r) for r in range(3)]
    assert sorted(before + after) == sorted(everything)  # each call made exactly once
    stored = tracker.reader.stored(run_id)
    assert resumed.run_id == run_id and stored.status == "FINISHED"
    assert (stored.tags["resumed"], stored.tags["resume_calls_saved"],
            stored.tags["resume_calls_made"]) == ("true", "5", str(len(after)))

    def stable(metrics: Any) -> dict[str, float]:
        return {k: v for k, v in metrics.items() if "latency" not in k}

    assert stable(stored.metrics) == stable(tracker.reader.stored(reference.run_id).metrics)
    assert isinstance(tracker.backend, MemoryBackend)
    assert_memory_traces_match_results(tracker.backend, run_id)

    def body(report: Path) -> list[str]:
        return [line for line in report.read_text().splitlines()
                if not line.startswith(("- **Date:**", "- **MLflow:**"))]

    for name in ("report-functional.md", "report-repeatability.md"):
        assert body(tmp_path / "interrupted" / name) == body(tmp_path / "reference" / name)
    with pytest.raises(ConfigError, match="nothing to resume"):
        resume(config, component, run_id, RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))


def test_resume_refuses_a_changed_dataset(tmp_path: Path, tracker: Tracker) -> None:
    config = project_config(tmp_path, "team/changed")
    run_id, _ = interrupted(tmp_path, tracker, config, 2, right_when_0_to_6)
    write_dataset(tmp_path / "ds", {"e00": entry("functional", expected="changed")})
    calls: list[str] = []
    with pytest.raises(ConfigError, match=r"dataset_digest.*differ"):
        resume(config, lambda item, call: calls.append(item.id), run_id,
               RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert calls == []
    assert tracker.reader.stored(run_id).status == "KILLED"


def test_the_components_own_spans_reach_the_store_through_sync(tmp_path: Path,
                                                               server: Tracker) -> None:
    import mlflow

    flaky = server.backend
    assert isinstance(flaky, FlakyServer)
    config = project_config(tmp_path, "team/outage-spans", entries=6)
    outage = Outage(flaky, at=2)

    @mlflow.trace(span_type="TOOL")
    def tool(entry_id: str, repeat: int) -> str:
        return f"{entry_id}/{repeat}"

    def component(item: Entry, call: Call) -> str:
        outage.tick(item, call)
        tool(item.id, call.repeat)
        return right_when_0_to_6(item, call)

    with pytest.raises(TrackingOffline) as offline:
        evaluate(config, component, Selection("all"),
                 RunContext(tracker=server, runs_dir=tmp_path / "runs"))
    (bundle,) = offline.value.bundles
    flaky.down = False
    run_id = server.upload(bundle)
    traces = flaky.traces.traces[run_id].values()
    calls = [c for t in traces for c in t.calls]
    assert len(calls) == len(outage.calls)  # every call, those made offline included
    for trace in traces:
        for call in trace.calls:
            (span,) = call.spans
            assert (span.name, span.span_type, span.outputs) == (
                "tool", "TOOL", f"{trace.entry_id}/{call.repeat}")
