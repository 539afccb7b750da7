"""Day one in a user's repository: the light core, init, ui, --version, constants reported
all at once, and the command-line conventions."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import mlflow
import pytest

from evalkit import ConfigError, EvalConfig, Selection, evaluate
from evalkit._distribution import SEMANTIC_EXTRA_COMMAND, VERSION
from evalkit.tracking import Tracker
from tests.conftest import entry, run_script, script_env, write_dataset, write_eval_script


def test_semantic_run_without_the_extra_fails_before_any_run_or_call(
        tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
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
                 tracker=Tracker(tracking_uri), runs_dir=tmp_path / "runs")
    assert SEMANTIC_EXTRA_COMMAND in str(raised.value)
    assert "sentence_transformers not installed" in str(raised.value)
    assert calls == []
    assert mlflow.MlflowClient(tracking_uri).get_experiment_by_name("adoption/no-extra") is None


def test_version_flag_prints_the_distribution_and_version() -> None:
    done = subprocess.run([sys.executable, "-m", "evalkit", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout.strip() == f"evalkit-mlflow {VERSION}"


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


def test_constants_a_selection_needs_are_all_reported_together(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "ds", {"r": entry("repeatability"),
                                              "f": entry("functional")})
    config = EvalConfig.from_constants({"EXPERIMENT_NAME": "adoption/needs",
                                        "DATASET_PATH": str(dataset),
                                        "SCORER_FUNCTIONAL": "llm_judge"}, "eval.py")
    with pytest.raises(ConfigError) as raised:
        evaluate(config, lambda e, c: "a", Selection("all"), runs_dir=tmp_path / "runs")
    message = str(raised.value)
    assert "4 problems" in message
    for expected in ("REPEAT_COUNT is missing", "EVAL_MIN_ACCURACY_REPEATABILITY is missing",
                     "no accuracy threshold for functional",
                     "scored by 'llm_judge' but JUDGE_MODEL is not declared"):
        assert expected in message


# --- the command line -------------------------------------------------------------------------

def _evalkit(*args: str, cwd: Path | None = None,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalkit", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd, env=env)


@pytest.mark.parametrize(("args", "hint"), [
    (["reprot", "x"], "invalid choice: 'reprot'"),
    (["init", "--componet", "x"], "unrecognized arguments: --componet"),
])
def test_misspelt_command_or_option_gets_a_suggestion(args: list[str], hint: str) -> None:
    done = _evalkit(*args)
    assert done.returncode == 2
    assert hint in done.stderr
    assert ("did you mean report?" if args[0] == "reprot" else "did you mean --component?") \
        in done.stderr


def test_eval_script_refuses_an_option_prefix(tmp_path: Path) -> None:
    write_eval_script(tmp_path, {"EXPERIMENT_NAME": "a/b", "DATASET_PATH": "ds"},
                      "def invoke_component(entry, call):\n    return 'a'")
    done = run_script(tmp_path, "--typ=all")
    assert done.returncode == 2
    assert "unrecognized arguments: --typ=all (did you mean --type?)" in done.stderr
    done = run_script(tmp_path, "--type=functionl")
    assert done.returncode == 2
    assert "(did you mean functional?)" in done.stderr


# --- evalkit init -----------------------------------------------------------------------------

def test_init_scaffolds_a_runnable_evaluation(tmp_path: Path) -> None:
    repo = tmp_path / "my-repo"
    repo.mkdir()
    (repo / ".gitignore").write_text("node_modules/\nmlruns/", encoding="utf-8")
    done = _evalkit("init", str(repo))
    assert done.returncode == 0, done.stderr
    assert (repo / "reports").is_dir()
    assert (repo / ".gitignore").read_text(encoding="utf-8") == (
        "node_modules/\nmlruns/\n# evalkit: the local MLflow store and run folders\n"
        "mlflow.db\n.evalkit/\n")
    script = (repo / "eval.py").read_text(encoding="utf-8")
    assert 'EXPERIMENT_NAME = "my-repo/golden"' in script
    assert "examples" not in script
    entries = sorted(p.relative_to(repo / "datasets" / "golden" / "data").as_posix()
                     for p in (repo / "datasets" / "golden" / "data").rglob("*.json"))
    assert entries == ["bias/name/ada.json", "bias/name/kwame.json",
                       "functional/double-charge.json", "functional/late-parcel.json",
                       "functional/opening-hours.json", "human-review/angry-customer.json",
                       "repeatability/password-reset.json"]
    make = subprocess.run(["make", "eval", f"PYTHON={sys.executable}"], cwd=repo,
                          capture_output=True, text=True, timeout=300, env=script_env(repo))
    assert make.returncode == 0, make.stderr
    assert "PASS  repeatability_accuracy 1.000" in make.stdout  # request_id is not compared
    assert (repo / "reports" / "report-human-review.md").is_file()


def test_init_refuses_to_overwrite_and_lists_every_conflict(tmp_path: Path) -> None:
    (tmp_path / "eval.py").write_text("# mine\n", encoding="utf-8")
    (tmp_path / "Makefile").write_text("all:\n", encoding="utf-8")
    done = _evalkit("init", str(tmp_path), "--component", "router")
    assert done.returncode == 2
    assert f"{tmp_path / 'Makefile'}\n  {tmp_path / 'eval.py'}" in done.stderr
    assert (tmp_path / "eval.py").read_text(encoding="utf-8") == "# mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Makefile", "eval.py"]


def test_ui_prints_a_tracking_servers_own_url() -> None:
    done = _evalkit("ui", env={**os.environ, "MLFLOW_TRACKING_URI": "http://127.0.0.1:5999"})
    assert done.returncode == 0
    assert done.stdout.strip() == "the tracking server serves its own UI: http://127.0.0.1:5999"
