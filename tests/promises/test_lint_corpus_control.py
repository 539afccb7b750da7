"""The control of the lint corpus end to end (slow): the minimal valid dataset is called and
its run recorded, so the broken datasets' "nothing run" means something.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalkit.tracking import Tracker
from tests.promises.lint_corpus_expected import VALID
from tests.support.lint import run_eval_in_process

pytestmark = pytest.mark.slow


def test_control_valid_dataset_is_called_and_recorded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same harness on the valid dataset does see the call and the run, so the test above
    cannot pass merely because nothing could be observed. (Slow: the run goes to a real store,
    the one the test above would find created.)"""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    shutil.copytree(VALID, tmp_path / "dataset")
    done = run_eval_in_process(capsys, Path("dataset"), "--type=functional")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.calls == [("functional/opening_hours", 0)]
    (run,) = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}").reader.runs(
        "broken/lint")
    assert run.status == "FINISHED"
    assert (tmp_path / "reports" / "report-functional.md").exists()
    assert list((tmp_path / ".evalkit" / "runs").glob("*/raw-results.jsonl"))
