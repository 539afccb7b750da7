"""Scoring a run again without calling again (``rescore``, ``python eval.py --rescore``,
``evalkit rescore``): the source's recorded outputs scored by the current scorers, judge
prompts and thresholds as a new run tagged ``rescored_from``, the component never called, the
source run untouched; refused (exit 2) when the outputs cannot be matched to the plan."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, ConfigError, Entry, EvalConfig, RunContext, Selection, evaluate, rescore
from evalkit.cli._exit import exit_status_of
from evalkit.evaluation import evaluate_replicates
from evalkit.records import names
from evalkit.tracking import Tracker, history, render_history
from tests.support.builders import (
    RecordingComponent,
    config_for,
    entry,
    write_dataset,
)
from tests.support.commands import eval_script, evalkit_command
from tests.support.openai_stub import OpenAIStub, RecordedRequest, Reply, ok

ENTRIES = {"f1": entry("functional"), "f2": entry("functional"), "f3": entry("functional"),
           "f4": entry("functional"), "r1": entry("repeatability")}
ANSWERS = {"f4": "wrong", "r1": lambda item, call: f"take {call.repeat}"}
"""Functional 3 of 4 right; repeatability's repeats all differ."""


class Counted:
    """A component that counts its calls: installed where a rescore's component goes."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, item: Entry, call: Call) -> Any:
        self.calls += 1
        return "made up"


@pytest.fixture
def never_called(monkeypatch: pytest.MonkeyPatch) -> Counted:
    """The component a rescore hands the call window, counting instead of raising."""
    counted = Counted()
    monkeypatch.setattr("evalkit.evaluation._rescore._never_called", counted)
    return counted


def source_run(tmp_path: Path, tracker: Tracker, **constants: Any) -> tuple[EvalConfig, str]:
    dataset = write_dataset(tmp_path / "ds", ENTRIES)
    config = config_for(tmp_path, dataset, EVAL_MIN_ACCURACY=0.7, REPEAT_COUNT=3,
                        EVAL_MIN_ACCURACY_REPEATABILITY=0.0, **constants)
    component = RecordingComponent(ANSWERS)
    outcome = evaluate(config, component, Selection.parse("all"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert outcome.passed and len(component.calls) == 4 + 3
    return config, outcome.run_id


def again(config: EvalConfig, **constants: Any) -> EvalConfig:
    """The same script with some constants changed."""
    return EvalConfig.from_constants({**config.constants, **constants}, config.script)


def test_a_changed_threshold_flips_the_verdict_and_no_component_call_is_made(
        tmp_path: Path, tracker: Tracker, never_called: Counted) -> None:
    config, source = source_run(tmp_path, tracker)
    before = tracker.reader.stored(source)
    raw_before = tracker.reader.raw_results(source).records

    outcome = rescore(again(config, EVAL_MIN_ACCURACY=0.8), source[:8],
                      RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))

    assert never_called.calls == 0
    assert outcome.run_id != source and not outcome.passed
    assert outcome.failures == ("functional_accuracy 0.750 < 0.8",)
    new = tracker.reader.stored(outcome.run_id)
    assert new.tags[names.RESCORED_FROM_TAG] == source
    assert new.tags[names.VERDICT_TAG] == "FAIL" and re.fullmatch(
        r"FAIL rescore all \d\d-\d\d \d\d:\d\d", new.run_name)
    assert new.metrics["functional_accuracy"] == 0.75 and new.metrics["calls"] == 7
    assert new.params["EVAL_MIN_ACCURACY"] == "0.8"
    # the same outputs, in its own raw results
    assert tracker.reader.raw_results(outcome.run_id).records == raw_before
    # the source run untouched
    after = tracker.reader.stored(source)
    assert (after.tags, after.params, after.metrics, after.status) == (
        before.tags, before.params, before.metrics, before.status)
    assert after.tags[names.VERDICT_TAG] == "PASS"
    # traces: the same outputs, one per entry, in the new run
    traces = tracker.backend.traces.traces  # type: ignore[attr-defined]
    outputs = {t.entry_id: [c.output for c in t.calls] for t in traces[outcome.run_id].values()}
    assert outputs == {t.entry_id: [c.output for c in t.calls]
                       for t in traces[source].values()}
    assert outputs["f4"] == ["wrong"] and outputs["r1"] == ["take 0", "take 1", "take 2"]
    # its reports, written and logged, name the source
    line = f"- **Rescored from:** run {source}: its recorded outputs scored again"
    for report in ("summary.md", "report-functional.md", "report-repeatability.md"):
        assert line in (tmp_path / "reports" / report).read_text()
        assert line in tracker.reader.read_text(outcome.run_id, f"reports/{report}")
    assert line not in tracker.reader.read_text(source, "reports/summary.md")
    # history: the rescore shown as one, naming its source; the source an ordinary evaluation
    rows = history(tracker.reader, config.experiment_name)
    assert [(r.run_id, r.shown_mode, r.rescored_from) for r in rows] == [
        (outcome.run_id, "rescore", source), (source, "evaluation", None)]
    assert f"rescore of run {source}" in render_history(rows)


def test_compared_fields_apply_to_the_recorded_outputs(tmp_path: Path, tracker: Tracker,
                                                       never_called: Counted) -> None:
    dataset = write_dataset(tmp_path / "ds", {"r1": entry("repeatability")})
    config = config_for(tmp_path, dataset, REPEAT_COUNT=3)

    def stamped(item: Entry, call: Call) -> Any:
        return {"route": "billing", "at": call.repeat}

    source = evaluate(config, stamped, Selection.parse("all"),
                      RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert source.metrics[0].accuracy == 0.0  # the timestamps differ
    fixed = rescore(again(config, COMPARED_FIELDS=("route",)), source.run_id,
                    RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert fixed.metrics[0].accuracy == 1.0 and never_called.calls == 0


LENIENT_PROMPT = """\
name: lenient
description: Anything goes.
system: |
  LENIENT: every answer is right. Reply with one character: 1 or 0.
user: |
  INPUT: ${input}
  EXPECTED: ${expected}
  ACTUAL: ${output}
"""


def test_a_changed_judge_prompt_asks_the_judge_again(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        never_called: Counted) -> None:
    asked: list[str] = []

    def judge(request: RecordedRequest) -> Reply:
        system = json.dumps((request.body or {}).get("messages"))
        asked.append(system)
        return ok("1" if "LENIENT" in system else "0")

    (tmp_path / "lenient.yaml").write_text(LENIENT_PROMPT, encoding="utf-8")
    with OpenAIStub(judge) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        dataset = write_dataset(tmp_path / "ds", {f"f{i}": entry("functional")
                                                  for i in range(3)})
        config = config_for(tmp_path, dataset, SCORER="llm_judge", JUDGE_MODEL="judge")
        component = RecordingComponent(default="an answer")
        strict = evaluate(config, component, Selection.parse("all"),
                          RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
        judged_once = len(asked)
        lenient = rescore(again(config, JUDGE_PROMPTS={"expected": "lenient.yaml"}), strict.run_id,
                          RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))

    assert strict.metrics[0].accuracy == 0.0 and lenient.metrics[0].accuracy == 1.0
    assert len(asked) - judged_once == 1 + 3  # the preflight, then each entry again
    assert all("LENIENT" in a for a in asked[judged_once + 1:])
    assert len(component.calls) == 3 and never_called.calls == 0
    assessments = tracker.backend.traces.assessments  # type: ignore[attr-defined]
    traces = tracker.backend.traces.traces  # type: ignore[attr-defined]
    verdicts = {run: sorted(a.value for t in traces[run] for a in assessments[t]
                            if a.name == "functional")
                for run in (strict.run_id, lenient.run_id)}
    assert verdicts == {strict.run_id: [False] * 3, lenient.run_id: [True] * 3}


# --- refusals -----------------------------------------------------------------------------------


def runs_in(tracker: Tracker, config: EvalConfig) -> int:
    return len(tracker.reader.runs(config.experiment_name))


def test_the_component_prompts_are_those_that_made_the_outputs(
        tmp_path: Path, tracker: Tracker, never_called: Counted) -> None:
    config, source = source_run(tmp_path, tracker, COMPONENT_PROMPTS={"system": "Be terse."})
    made = tracker.reader.stored(source).params["component_prompt.system"]

    outcome = rescore(again(config, COMPONENT_PROMPTS={"system": "Be chatty."}), source,
                      RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))

    new = tracker.reader.stored(outcome.run_id)
    assert new.params["component_prompt.system"] == made
    assert tracker.reader.read_json(outcome.run_id, names.COMPONENT_PROMPTS_ARTIFACT) == \
        tracker.reader.read_json(source, names.COMPONENT_PROMPTS_ARTIFACT)
    assert tracker.backend.prompts.get(outcome.run_id, []) == \
        [p for p in tracker.backend.prompts[source] if not p.endswith("-system")]
    assert never_called.calls == 0


def test_another_dataset_is_refused_before_any_run(tmp_path: Path, tracker: Tracker,
                                                   never_called: Counted) -> None:
    config, source = source_run(tmp_path, tracker)
    write_dataset(tmp_path / "ds", {**ENTRIES, "f1": entry("functional", expected="changed")})
    with pytest.raises(ConfigError, match=rf"run {source} was made with another "
                                          r"dataset_digest [0-9a-f]{12} -> [0-9a-f]{12}"):
        rescore(config, source, RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert runs_in(tracker, config) == 1


def test_another_repeat_count_is_refused(tmp_path: Path, tracker: Tracker) -> None:
    config, source = source_run(tmp_path, tracker)
    with pytest.raises(ConfigError, match=r"another REPEAT_COUNT 3 -> 4: its outputs cannot "
                                          "be matched"):
        rescore(again(config, REPEAT_COUNT=4), source,
                RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert runs_in(tracker, config) == 1


def source_raw(tracker: Tracker, source: str) -> list[bytes]:
    """The source run's raw-results artifact, a line per call (in dataset order: f1, f2, f3,
    f4, then r1's repeats 0, 1 and 2)."""
    journal = tracker.backend.journals[source]  # type: ignore[attr-defined]
    return journal.artifact_bytes(names.RAW_RESULTS_ARTIFACT).splitlines(keepends=True)


def damage(tracker: Tracker, source: str, content: bytes) -> None:
    """Replace the source run's raw-results artifact, as damage after the run would."""
    journal = tracker.backend.journals[source]  # type: ignore[attr-defined]
    journal.artifacts[names.RAW_RESULTS_ARTIFACT] = content


def test_a_finished_run_whose_raw_results_lost_their_end_names_the_fix_that_works(
        tmp_path: Path, tracker: Tracker) -> None:
    config, source = source_run(tmp_path, tracker)
    lines = source_raw(tracker, source)
    local = tmp_path / "runs" / source / "raw-results.jsonl"
    damage(tracker, source, b"".join(lines)[:-20])  # the last line cut off
    with pytest.raises(ConfigError) as refused:
        rescore(config, source, RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert str(refused.value) == (
        f"run {source}'s raw results (raw/raw-results.jsonl) are damaged: its last line (line "
        f"7) is cut off mid-record ({lines[-1][:40].decode()!r}...). The run finished, so "
        "resuming cannot make a call again, and a rescore scores every call as the run recorded "
        f"it and guesses none. This machine kept them whole in {local}: put that file back "
        f"(mlflow artifacts log-artifact --run-id {source} --artifact-path raw --local-file "
        f"{local}, with MLFLOW_TRACKING_URI={tracker.tracking_uri}) and rescore again, or "
        "evaluate again: python test_eval.py --type=all")
    assert exit_status_of(refused.value) == 2 and runs_in(tracker, config) == 1
    # the whole last line lost: the same refusal (resuming a finished run cannot make it)
    damage(tracker, source, b"".join(lines[:-1]))
    with pytest.raises(ConfigError, match=r"are damaged: 1 of the 7 calls its selection needs "
                                          r"are not in it \('r1' repeat 2 first\)\. The run "
                                          "finished, so resuming cannot"):
        rescore(config, source, RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    # without this machine's copy, the file from where the run was made, or a new evaluation
    local.unlink()
    with pytest.raises(ConfigError, match=re.escape(
            "Put back the whole file from the machine that made the run (its .evalkit/runs/"
            f"{source}/raw-results.jsonl: mlflow artifacts log-artifact --run-id {source} "
            "--artifact-path raw --local-file FILE), or evaluate again: python test_eval.py "
            "--type=all")):
        rescore(config, source, RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert runs_in(tracker, config) == 1
    # the fix named: the whole file put back, and the rescore goes ahead
    damage(tracker, source, b"".join(lines))
    assert rescore(config, source, RunContext(tracker=tracker, runs_dir=tmp_path / "runs")).passed


def test_a_damaged_middle_line_is_a_usage_refusal_naming_the_line(tmp_path: Path,
                                                                  tracker: Tracker) -> None:
    config, source = source_run(tmp_path, tracker)
    lines = source_raw(tracker, source)
    damage(tracker, source, b"".join([*lines[:2], lines[2][:30] + b"\n", *lines[3:]]))
    with pytest.raises(ConfigError) as refused:
        rescore(config, source, RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    message = str(refused.value)
    assert message.startswith(f"run {source}'s raw results (raw/raw-results.jsonl) are "
                              "damaged: line 3 is not a call record (Expecting ',' delimiter")
    assert "resuming cannot make a call again" in message
    assert f"put that file back (mlflow artifacts log-artifact --run-id {source}" in message
    assert exit_status_of(refused.value) == 2 and runs_in(tracker, config) == 1


@pytest.mark.parametrize("changed", [True, False], ids=["another-outcome", "identical"])
def test_a_call_recorded_twice_is_refused_not_used(tmp_path: Path, tracker: Tracker,
                                                   changed: bool) -> None:
    """Evalkit records each call once: a second record of one was put there, and which one
    is the call's is not for a rescore to guess (the last would win, moving the accuracy)."""
    config, source = source_run(tmp_path, tracker)
    lines = source_raw(tracker, source)
    again_f4 = json.loads(lines[3])
    if changed:
        again_f4["output"] = "a"  # f4 right: the accuracy would move from 0.75 to 1.0
    damage(tracker, source, b"".join(lines) + json.dumps(again_f4).encode() + b"\n")
    with pytest.raises(ConfigError, match=re.escape(
            f"are damaged: line 8 records 'f4' repeat 0 again (line 4 has it"
            f"{', with another outcome' if changed else ''}); a run records each call "
            "once. The run finished")):
        rescore(config, source, RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert runs_in(tracker, config) == 1


def test_an_unfinished_run_missing_calls_is_resumed_first(tmp_path: Path,
                                                          tracker: Tracker) -> None:
    config, source = source_run(tmp_path, tracker)
    journal = tracker.backend.journals[source]  # type: ignore[attr-defined]
    journal.status = "KILLED"
    damage(tracker, source, b"".join(source_raw(tracker, source)[:-1]))
    with pytest.raises(ConfigError, match=re.escape(
            f"run {source} did not finish (KILLED): it recorded 6 of the 7 calls its selection "
            "needs ('r1' repeat 2 is missing). Resume it first (evalkit resume "
            f"{source} (--script PATH for a script other than ./eval.py; or python "
            f"test_eval.py --resume {source})), then rescore it")):
        rescore(config, source, RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    del journal.artifacts[names.RAW_RESULTS_ARTIFACT]
    with pytest.raises(ConfigError, match="has no raw/raw-results.jsonl: there are no "
                                          "recorded outputs to rescore"):
        rescore(config, source, RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert runs_in(tracker, config) == 1


def test_a_series_its_replicates_and_other_modes_are_refused(tmp_path: Path,
                                                           tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {"f1": entry("functional")})
    config = config_for(tmp_path, dataset)
    series = evaluate_replicates(config, RecordingComponent(), Selection.parse("all"),
                                 RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    with pytest.raises(ConfigError, match=f"run {series.parent_run_id} is a replicate series: "
                                          "a series cannot be rescored"):
        rescore(config, series.parent_run_id,
                RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    with pytest.raises(ConfigError, match=f"is a replicate of series {series.parent_run_id}"):
        rescore(config, series.replicates[0].run_id,
                RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    for mode, refusal in (("calibration", "is a calibration run"),
                          ("someone-elses", "is not a run evalkit made")):
        with tracker.run(config.experiment_name, mode, {}, {names.MODE_TAG: mode,
                                                             names.EVAL_TYPE_TAG: "all"}) as run:
            pass
        with pytest.raises(ConfigError, match=f"run {run.id} {refusal}: only ordinary "
                                              "evaluation runs can be rescored"):
            rescore(config, run.id, RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))


def test_the_command_lines_refuse_a_selection_and_a_missing_script(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_dataset(tmp_path / "ds", {"a": entry("functional")})
    constants = {"EXPERIMENT_NAME": "rescore/cli", "DATASET_PATH": "ds",
                 "EVAL_MIN_ACCURACY": 0.5}
    assert eval_script(constants, RecordingComponent(), "--rescore", "0" * 32,
                       "--type=all") == 2
    assert "--rescore takes the run's own --type, --groups and --human-review" in \
        capsys.readouterr().err
    assert evalkit_command("rescore", "abcd", "--script", "nowhere.py") == 2
    assert "error: nowhere.py not found: pass the eval script with --script" in \
        capsys.readouterr().err
    assert evalkit_command("rescore", "--help") == 0
    assert "tagged rescored_from=RUN_ID" in capsys.readouterr().out
    assert not (tmp_path / "mlflow.db").exists()
