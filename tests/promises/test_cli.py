"""eval scripts and the evalkit command as users run them.

Refusals (bad options, configuration errors, an unreachable store), --help and SIGINT
ignored at start are tested in-process: ``run_eval_script`` and ``evalkit.cli.main`` return
the exit status (argparse ends a bad command line with ``SystemExit(2)``). What only a process
alone can show, ``evalkit report`` against a real store and the repository's own example are in
test_cli_processes.py (slow).
"""

from __future__ import annotations

import json
import re
import signal
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from evalkit import EvalConfig, NotFound, RunContext, RunInterrupted, Selection, Stop, evaluate
from evalkit.cli._exit import exit_status_of
from evalkit.cli._signals import stopping_on_signals
from evalkit.tracking import Tracker
from tests.support.builders import RecordingComponent, entry, write_dataset, write_eval_script
from tests.support.commands import eval_script, evalkit_command

CONSTANTS = {"EXPERIMENT_NAME": "cli/tests", "DATASET_PATH": "ds", "EVAL_MIN_ACCURACY": 0.5}


# --- refusals, in-process ------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "constants", "message"), [
    ([], CONSTANTS, "the following arguments are required: --type"),
    (["--type=smok"], CONSTANTS, "invalid choice: 'smok'"),
    (["--type=all", "--resume", "0" * 32], CONSTANTS,
     "--resume takes the run's own --type, --groups and --human-review"),
    (["--type=all"], {**CONSTANTS, "EVAL_MIN_ACURACY": 0.5}, "did you mean EVAL_MIN_ACCURACY"),
    (["--type=all", "--groups=nothing"], CONSTANTS, "nothing to evaluate"),
])
def test_usage_and_configuration_errors_exit_2_before_any_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        args: list[str], constants: dict[str, Any], message: str) -> None:
    write_dataset(tmp_path / "ds", {"a": entry("functional")})
    component = RecordingComponent()
    assert eval_script(constants, component, *args) == 2
    assert message in capsys.readouterr().err
    assert component.calls == []
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / ".evalkit").exists()


def test_every_problem_with_the_constants_is_in_one_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_dataset(tmp_path / "ds", {"r": entry("repeatability"), "s": entry("smoke")})
    component = RecordingComponent()
    constants = {**CONSTANTS, "EVAL_MIN_ACURACY_SMOKE": 1.0, "EVAL_MIN_F1": 2,
                 "REPEAT_COUNT": 3}
    assert eval_script(constants, component, "--type=all") == 2
    assert capsys.readouterr().err == (
        "error: eval.py: 3 problems with the constants, each with its fix:\n"
        "  - unknown constant EVAL_MIN_ACURACY_SMOKE: did you mean EVAL_MIN_ACCURACY_SMOKE?\n"
        "  - EVAL_MIN_F1=2 must be a number between 0 and 1\n"
        "  - EVAL_MIN_ACCURACY_REPEATABILITY is missing: the repeatability policy requires an "
        "explicit threshold for repeatability_accuracy\n")
    assert component.calls == []
    # With a dataset that does not load as well, the constants come first (exit 2, not 3).
    assert eval_script({**constants, "DATASET_PATH": "nowhere"}, component, "--type=all") == 2
    assert "unknown constant EVAL_MIN_ACURACY_SMOKE" in capsys.readouterr().err


def test_an_unreachable_tracking_server_is_a_runtime_failure_before_any_call(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")  # nothing listens there
    write_dataset(tmp_path / "ds", {"a": entry("functional")})
    component = RecordingComponent()
    assert eval_script(CONSTANTS, component, "--type=all") == 4
    err = capsys.readouterr().err
    assert "error: cannot reach the MLflow tracking server at http://127.0.0.1:9" in err
    assert "Traceback" not in err
    assert component.calls == []
    assert not (tmp_path / ".evalkit").exists()


def test_help_documents_options_and_exit_statuses(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert eval_script(CONSTANTS, RecordingComponent(), "--help") == 0
    script_help = capsys.readouterr().out
    assert script_help.startswith("usage: eval.py ")
    for option in ("--type TYPE", "--groups A,B", "--human-review", "--replicates",
                   "--calibrate", "--resume RUN_ID", "--json PATH", "--junit-xml PATH"):
        assert option in script_help, option
    assert evalkit_command("--help") == 0
    command_help = capsys.readouterr().out
    assert command_help.startswith("usage: evalkit ")
    for command in ("init", "lint", "report", "compare", "plan", "sync", "resume", "history",
                    "ui"):
        assert f"\n    {command} " in command_help, command
    for text in (script_help, command_help):
        for status in ("0 ", "1 ", "2 ", "3 ", "4 ", "5 ", "6 ", "130"):
            assert f"\n  {status}" in text


def test_a_run_reference_resolves_by_id_prefix_or_experiment_and_refuses_the_unknown(
        tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {"f": entry("functional")})
    config = EvalConfig.from_constants({**CONSTANTS, "DATASET_PATH": str(dataset),
                                        "REPORTS_DIR": str(tmp_path / "reports")}, "eval.py")
    outcome = evaluate(config, RecordingComponent(), Selection("functional"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    reader = tracker.reader
    for reference in (outcome.run_id, outcome.run_id[:8], "cli/tests"):
        assert reader.resolve(reference) == outcome.run_id
    with pytest.raises(NotFound, match=r"no run at memory: has an id starting with "
                                       r"'ffff0000': give more of the run id"):
        reader.resolve("ffff0000")
    with pytest.raises(NotFound, match=f"run {'0' * 32} not found") as raised:
        reader.fetch(reader.resolve("0" * 32))
    assert exit_status_of(raised.value) == 2  # a usage error: the store answered
    with pytest.raises(NotFound, match=r"no experiment 'cli/other' at memory: \(and it is not "
                                       "a run id"):
        reader.resolve("cli/other")


UNKNOWN = {
    "history": ["history", "nosuch/exp"],
    "report (prefix)": ["report", "ffff0000"],
    "report (experiment)": ["report", "nosuch/exp"],
    "report (run id)": ["report", "f" * 32],
    "compare": ["compare", "zzzz", "cli/tests"],
    "plan": ["plan", "nosuch/exp"],
    "label": ["label", "ffff0000", "--from", "labels.csv"],
}


@pytest.mark.parametrize("command", list(UNKNOWN))
def test_an_unknown_experiment_run_or_prefix_is_a_usage_error(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], command: str) -> None:
    dataset = write_dataset(tmp_path / "ds", {"f": entry("functional")})
    config = EvalConfig.from_constants({**CONSTANTS, "DATASET_PATH": str(dataset),
                                        "REPORTS_DIR": str(tmp_path / "reports")}, "eval.py")
    evaluate(config, RecordingComponent(), Selection("functional"),
             RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    (tmp_path / "labels.csv").write_text("entry_id,test_type,verdict\n", encoding="utf-8")
    monkeypatch.setattr("evalkit.cli._main.Tracker", lambda *args, **kwargs: tracker)
    capsys.readouterr()
    assert evalkit_command(*UNKNOWN[command]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "memory" in err, err
    assert re.search(r"nosuch/exp|ffff0000|'zzzz'|f{32}", err)


def test_resuming_an_unknown_run_is_a_usage_error(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    write_dataset(tmp_path / "ds", {"a": entry("functional")})
    monkeypatch.setattr("evalkit.evaluation._context.Tracker", lambda *args, **kwargs: tracker)
    component = RecordingComponent()
    assert eval_script(CONSTANTS, component, "--resume", "f" * 32) == 2
    assert (f"error: run {'f' * 32} not found at memory: (evalkit history EXPERIMENT lists an "
            "experiment's runs)") in capsys.readouterr().err
    assert component.calls == []


def test_a_missed_threshold_exits_1_with_its_verdict_usage_and_failing_ids(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """eval.py's main past a missed threshold, in this process (tracked in memory): the
    slow tier's fresh process checks the same status without the terminal's other lines."""
    write_dataset(tmp_path / "ds", {"right": entry("functional"), "wrong": entry("functional"),
                                    "wrong2": entry("functional", expected="b")})
    monkeypatch.setattr("evalkit.evaluation._context.Tracker", lambda *args, **kwargs: tracker)

    def metered(item: Any, call: Any) -> Any:
        call.record_usage(input_tokens=100, output_tokens=50, model="m")
        return "a" if item.id != "wrong" else "nope"

    constants = {**CONSTANTS, "EVAL_MIN_ACCURACY": 0.9, "TOKEN_PRICES": {"m": (1.0, 2.0)}}
    assert eval_script(constants, RecordingComponent(default=metered), "--type=functional",
                       "--json", "out/summary.json") == 1
    out, err = capsys.readouterr()
    assert "threshold missed: functional_accuracy 0.333 < 0.9" in err
    verdict = out.strip().splitlines()[-2]
    # 3 calls of 100 + 50 tokens; 300 x $1 + 150 x $2 per million
    assert re.fullmatch(r"FAIL: 0/1 types passed \(failed: functional\); 3 entries, 3 calls, "
                        r"0 errors, \d+\.\d s; 450 tokens, \$0\.00060", verdict), verdict
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["verdict"], summary["exit_status"]) == ("FAIL", 1)
    assert summary["usage"] == {"tokens": 450, "cost_usd": pytest.approx(0.0006),
                                "judge_tokens": None, "judge_cost_usd": None}
    (functional,) = summary["types"]
    assert sorted(functional["failing_ids"]) == ["wrong", "wrong2"]
    report = (tmp_path / "reports" / "summary.md").read_text()
    assert "- **Tokens and cost:** 450 tokens, $0.00060" in report


# --- a job started with SIGINT ignored, in-process -----------------------------------------------


# --- evalkit report writes a run's own folder; history and plan default to ./eval.py's -------


def test_report_writes_each_run_into_a_folder_of_its_own(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch) -> None:
    dataset = write_dataset(tmp_path / "ds", {"f": entry("functional")})
    config = EvalConfig.from_constants({**CONSTANTS, "DATASET_PATH": str(dataset),
                                        "REPORTS_DIR": str(tmp_path / "latest")}, "eval.py")
    runs = [evaluate(config, RecordingComponent(answers={"f": answer}), Selection("functional"),
                     RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
            for answer in ("a", "wrong")]
    monkeypatch.setattr("evalkit.cli._main.Tracker", lambda *args, **kwargs: tracker)
    for outcome in runs:
        assert evalkit_command("report", outcome.run_id[:8]) == 0
    # named by the run's name made safe for a path (MLflow names hold spaces and colons)
    folders = sorted((tmp_path / "reports" / "runs").iterdir(),
                     key=lambda p: [o.run_id[:8] for o in runs].index(p.name[-8:]))
    assert [re.sub(r"-\d\d-\d\d-\d\d-\d\d-", "-<time>-", p.name) for p in folders] == [
        f"{verdict}-functional-<time>-{o.run_id[:8]}"
        for verdict, o in zip(("PASS", "FAIL"), runs, strict=True)]
    for folder, verdict in zip(folders, ("✓", "✗"), strict=True):
        assert sorted(p.name for p in folder.iterdir()) == [
            "convergence-functional.svg", "report-functional.md", "summary.md"]
        assert f"| functional | {verdict} |" in (folder / "summary.md").read_text()
    assert evalkit_command("report", runs[0].run_id, "--output", tmp_path / "mine") == 0
    assert (tmp_path / "mine" / "summary.md").read_text() == (
        folders[0] / "summary.md").read_text()


def test_report_refuses_a_destination_it_cannot_write_before_writing_anything(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Root writes anywhere a mode allows: a path under a file, or a folder where the JSON
    should go, is what the operating system refuses everyone."""
    dataset = write_dataset(tmp_path / "ds", {"f": entry("functional")})
    config = EvalConfig.from_constants({**CONSTANTS, "DATASET_PATH": str(dataset),
                                        "REPORTS_DIR": str(tmp_path / "latest")}, "eval.py")
    run_id = evaluate(config, RecordingComponent(), Selection("functional"),
                      RunContext(tracker=tracker, runs_dir=tmp_path / "runs")).run_id
    monkeypatch.setattr("evalkit.cli._main.Tracker", lambda *args, **kwargs: tracker)
    (tmp_path / "a-file").write_text("not a folder")
    (tmp_path / "a-folder").mkdir()
    for json_path, why in ((tmp_path / "a-file" / "check.json", "Not a directory"),
                           (tmp_path / "a-folder", "it is a folder")):
        capsys.readouterr()
        assert evalkit_command("report", run_id, "--output", tmp_path / "out" / "new",
                               "--json", json_path) == 2
        captured = capsys.readouterr()
        assert (captured.out, captured.err) == ("", (
            f"error: cannot write {json_path} ({why}); nothing was written: give --json a "
            "path you can write\n"))
        assert not (tmp_path / "out").exists()  # not even the folders it would have made
        assert sorted(p.name for p in tmp_path.iterdir()) == [
            "a-file", "a-folder", "ds", "latest", "runs"]
        assert list((tmp_path / "a-folder").iterdir()) == []
    assert evalkit_command("report", run_id, "--output", tmp_path / "a-file" / "reports") == 2
    assert capsys.readouterr().err.startswith(
        f"error: cannot write {tmp_path / 'a-file' / 'reports'}")
    # writable: every file in place, each listed once written, no scratch file left
    assert evalkit_command("report", run_id, "--output", tmp_path / "out",
                           "--json", tmp_path / "checks" / "check.json") == 0
    assert capsys.readouterr().out.splitlines() == [
        f"report: {tmp_path / 'out' / 'report-functional.md'}",
        f"report: {tmp_path / 'out' / 'summary.md'}",
        f"json: {tmp_path / 'checks' / 'check.json'}",
        f"chart: {tmp_path / 'out' / 'convergence-functional.svg'}"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "convergence-functional.svg", "report-functional.md", "summary.md"]
    assert json.loads((tmp_path / "checks" / "check.json").read_text())["run_id"] == run_id


def test_history_and_plan_take_the_experiment_of_the_eval_script_here(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write_dataset(tmp_path / "ds", {"f": entry("functional")})
    outcome = evaluate(EvalConfig.from_constants({**CONSTANTS, "DATASET_PATH": str(dataset),
                                                  "REPORTS_DIR": str(tmp_path / "r")}, "eval.py"),
                       RecordingComponent(), Selection("functional"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    monkeypatch.setattr("evalkit.cli._main.Tracker", lambda *args, **kwargs: tracker)
    capsys.readouterr()
    assert evalkit_command("history") == 2
    assert capsys.readouterr().err == (
        "error: no EXPERIMENT given and no eval.py here to read EXPERIMENT_NAME from: name the "
        "experiment on the command line, e.g. support-router/golden\n")
    # Read, never run: the script would exit 9 and its import would fail.
    script = tmp_path / "eval.py"
    script.write_text("import not_installed_anywhere\nEXPERIMENT_NAME = 'x/y'\n"
                      "EXPERIMENT_NAME: str = 'cli/tests'\nraise SystemExit(9)\n")
    assert evalkit_command("history", "--json") == 0
    assert [row["run_id"] for row in json.loads(capsys.readouterr().out)] == [outcome.run_id]
    assert evalkit_command("plan") == 2  # the experiment read, then its missing measurements
    assert "experiment 'cli/tests' has no finished run with repeatability" in \
        capsys.readouterr().err
    script.write_text("EXPERIMENT_NAME = 'cli/' + 'tests'\n")
    assert evalkit_command("history") == 2
    assert "sets EXPERIMENT_NAME to an expression, not a string literal" in \
        capsys.readouterr().err
    script.write_text("DATASET_PATH = 'ds'\n")
    assert evalkit_command("history") == 2
    assert "eval.py sets no EXPERIMENT_NAME" in capsys.readouterr().err


# --- evalkit resume runs a script as python does; an interrupt says what to paste ---------------


def interrupted_run(tracker: Tracker, constants: dict[str, Any],
                    script: str) -> tuple[str, str]:
    """An evaluation of two entries stopped after its first call: its message and run id."""
    stop = Stop()

    def first_then_stop(entry: Any, call: Any) -> Any:
        stop.request()
        return "a"

    with pytest.raises(RunInterrupted) as stopped:
        evaluate(EvalConfig.from_constants(constants, script), first_then_stop,
                 Selection("functional"), RunContext(tracker=tracker, stop=stop))
    (run,) = tracker.reader.runs(constants["EXPERIMENT_NAME"])
    assert run.status == "KILLED"
    return str(stopped.value), run.run_id


@pytest.mark.parametrize(("script", "command"), [
    ("eval.py", "python eval.py --resume {id}"),
    ("sub folder/eval.py", "evalkit resume {id} --script 'sub folder/eval.py'"),
])
def test_an_interrupted_run_says_the_command_that_continues_it(
        tmp_path: Path, tracker: Tracker, script: str, command: str) -> None:
    dataset = write_dataset(tmp_path / "ds", {"a": entry("functional"), "b": entry("functional")})
    message, run_id = interrupted_run(tracker, {**CONSTANTS, "DATASET_PATH": str(dataset),
                                                "MAX_CONCURRENCY": 1}, script)
    assert message.endswith("; continue it with: " + command.format(id=run_id))


def test_evalkit_resume_imports_the_scripts_own_modules_from_its_folder(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch) -> None:
    dataset = write_dataset(tmp_path / "ds", {"a": entry("functional"), "b": entry("functional")})
    constants = {**CONSTANTS, "DATASET_PATH": str(dataset), "MAX_CONCURRENCY": 1,
                 "REPORTS_DIR": str(tmp_path / "reports")}
    project = tmp_path / "project"
    project.mkdir()
    module = f"component_{uuid.uuid4().hex[:8]}"  # new to sys.modules
    (project / f"{module}.py").write_text("def answer(entry):\n    return 'a'\n")
    script = write_eval_script(project, constants, f"""
        from {module} import answer
        def invoke_component(entry, call):
            return answer(entry)
        """)
    _, run_id = interrupted_run(tracker, constants, "project/eval.py")
    monkeypatch.setattr("evalkit.evaluation._context.Tracker", lambda *args, **kwargs: tracker)
    path_before = list(sys.path)
    assert evalkit_command("resume", run_id, "--script", "project/eval.py") == 0
    assert sys.path == path_before
    resumed = tracker.reader.stored(run_id)
    assert resumed.status == "FINISHED" and resumed.tags["resume_calls_made"] == "1"

    script.write_text(script.read_text().replace(module, "no_such_module_here"))
    assert evalkit_command("resume", run_id, "--script", script) == 2
    assert sys.path == path_before


def test_a_module_the_script_cannot_import_is_named_with_its_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = write_eval_script(tmp_path, CONSTANTS, """
        import no_such_module_here
        def invoke_component(entry, call):
            return 'a'
        """)
    assert evalkit_command("resume", "f" * 32, "--script", script) == 2
    assert capsys.readouterr().err == (
        f"error: {script} imports no_such_module_here, which is neither in {tmp_path} nor "
        f"installed in {sys.executable}: install it there, or run it with the Python that made "
        f"the run: python {script} --resume {'f' * 32}\n")


def test_sigint_ignored_at_start_still_becomes_a_stop_request() -> None:
    """A shell starts a background job (``make eval &``), and some CI runners start a process,
    with SIGINT ignored; Python then installs no handler of its own, and only evalkit's makes
    Ctrl-C work. (Every other rule of the handlers: tests/promises/test_cli_signals.py.)"""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are installed from the main thread only")
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # installed first: never fatal
    try:
        stop = Stop()
        with stopping_on_signals(stop), stop.open_run():
            signal.raise_signal(signal.SIGINT)
            assert stop.requested and not stop.abandons
            signal.raise_signal(signal.SIGINT)
            assert stop.abandons
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # put back as it was
    finally:
        signal.signal(signal.SIGINT, previous)

