"""Day one in a user's repository: the light core, init, ui, --version, constants reported
all at once, and the command-line conventions. The command lines run in-process (they return
their exit status); ``python -m evalkit`` and the scaffold's ``make eval`` as processes are in
test_adoption_processes.py (slow)."""

from __future__ import annotations

import importlib.util
import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from evalkit import ConfigError, EvalConfig, RunContext, Selection, evaluate
from evalkit._distribution import SEMANTIC_EXTRA_COMMAND, VERSION
from evalkit.cli._exit import exit_status_of
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset
from tests.support.commands import eval_script, evalkit_command
from tests.support.processes import run_command


def test_semantic_run_without_the_extra_fails_before_any_run_or_call(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def without_extra(name: str, *args: Any) -> Any:
        return None if name == "sentence_transformers" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_extra)
    dataset = write_dataset(tmp_path / "ds", {"r": entry("repeatability")})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "adoption/no-extra", "DATASET_PATH": str(dataset),
        "REPEAT_COUNT": 2, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5,
        "SCORER_REPEATABILITY": "semantic_similarity",
        "REPEAT_SEMANTIC_SIMILARITY_SCORE": 0.9}, "eval.py")
    calls: list[str] = []
    with pytest.raises(ConfigError) as raised:
        evaluate(config, lambda e, c: calls.append(e.id) or "a", Selection("repeatability"),
                 RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert SEMANTIC_EXTRA_COMMAND in str(raised.value)
    assert "sentence_transformers not installed" in str(raised.value)
    assert exit_status_of(raised.value) == 2
    assert calls == []
    assert tracker.backend.experiment_id("adoption/no-extra", create=False) is None
    assert tracker.backend.journals == {}


def test_version_flag_prints_the_distribution_and_version(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert evalkit_command("--version") == 0
    assert capsys.readouterr().out == f"evalkit-mlflow {VERSION}\n"


# --- every constant problem at once -----------------------------------------------------------

def test_every_missing_or_misspelt_constant_is_reported_in_one_error() -> None:
    with pytest.raises(ConfigError) as raised:
        EvalConfig.from_constants({"EVAL_MIN_ACURACY": 0.8, "REPEAT_COUNTS": 5,
                                   "MAX_CONCURRENCY": 0}, "eval.py")
    message = str(raised.value)
    assert message.startswith("eval.py: 5 problems with the constants, each with its fix:")
    for expected in ("unknown constant EVAL_MIN_ACURACY: did you mean EVAL_MIN_ACCURACY?",
                     "unknown constant REPEAT_COUNTS: did you mean REPEAT_COUNT?",
                     "constant EXPERIMENT_NAME is missing: declare it",
                     "constant DATASET_PATH is missing: declare it",
                     "MAX_CONCURRENCY=0 must be at least 1"):
        assert f"\n  - {expected}" in message


def test_constants_a_selection_needs_are_all_reported_together(tmp_path: Path,
                                                               tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {"r": entry("repeatability"),
                                              "f": entry("functional")})
    config = EvalConfig.from_constants({"EXPERIMENT_NAME": "adoption/needs",
                                        "DATASET_PATH": str(dataset),
                                        "SCORER_FUNCTIONAL": "llm_judge"}, "eval.py")
    with pytest.raises(ConfigError) as raised:
        evaluate(config, lambda e, c: "a", Selection("all"),
                 RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    message = str(raised.value)
    assert "4 problems" in message
    for expected in ("REPEAT_COUNT is missing", "EVAL_MIN_ACCURACY_REPEATABILITY is missing",
                     "no accuracy threshold for functional",
                     "scored by 'llm_judge' but JUDGE_MODEL is not declared"):
        assert expected in message


# --- the command line -------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "hint"), [
    (["reprot", "x"], "invalid choice: 'reprot'"),
    (["init", "--componet", "x"], "unrecognized arguments: --componet"),
])
def test_misspelt_command_or_option_gets_a_suggestion(
        args: list[str], hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert evalkit_command(*args) == 2
    err = capsys.readouterr().err
    assert hint in err
    assert ("did you mean report?" if args[0] == "reprot" else "did you mean --component?") \
        in err


def test_eval_script_refuses_an_option_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    constants = {"EXPERIMENT_NAME": "a/b", "DATASET_PATH": "ds"}
    called: list[str] = []
    assert eval_script(constants, lambda e, c: called.append(e.id), "--typ=all") == 2
    assert "unrecognized arguments: --typ=all (did you mean --type?)" in capsys.readouterr().err
    assert eval_script(constants, lambda e, c: called.append(e.id), "--type=functionl") == 2
    assert "(did you mean functional?)" in capsys.readouterr().err
    assert called == []


# --- evalkit init -----------------------------------------------------------------------------

SCAFFOLD_ENTRIES = ["bias/name/ada.json", "bias/name/kwame.json",
                    "functional/double-charge.json", "functional/late-parcel.json",
                    "functional/opening-hours.json", "human-review/angry-customer.json",
                    "repeatability/password-reset.json"]


def test_init_scaffolds_a_runnable_evaluation(
        tmp_path: Path, tracker: Tracker, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "my-repo"
    repo.mkdir()
    (repo / ".gitignore").write_text("node_modules/\nmlruns/", encoding="utf-8")
    assert evalkit_command("init", repo) == 0, capsys.readouterr().err
    assert f"next: cd {repo} && make eval" in capsys.readouterr().out
    assert (repo / "reports").is_dir()
    assert (repo / ".gitignore").read_text(encoding="utf-8") == (
        "node_modules/\nmlruns/\n# evalkit: the local MLflow store, run folders and generated "
        "reports\nmlflow.db\nmlflow.db.lock\nmlflow.db-journal\nmlflow.db-wal\nmlflow.db-shm\n"
        "mlartifacts/\n.evalkit/\nreports/*.md\nreports/*.svg\nreports/stability.json\n"
        "reports/runs/\n")
    assert run_command(repo, "git", "init", "-q", seed_store=False).returncode == 0
    generated = ["reports/summary.md", "reports/convergence-functional.svg",
                 "reports/runs/PASS-functional-12-01-23-28-3d44be89/report-functional.md",
                 "reports/runs/PASS-functional-12-01-23-28-3d44be89/convergence-functional.svg"]
    ignored = run_command(repo, "git", "check-ignore", *generated, seed_store=False).stdout.split()
    assert ignored == generated
    script = (repo / "eval.py").read_text(encoding="utf-8")
    assert 'EXPERIMENT_NAME = "my-repo/golden"' in script
    assert "examples" not in script
    entries = sorted(p.relative_to(repo / "datasets" / "golden" / "data").as_posix()
                     for p in (repo / "datasets" / "golden" / "data").rglob("*.json"))
    assert entries == SCAFFOLD_ENTRIES
    makefile = (repo / "Makefile").read_text(encoding="utf-8")
    for target in ("eval:", "eval-%:", "eval-replicates:", "eval-calibrate:", "lint:", "ui:"):
        assert f"\n{target}" in makefile, target
    # The scaffold's eval.py runs as it is: its stub passes every type of its dataset.
    monkeypatch.chdir(repo)
    scaffold = runpy.run_path(str(repo / "eval.py"), run_name="scaffold")
    outcome = evaluate(EvalConfig.from_constants(scaffold, "eval.py"), scaffold["invoke_component"],
                       Selection("all"), RunContext(tracker=tracker))
    assert outcome.passed
    accuracy = {m.test_type: m.accuracy for m in outcome.metrics}
    assert accuracy == {"bias": 1.0, "functional": 1.0, "smoke": 1.0, "repeatability": 1.0}
    assert (repo / "reports" / "report-human-review.md").is_file()


def test_scaffold_schema_takes_any_expected_output_until_narrowed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert evalkit_command("init", tmp_path) == 0
    data = tmp_path / "datasets" / "golden" / "data"
    for name, answer in (("text", "Paris"), ("number", 42), ("list", ["a", "b"])):
        (data / "functional" / f"{name}.json").write_text(json.dumps({
            "$schema": "../../dataset.schema.json", "test_types": ["functional"],
            "input": f"a question with a {name} answer", "expected_output": answer}),
            encoding="utf-8")
    capsys.readouterr()
    assert evalkit_command("lint", tmp_path / "datasets" / "golden") == 0
    assert "10 entries, valid" in capsys.readouterr().out
    schema = json.loads((data.parent / "dataset.schema.json").read_text(encoding="utf-8"))
    assert set(schema["properties"]["expected_output"]) == {"$comment"}


def test_init_refuses_to_overwrite_and_lists_every_conflict(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "eval.py").write_text("# mine\n", encoding="utf-8")
    (tmp_path / "Makefile").write_text("all:\n", encoding="utf-8")
    assert evalkit_command("init", tmp_path, "--component", "router") == 2
    assert f"{tmp_path / 'Makefile'}\n  {tmp_path / 'eval.py'}" in capsys.readouterr().err
    assert (tmp_path / "eval.py").read_text(encoding="utf-8") == "# mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Makefile", "eval.py"]


def test_init_template_agent_writes_a_linted_agent_and_refuses_names_and_overwrites(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert evalkit_command("init", tmp_path, "--template", "agent", "--component", "x") == 2
    assert ("--template agent writes the example as it is (experiment orders-agent/orders, "
            "datasets/orders): drop --component and --dataset") in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert evalkit_command("init", tmp_path, "--template", "agent") == 0
    script = (tmp_path / "eval.py").read_text(encoding="utf-8")
    assert 'EXPERIMENT_NAME = "orders-agent/orders"' in script
    assert "langgraph" in script and "{{" not in script
    capsys.readouterr()
    assert evalkit_command("lint", tmp_path / "datasets" / "orders") == 0
    assert "5 entries, valid" in capsys.readouterr().out
    assert evalkit_command("init", tmp_path, "--template", "agent") == 2  # nothing overwritten
    assert f"{tmp_path / 'Makefile'}\n  {tmp_path / 'datasets'}" in capsys.readouterr().err


def test_a_template_leaves_out_what_pip_compiled_into_it(tmp_path: Path) -> None:
    from pathlib import PurePosixPath

    from evalkit.cli._init import _walk

    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "eval.cpython-311.pyc").write_bytes(b"\xa7\r\r\n")
    (tmp_path / "eval.py").write_text("x = 1\n", encoding="utf-8")
    assert [str(path) for path, _ in _walk(tmp_path, PurePosixPath())] == ["eval.py"]


def test_ui_prints_a_tracking_servers_own_url(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999")
    assert evalkit_command("ui") == 0
    assert capsys.readouterr().out == \
        "the tracking server serves its own UI: http://127.0.0.1:5999\n"


def test_init_dataset_beside_an_existing_eval_script_adds_only_that_dataset(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert evalkit_command("init", tmp_path) == 0
    before = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    capsys.readouterr()
    assert evalkit_command("init", "--dataset", "capitals", tmp_path) == 0
    out = capsys.readouterr().out
    added = sorted(set(p for p in tmp_path.rglob("*") if p.is_file()) - set(before))
    folder = tmp_path / "datasets" / "capitals"
    assert added and all(p.is_relative_to(folder) for p in added)
    assert len(added) == 2 + len(SCAFFOLD_ENTRIES)  # README, schema and the example entries
    assert out.splitlines()[-1] == 'next: point eval.py at it: DATASET_PATH = "datasets/capitals"'
    assert "# capitals" in (folder / "README.md").read_text(encoding="utf-8")
    assert evalkit_command("lint", folder) == 0
    # Refused only when that folder exists: nothing else of the scaffold is in the way.
    assert evalkit_command("init", "--dataset", "capitals", tmp_path) == 2
    assert f"{folder} exists" in capsys.readouterr().err


def test_init_dataset_beside_a_foreign_eval_script_still_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "eval.py").write_text("print('not evalkit')\n", encoding="utf-8")
    assert evalkit_command("init", "--dataset", "capitals", tmp_path) == 2
    assert "these exist:" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["eval.py"]
