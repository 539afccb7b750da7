"""The run object on its own, in memory: the status it ends with, the raw results and lock it
holds, what it writes and reads back, reopening an interrupted run, and its traces."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from evalkit import ConfigError, RunInterrupted, TrackingError
from evalkit.records import CallRecord, MetricPoint, ScoredRun, names
from evalkit.tracking import Assessment, Tracker
from evalkit.tracking._memory import MemoryBackend


def start(tracker: Tracker, tmp_path: Path, traced: bool = False) -> Any:
    return tracker.run("tests/run", "a-run", {"P": "1"}, {"mode_free": "yes"},
                       raw_dir=tmp_path / "runs", traced=traced)


@pytest.mark.parametrize(("raised", "status"), [
    (None, "FINISHED"), (RunInterrupted("stop"), "KILLED"), (KeyboardInterrupt(), "KILLED"),
    (OSError("disk full"), "FAILED")])
def test_the_exit_sets_the_status_and_uploads_the_raw_results(
        tracker: Tracker, tmp_path: Path, raised: BaseException | None, status: str) -> None:
    expected = pytest.raises(type(raised)) if raised else contextlib.nullcontext()
    with expected, start(tracker, tmp_path) as run:
        run.raw.append(CallRecord("e", 0, "out", None, 1.0))
        if raised:
            raise raised
    stored = tracker.reader.stored(run.id)
    assert stored.status == status
    assert stored.params == {"P": "1"} and stored.tags["mode_free"] == "yes"
    raw = tracker.reader.read_text(run.id, names.RAW_RESULTS_ARTIFACT)
    assert [json.loads(line)["output"] for line in raw.splitlines()] == ["out"]


class RawUploadFails(MemoryBackend):
    """A store whose first upload of raw results fails with ``error``."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error: BaseException | None = error

    def log_artifact(self, run_id: str, path: str, content: Path | bytes) -> None:
        if path.startswith(f"{names.RAW_ARTIFACT_DIR}/") and self.error is not None:
            error, self.error = self.error, None
            raise error
        super().log_artifact(run_id, path, content)


@pytest.mark.parametrize(("error", "status"), [
    (OSError(28, "No space left on device"), "FAILED"), (KeyboardInterrupt(), "KILLED")])
def test_a_run_whose_closing_fails_still_ends_with_a_final_status(
        tmp_path: Path, error: BaseException, status: str) -> None:
    tracker = Tracker(backend=RawUploadFails(error))
    with pytest.raises(type(error)), start(tracker, tmp_path) as run:
        run.raw.append(CallRecord("e", 0, "out", None, 1.0))
    assert tracker.reader.stored(run.id).status == status  # never left RUNNING
    with tracker.reopen(run.id, tmp_path / "runs") as again:  # the lock went with it
        assert list(again.recorded) == [("e", 0)]
    assert tracker.reader.stored(run.id).status == "FINISHED"


class ParamsRefused(MemoryBackend):
    """A store that creates a run, then fails on its params with ``error``."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    def log_batch(self, run_id: str, **logged: Any) -> None:
        raise self.error


@pytest.mark.parametrize(("error", "raised", "status"), [
    (OSError("database is locked"), TrackingError, "FAILED"),
    (KeyboardInterrupt(), KeyboardInterrupt, "KILLED")])
def test_a_run_that_cannot_be_started_is_not_left_running(
        error: BaseException, raised: type[BaseException], status: str) -> None:
    backend = ParamsRefused(error)
    with pytest.raises(raised):
        Tracker(backend=backend).run("tests/run", "a-run", {"P": "1"}, {})
    assert [j.status for j in backend.journals.values()] == [status]


def test_a_second_holder_of_the_same_run_is_refused(tracker: Tracker, tmp_path: Path) -> None:
    with pytest.raises(RunInterrupted), start(tracker, tmp_path) as run:
        with pytest.raises(ConfigError, match="being worked on by another process"):
            tracker.reopen(run.id, tmp_path / "runs")
        raise RunInterrupted("stop")
    with tracker.reopen(run.id, tmp_path / "runs") as again:  # released with the first
        assert again.id == run.id


def test_reopening_finds_the_recorded_calls_and_refuses_a_finished_run(
        tracker: Tracker, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(RunInterrupted), start(tracker, tmp_path) as run:
        run.raw.append(CallRecord("a", 0, "A", None, 1.0))
        run.raw.append(CallRecord("b", 0, None, "Boom: no", 2.0))
        raise RunInterrupted("stop")
    raw = tmp_path / "runs" / run.id / names.RAW_RESULTS_FILE
    raw.write_text(raw.read_text() + '{"entry_id": "c", "rep')  # a kill mid-write
    with tracker.reopen(run.id, tmp_path / "runs") as reopened:
        assert tracker.reader.stored(run.id).status == "RUNNING"
        assert {k: r.output for k, r in reopened.recorded.items()} == {("a", 0): "A",
                                                                       ("b", 0): None}
    assert "was cut mid-write" in caplog.text
    with pytest.raises(ConfigError, match=f"run {run.id} finished: there is nothing to resume"):
        tracker.reopen(run.id, tmp_path / "runs")


def test_a_reopened_run_gets_its_raw_results_back_from_the_store(
        tracker: Tracker, tmp_path: Path) -> None:
    with pytest.raises(RunInterrupted), start(tracker, tmp_path) as run:
        run.raw.append(CallRecord("a", 0, "A", None, 1.0))
        raise RunInterrupted("stop")
    (tmp_path / "runs" / run.id / names.RAW_RESULTS_FILE).unlink()  # another machine
    with tracker.reopen(run.id, tmp_path / "runs") as reopened:
        assert list(reopened.recorded) == [("a", 0)]


def test_a_resumed_run_logs_no_point_twice(tracker: Tracker, tmp_path: Path) -> None:
    with pytest.raises(RunInterrupted), start(tracker, tmp_path) as run:
        run.log([MetricPoint("m", 1.0, 0), MetricPoint("series", 0.5, 1)])
        raise RunInterrupted("stop")
    with tracker.reopen(run.id, tmp_path / "runs") as reopened:
        reopened.log([MetricPoint("m", 1.0, 0), MetricPoint("series", 0.5, 1),
                      MetricPoint("series", 0.7, 2)])
    history = tracker.backend.metric_history(run.id, "series")
    assert [(p.step, p.value) for p in history] == [(1, 0.5), (2, 0.7)]
    assert len(tracker.backend.metric_history(run.id, "m")) == 1


def test_reports_go_to_the_run_and_only_the_named_ones_to_the_folder(
        tracker: Tracker, tmp_path: Path) -> None:
    with start(tracker, tmp_path) as run:
        written = run.publish_reports({"summary.md": "s\n", "report-x.md": "x\n"},
                                      tmp_path / "reports", local=["report-x.md"])
    assert written == (tmp_path / "reports" / "report-x.md",)
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["report-x.md"]
    assert tracker.reader.read_text(run.id, "reports/summary.md") == "s\n"
    assert tracker.reader.read_text(run.id, "reports/report-x.md") == "x\n"


def test_a_run_without_raw_results_has_none(tracker: Tracker) -> None:
    with tracker.run("tests/run", "plan", {}, {}) as run:
        with pytest.raises(TrackingError, match="keeps no raw results"):
            _ = run.raw
        assert run.recorded == {}


def test_too_long_a_param_is_refused_before_the_run_exists(tracker: Tracker) -> None:
    with pytest.raises(TrackingError, match="6001 characters long; MLflow keeps at most 6000"):
        tracker.run("tests/run", "a-run", {"P": "x" * 6001}, {})
    assert tracker.backend.experiment_id("tests/run", create=False) is None


def test_children_are_nested_under_their_parent(tracker: Tracker, tmp_path: Path) -> None:
    with tracker.run("tests/series", "parent", {}, {}) as parent, \
            parent.child("r0", {"P": "0"}, {"replicate": "0"}, raw_dir=tmp_path) as child:
        child.log([MetricPoint("m", 1.0)])
    assert tracker.reader.stored(child.id).status == "FINISHED"
    assert tracker.reader.stored(child.id).tags[names.PARENT_RUN_TAG] == parent.id
    assert [r.run_id for r in tracker.reader.evaluation_runs("tests/series")] == [parent.id]


def test_traces_stream_in_batches_and_verdicts_are_counted(
        tracker: Tracker, tmp_path: Path) -> None:
    entries = {f"e{i:02d}": (f"input {i}", "a") for i in range(25)}
    calls = [CallRecord(e, 0, "a", None, 1.0) for e in entries]
    with start(tracker, tmp_path, traced=True) as run:
        run.traces.begin(entries, {e: 1 for e in entries})
        for call in calls:
            run.traces.call(call)
        run.traces.calls_done(calls)
        scored = ScoredRun.from_json({"format": "evalkit.evaluation/1", "calls": 25,
                                      "component_errors": 0, "human_review": [],
                                      "types": [{"test_type": "functional", "scorer": "exact",
                                                 "skipped": [], "items": []}]})
        assert run.traces.finish(scored) == 0
        run.traces.add_assessments({"e00": [Assessment("x_stability", "changed", "why",
                                                       "CODE", "evalkit.replicates")]})
    store = tracker.backend.traces
    traces = store.traces[run.id]
    assert len(traces) == 25
    assert sorted(t.input for t in traces.values())[:2] == ["input 0", "input 1"]
    (stability,) = [a for t in traces for a in store.assessments[t] if a.name == "x_stability"]
    assert stability.value == "changed"
    # journaled, so that a bundle of the run would carry them to evalkit sync
    assert run.journal.assessments["e00"][0]["name"] == "x_stability"
    assert run.journal.tags[names.TRACES_TAG] == "true"
