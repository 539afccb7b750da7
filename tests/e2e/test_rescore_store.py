"""Rescoring on a real store: ``eval.py --rescore`` and ``evalkit rescore``, a damaged artifact
(exit 2, with a fix that works), and the example rescored with a changed threshold.
"""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from evalkit.records import names
from evalkit.tracking import Tracker
from tests.support.builders import (
    REPO,
    write_dataset,
    write_eval_script,
)
from tests.support.processes import run_command, run_eval, run_evalkit
from tests.unit.evaluation.test_rescore import ENTRIES

# --- on a real store (slow) ---------------------------------------------------------------------

COUNTING = """
from answers import ANSWERS
def invoke_component(entry, call):
    with open("calls.log", "a") as log:
        log.write(entry.id + "\\n")
    return ANSWERS.get(entry.id, "a")
"""


def test_eval_py_and_evalkit_rescore_on_a_real_store(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    write_dataset(tmp_path / "ds", {k: v for k, v in ENTRIES.items() if k != "r1"})
    (tmp_path / "answers.py").write_text("ANSWERS = {'f4': 'wrong'}\n", encoding="utf-8")
    constants = {"EXPERIMENT_NAME": "rescore/real", "DATASET_PATH": "ds",
                 "EVAL_MIN_ACCURACY": 0.7}
    script = write_eval_script(tmp_path, constants, COUNTING)
    assert run_eval(tmp_path, "--type=all").returncode == 0
    source = (tmp_path / ".evalkit" / "runs").iterdir().__next__().name
    assert len((tmp_path / "calls.log").read_text().splitlines()) == 4

    write_eval_script(tmp_path, {**constants, "EVAL_MIN_ACCURACY": 0.8}, COUNTING)
    done = run_evalkit(tmp_path, "rescore", source[:8], "--script", str(script))
    assert done.returncode == 1, done.stderr
    assert "FAIL  functional_accuracy 0.750" in done.stdout
    assert f"rescoring run {source} as run" in done.stderr
    again_done = run_eval(tmp_path, "--rescore", source)
    assert again_done.returncode == 1
    assert len((tmp_path / "calls.log").read_text().splitlines()) == 4  # no call since
    summary = (tmp_path / "reports" / "summary.md").read_text()
    assert f"- **Rescored from:** run {source}" in summary


def test_a_damaged_artifact_on_a_real_store_exits_2_with_a_fix_that_works(
        tmp_path: Path) -> None:
    """The artifact of a finished run loses its last bytes: evalkit rescore exits 2 naming
    the line and the command that puts this machine's copy back; that command, run as
    printed, makes the rescore go ahead (and evalkit resume was never the fix)."""
    write_dataset(tmp_path / "ds", {k: v for k, v in ENTRIES.items() if k != "r1"})
    (tmp_path / "answers.py").write_text("ANSWERS = {'f4': 'wrong'}\n", encoding="utf-8")
    write_eval_script(tmp_path, {"EXPERIMENT_NAME": "rescore/damaged", "DATASET_PATH": "ds",
                                 "EVAL_MIN_ACCURACY": 0.7}, COUNTING)
    assert run_eval(tmp_path, "--type=all").returncode == 0
    source = next((tmp_path / ".evalkit" / "runs").iterdir()).name
    artifact = next(tmp_path.rglob(f"{source}/artifacts/raw/raw-results.jsonl"))
    artifact.write_bytes(artifact.read_bytes()[:-20])

    refused = run_evalkit(tmp_path, "rescore", source)
    assert refused.returncode == 2, refused.stderr
    assert (f"error: run {source}'s raw results (raw/raw-results.jsonl) are damaged: its last "
            "line (line 4) is cut off mid-record") in refused.stderr
    assert "resume it first" not in refused.stderr and "Traceback" not in refused.stderr
    fix = re.search(r"\(mlflow (artifacts log-artifact .*?), with MLFLOW_TRACKING_URI=(\S+)\)",
                    refused.stderr)
    assert fix is not None, refused.stderr
    put_back = run_command(tmp_path, sys.executable, "-m", "mlflow", *fix[1].split(),
                           env={"MLFLOW_TRACKING_URI": fix[2]})
    assert put_back.returncode == 0, put_back.stderr
    done = run_evalkit(tmp_path, "rescore", source)
    assert done.returncode == 0, done.stderr
    assert len((tmp_path / "calls.log").read_text().splitlines()) == 4  # no call since


def test_the_example_rescored_with_a_changed_threshold(tmp_path: Path) -> None:
    for part in ("examples", "datasets"):
        shutil.copytree(REPO / part, tmp_path / part)
    script = (REPO / "eval.py").read_text(encoding="utf-8")
    counting = textwrap.dedent("""
        _invoke = invoke_component


        def invoke_component(entry, call):  # counts the component's calls
            with open("calls.log", "a") as log:
                log.write(entry.id + "\\n")
            return _invoke(entry, call)


        if __name__ == "__main__":""")
    script = script.replace('\n\nif __name__ == "__main__":', counting, 1)
    (tmp_path / "eval.py").write_text(script, encoding="utf-8")
    first = run_eval(tmp_path, "--type=functional", "--groups=billing")
    assert first.returncode == 0, first.stderr
    source = next((tmp_path / ".evalkit" / "runs").iterdir()).name
    made = len((tmp_path / "calls.log").read_text().splitlines())
    assert made > 0

    # the example's router routes every functional entry right: the threshold raised to
    # 1.0 still passes, and the new run holds it
    (tmp_path / "eval.py").write_text(script.replace(
        "EVAL_MIN_ACCURACY = 0.8", "EVAL_MIN_ACCURACY = 1.0"), encoding="utf-8")
    done = run_evalkit(tmp_path, "rescore", source)
    assert done.returncode == 0, done.stderr
    assert len((tmp_path / "calls.log").read_text().splitlines()) == made
    new = re.search(r"^mlflow: run ([0-9a-f]{32}) in support-router/golden", done.stdout,
                    re.MULTILINE)
    assert new is not None, done.stdout
    stored = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}").reader.stored(new[1])
    assert stored.tags[names.RESCORED_FROM_TAG] == source
    assert stored.params["EVAL_MIN_ACCURACY"] == "1.0"
    assert stored.params["component.temperature"] == "0.05"
    accuracy = [line for out in (first.stdout, done.stdout) for line in out.splitlines()
                if line.startswith("PASS  functional_accuracy")]
    assert len(accuracy) == 2 and accuracy[0] == accuracy[1]  # the same outputs, scored alike
