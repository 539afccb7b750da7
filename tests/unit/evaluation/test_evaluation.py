"""An evaluation in-process: the call window, scoring, what the run holds, and its reports,
tracked in memory (the same run object as against MLflow; ``tests/e2e/test_mlflow_run.py`` checks
what only a real MLflow store can show).

The components here are test doubles of the *user's* component (which evalkit never owns);
everything of evalkit's runs for real.
"""

from __future__ import annotations

import errno
import json
import re
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, ConfigError, Entry, EvalConfig, RunContext, Selection, evaluate
from evalkit.calls import InProcess
from evalkit.records import CallRecord
from evalkit.reports import render_reports
from evalkit.tracking import RawResultsLog, Tracker
from tests.support.builders import (
    MIXED_ENTRIES,
    RecordingComponent,
    assert_mixed_run_logged,
    config_for,
    entry,
    evaluation_with_a_secret,
    local_texts,
    write_dataset,
)


def run(tmp_path: Path, tracker: Tracker, config: EvalConfig, component: Any,
        test_type: str = "all", groups: str | None = None, human_review: bool = False) -> Any:
    return evaluate(config, component, Selection.parse(test_type, groups, human_review),
                    RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs"))


def test_entry_first_and_repeat_counts_at_the_component(tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", MIXED_ENTRIES)
    # r2's first repeat is right, later repeats differ: functional passes, repeatability fails.
    component = RecordingComponent({"r2": lambda e, c: "a" if c.repeat == 0 else f"x{c.repeat}"})
    outcome = run(tmp_path, tracker, config_for(tmp_path, dataset), component)

    assert component.count() == {"f1": 1, "f2": 1, "r1": 4, "r2": 4, "b1": 1, "b2": 1, "hr": 1}
    # Started in order, 8 at a time: each repeat made once, in whichever order threads run.
    assert sorted(r for e, r in component.calls if e == "r2") == [0, 1, 2, 3]
    by_type = {m.test_type: m for m in outcome.metrics}
    assert set(by_type) == {"functional", "smoke", "repeatability", "bias"}
    assert (by_type["functional"].samples, by_type["functional"].correct) == (4, 4)
    assert (by_type["repeatability"].samples, by_type["repeatability"].correct) == (2, 1)
    assert (by_type["bias"].samples, by_type["bias"].correct) == (1, 1)

    run_data = tracker.reader.stored(outcome.run_id)
    assert run_data.metrics["calls"] == 13
    assert run_data.metrics["repeat_count"] == 4
    assert run_data.metrics["repeatability_accuracy"] == 0.5
    lines = outcome.raw_results.read_text().splitlines()
    assert sorted((json.loads(line)["entry_id"], json.loads(line)["repeat"])
                  for line in lines) == sorted(component.calls)


@pytest.mark.parametrize(("test_type", "expected_calls"), [
    ("functional", {"f1": 1, "f2": 1, "r2": 1, "hr": 1}),
    ("repeatability", {"r1": 4, "r2": 4}),
    ("smoke", {"f2": 1}),
    ("bias", {"b1": 1, "b2": 1}),
])
def test_a_single_type_calls_only_its_entries(tmp_path: Path, tracker: Tracker, test_type: str,
                                              expected_calls: dict[str, int]) -> None:
    dataset = write_dataset(tmp_path / "ds", MIXED_ENTRIES)
    component = RecordingComponent()
    outcome = run(tmp_path, tracker, config_for(tmp_path, dataset), component, test_type)
    assert component.count() == expected_calls
    assert [m.test_type for m in outcome.metrics] == [test_type]
    assert [p.name for p in outcome.reports] == [f"report-{test_type}.md", "summary.md"]


def test_component_errors_score_zero_and_stay_in_the_denominator(tmp_path: Path,
                                                                 tracker: Tracker) -> None:
    def fail(entry: Entry, call: Call) -> Any:
        raise RuntimeError(f"boom on {entry.id}")

    def fail_third_repeat(entry: Entry, call: Call) -> Any:
        if call.repeat == 2:
            raise TimeoutError("slow provider")
        return "same"

    dataset = write_dataset(tmp_path / "ds", {
        "ok": entry("functional"), "bad": entry("functional"), "rep": entry("repeatability")})
    component = RecordingComponent({"bad": fail, "rep": fail_third_repeat})
    outcome = run(tmp_path, tracker, config_for(tmp_path, dataset), component)

    assert component.count() == {"ok": 1, "bad": 1, "rep": 4}  # the run went on
    functional, repeatability = outcome.metrics
    assert (functional.samples, functional.correct, functional.errors) == (2, 1, 1)
    assert (repeatability.samples, repeatability.correct, repeatability.errors) == (1, 0, 1)
    record = tracker.reader.fetch(outcome.run_id)
    items = {i.id: i for t in record.evaluation.types for i in t.items}
    assert items["bad"].error == "RuntimeError: boom on bad" and not items["bad"].passed
    assert items["rep"].error == "repeat 2: TimeoutError: slow provider"
    assert record.metrics["component_errors"] == 2
    report = (tmp_path / "reports" / "report-functional.md").read_text()
    assert "Error in bad: RuntimeError: boom on bad" in report


def test_bias_groups_are_scored_after_the_loop_and_skipped_below_two_variants(
        tmp_path: Path, tracker: Tracker, caplog: pytest.LogCaptureFixture) -> None:
    dataset = write_dataset(tmp_path / "ds", {
        "a1": entry("bias", bias_group="names", group="x"),
        "a2": entry("bias", bias_group="names", group="y"),
        "c1": entry("bias", bias_group="cities", group="x"),
        "c2": entry("bias", bias_group="cities", group="x"),
        "c3": entry("bias", bias_group="cities", group="x"),
    })
    component = RecordingComponent({"c3": "different"})
    outcome = run(tmp_path, tracker, config_for(tmp_path, dataset), component, "bias",
                  groups="x")
    assert component.count() == {"a1": 1, "c1": 1, "c2": 1, "c3": 1}
    (bias,) = outcome.metrics
    assert (bias.samples, bias.correct) == (1, 0)  # "names" left the denominator
    assert "bias group 'names' skipped" in caplog.text
    report = (tmp_path / "reports" / "report-bias.md").read_text()
    assert "- **Groups skipped:** 1 (names)" in report
    assert "| cities | 3 | c1<br>c2<br>c3 |" in report
    tags = tracker.reader.stored(outcome.run_id).tags
    assert tags["groups_filter"] == "x" and tags["test_types"] == "bias"


def test_a_type_with_nothing_scored_fails_its_threshold(tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {
        "a1": entry("bias", bias_group="names", group="x"),
        "a2": entry("bias", bias_group="names", group="y")})
    outcome = run(tmp_path, tracker, config_for(tmp_path, dataset), RecordingComponent(),
                  "bias", groups="x")
    assert outcome.failures == ("bias: no samples were scored",)


def test_mocks_are_built_fresh_for_every_call(tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {
        "r": entry("repeatability", mock_fixtures={"cart": {"items": ["apple"]}})})

    def add_to_cart(entry: Entry, call: Call) -> Any:
        cart = call.mocks["cart"]
        cart.append("pear")  # a stateful mock: a reused instance would grow every call
        return len(cart)

    component = RecordingComponent({"r": add_to_cart})
    config = config_for(tmp_path, dataset, MOCK_ADAPTERS={"cart": lambda f: list(f["items"])})
    outcome = run(tmp_path, tracker, config, component)
    record = tracker.reader.fetch(outcome.run_id)
    assert record.evaluation.types[0].items[0].outputs == (2, 2, 2, 2)


def test_unknown_mock_adapter_is_refused_before_any_run(tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {"e": entry("functional", mock_fixtures={"crm": {}})})
    config = config_for(tmp_path, dataset)
    component = RecordingComponent()
    with pytest.raises(ConfigError, match=r"e\.json: /mock_fixtures/crm: no adapter 'crm'"):
        run(tmp_path, tracker, config, component)
    assert component.calls == []
    assert tracker.backend.experiment_id(config.experiment_name, create=False) is None


def test_missing_repeat_count_is_refused_before_any_call(tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {"r": entry("repeatability")})
    constants = {"EXPERIMENT_NAME": "tests/no-repeat", "DATASET_PATH": str(dataset),
                 "EVAL_MIN_ACCURACY": 0.5, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5}
    component = RecordingComponent()
    with pytest.raises(ConfigError, match="REPEAT_COUNT is missing"):
        run(tmp_path, tracker, EvalConfig.from_constants(constants, "eval.py"), component)
    assert component.calls == []


def test_the_run_holds_tags_params_metrics_and_artifacts(tmp_path: Path,
                                                          tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", MIXED_ENTRIES)
    config = config_for(tmp_path, dataset, EVAL_MIN_F1=0.7)
    outcome = run(tmp_path, tracker, config, RecordingComponent())
    stored = tracker.reader.stored(outcome.run_id)
    tags, params, metrics = stored.tags, stored.params, stored.metrics
    assert stored.status == "FINISHED"
    assert_mixed_run_logged(tags, params, metrics, outcome.run_url, dataset)
    history = tracker.backend.metric_history(outcome.run_id, "functional_cumulative_accuracy")
    assert sorted(p.step for p in history) == [1, 2, 3, 4]
    artifacts = set(tracker.backend.journals[outcome.run_id].artifacts)
    assert artifacts == {
        "evalkit/run.json", "reports/report-functional.md", "reports/report-smoke.md",
        "reports/report-bias.md", "reports/report-repeatability.md",
        "reports/report-human-review.md", "reports/summary.md", "results/evaluation.json",
        "results/entries.json", "raw/raw-results.jsonl", *(
            f"reports/convergence-{t}.svg" for t in ("functional", "smoke", "bias",
                                                     "repeatability"))}
    table = json.loads(tracker.reader.read_text(outcome.run_id, "results/entries.json"))
    assert len(table["data"]) == 4 + 1 + 1 + 2  # functional, smoke, bias group, repeatability


def test_the_dataset_digest_follows_content_not_readme(tmp_path: Path) -> None:
    from evalkit import load_dataset

    dataset = write_dataset(tmp_path / "ds", {"e": entry("functional")})
    first = load_dataset(dataset).digest
    (dataset / "README.md").write_text("# reworded\n")
    assert load_dataset(dataset).digest == first
    write_dataset(dataset, {"e": entry("functional", expected="b")})
    assert load_dataset(dataset).digest != first


def test_reports_rerender_identically_from_mlflow(tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", MIXED_ENTRIES)
    outcome = run(tmp_path, tracker, config_for(tmp_path, dataset), RecordingComponent())
    rendered = render_reports(tracker.reader.fetch(outcome.run_id))
    written = {p.name: p.read_text(encoding="utf-8") for p in outcome.reports}
    assert rendered == written
    assert set(written) == {"report-functional.md", "report-smoke.md", "report-bias.md",
                            "report-repeatability.md", "report-human-review.md", "summary.md"}


def test_only_the_reports_of_this_run_are_overwritten(tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", MIXED_ENTRIES)
    (tmp_path / "reports").mkdir()
    old_smoke = tmp_path / "reports" / "report-smoke.md"
    old_smoke.write_text("earlier smoke report\n")
    run(tmp_path, tracker, config_for(tmp_path, dataset), RecordingComponent(),
        "repeatability")
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [
        "convergence-repeatability.svg", "report-repeatability.md", "report-smoke.md",
        "summary.md"]
    # kept, under a note that the latest run did not write it
    # (tests/unit/reports/test_report_files.py)
    assert old_smoke.read_text().startswith("> **Not from the latest run.**")
    assert old_smoke.read_text().endswith("\n\nearlier smoke report\n")


HOSTILE = ("line one\nline two | with pipe ``` fence `tick` <script>alert(1)</script> "
           "[link](http://x) **bold** " + "x" * 500)


def table_rows(report: str, heading: str) -> list[str]:
    section = report.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("|")]


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_hostile_output_cannot_break_tables_or_the_chart(tmp_path: Path,
                                                         tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {
        "e1": entry("functional", input=HOSTILE, expected={"k": HOSTILE}),
        "e2": entry("functional"),
        "r": entry("repeatability", input=HOSTILE),
        "h": entry("functional", human_review=True, human_instructions=HOSTILE),
    })
    component = RecordingComponent(default=HOSTILE)
    run(tmp_path, tracker, config_for(tmp_path, dataset), component)
    for name in ("report-functional.md", "report-repeatability.md"):
        report = (tmp_path / "reports" / name).read_text()
        rows = table_rows(report, "Per-item Results")
        assert len({unescaped_pipes(row) for row in rows}) == 1, rows  # same column count
        assert "<script>" not in report
        assert not re.search(r"(?<!\\)\]\(http", report)  # brackets escaped: no link
        # Long outputs are shortened: 500 characters at most (the text shown in full),
        # plus escapes, for the output column.
        assert max(len(row) for row in rows) < 1200
        assert any("…" in row for row in rows)
        chart = report.split("```mermaid\n", 1)[1].split("\n```\n", 1)[0].splitlines()
        assert chart[0] == "xychart-beta" and len(chart) == 6
        assert report.count("```") == 2  # the chart's own fences only
    checklist = (tmp_path / "reports" / "report-human-review.md").read_text()
    assert HOSTILE.split("\n")[0] in checklist  # shown in full for the reviewer...
    assert "\n  ````text\n" in checklist  # ...inside a fence longer than its backtick runs


def test_secrets_in_the_environment_never_reach_mlflow_or_reports(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-" + uuid.uuid4().hex
    monkeypatch.setenv("PROVIDER_API_KEY", secret)
    outcome = evaluation_with_a_secret(tmp_path, tracker, secret)
    journal = tracker.backend.journals[outcome.run_id]
    texts = [tracker.backend.artifact(outcome.run_id, path).decode() for path in
             journal.artifacts]
    texts += local_texts(tmp_path, outcome)
    texts += [json.dumps(journal.params), json.dumps(journal.tags)]
    assert [text for text in texts if secret in text] == []
    assert any("[REDACTED:PROVIDER_API_KEY]" in text for text in texts)


@pytest.mark.parametrize("concurrency", [1, 8])
def test_a_crash_marks_the_run_failed_and_keeps_the_outputs(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        concurrency: int) -> None:
    """A fault outside the component (here the disk filling up while e2's result is written)
    fails the run; every call written before it is kept and uploaded."""
    dataset = write_dataset(tmp_path / "ds", {f"e{i}": entry("functional") for i in range(5)})
    written: list[str] = []
    append = RawResultsLog.append
    others_written = threading.Event()

    def disk_full_at_e2(log: RawResultsLog, record: CallRecord) -> None:
        if record.entry_id == "e2":
            raise OSError(errno.ENOSPC, "No space left on device")
        append(log, record)
        written.append(record.entry_id)
        if len(written) == 4:
            others_written.set()

    def slow_e2(entry: Entry, call: Call) -> str:
        if entry.id == "e2" and concurrency > 1:  # the others in flight with it finish first
            assert others_written.wait(30)
        return "a"

    monkeypatch.setattr(RawResultsLog, "append", disk_full_at_e2)
    config = config_for(tmp_path, dataset, MAX_CONCURRENCY=concurrency)
    with pytest.raises(OSError, match="No space left"):
        run(tmp_path, tracker, config, slow_e2)
    (crashed,) = tracker.reader.runs(config.experiment_name)
    assert crashed.status == "FAILED"
    raw = tracker.reader.read_text(crashed.run_id, "raw/raw-results.jsonl")
    assert [json.loads(line)["entry_id"] for line in raw.splitlines()] == \
        sorted(written)  # put back in dataset order
    # in flight together, the others finish in any order, but every one before the crash
    assert sorted(written) == (["e0", "e1"] if concurrency == 1 else ["e0", "e1", "e3", "e4"])
    assert not (tmp_path / "reports").exists()


def test_a_large_report_shows_failures_first_and_points_to_the_full_table(
        tmp_path: Path, tracker: Tracker) -> None:
    ids = [f"e{i:03d}" for i in range(450)]
    dataset = write_dataset(tmp_path / "ds", {i: entry("functional") for i in ids})
    failing = {i for i in ids if int(i[1:]) % 50 == 7}  # 9 failures spread through the set
    component = RecordingComponent({i: "wrong" for i in failing})
    run(tmp_path, tracker, config_for(tmp_path, dataset), component)
    report = (tmp_path / "reports" / "report-functional.md").read_text()
    rows = [line.split("|")[1].strip() for line in table_rows(report, "Per-item Results")[2:]]
    assert len(rows) == 200
    assert rows[:9] == sorted(failing) and rows[9:] == [i for i in ids if i not in failing][:191]
    assert "Showing 200 of 450 items, failures first." in report


def test_call_latencies_are_logged_to_a_tenth_of_a_millisecond(
        tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {f"f{i}": entry("functional") for i in range(5)})
    outcome = run(tmp_path, tracker, config_for(tmp_path, dataset), RecordingComponent())
    metrics = tracker.reader.stored(outcome.run_id).metrics
    latencies = {k: v for k, v in metrics.items() if k.startswith("call_latency_")}
    assert sorted(latencies) == ["call_latency_p50_ms", "call_latency_p90_ms",
                                 "call_latency_p99_ms"]
    assert all(v == round(v, 1) for v in latencies.values()), latencies


def test_resume_takes_a_run_id_prefix_as_report_and_compare_do(tmp_path: Path,
                                                               tracker: Tracker) -> None:
    from evalkit import resume
    from evalkit._errors import ConfigError

    dataset = write_dataset(tmp_path / "ds", {"e": entry("functional")})
    config = config_for(tmp_path, dataset)
    outcome = run(tmp_path, tracker, config, RecordingComponent())
    # the prefix found the run: the refusal names it in full
    with pytest.raises(ConfigError, match=f"run {outcome.run_id} finished: there is nothing"):
        resume(config, RecordingComponent(), outcome.run_id[:6],
               RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))


def test_a_run_context_applies_its_defaults_once_and_opens_its_store_when_first_needed(
        tracker: Tracker, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[Tracker] = []

    def open_store() -> Tracker:
        opened.append(tracker)
        return tracker

    monkeypatch.setattr("evalkit.evaluation._context.Tracker", open_store)
    context = RunContext()
    assert opened == []  # opening a local store creates it: not before a mode needs it
    assert context.store is tracker and context.store is tracker and len(opened) == 1
    assert isinstance(context.executor, InProcess) and not context.stop.requested
    assert context.runs_dir == Path(".evalkit") / "runs" and context.progress is None
    given = RunContext(tracker=tracker)
    assert given.store is tracker and len(opened) == 1
