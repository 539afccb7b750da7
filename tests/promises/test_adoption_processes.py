"""Day one in a user's repository, in processes of their own (slow): ``python -m evalkit`` is
the command, and a scaffold from ``evalkit init`` passes ``make eval`` and leaves git clean.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evalkit._distribution import VERSION
from tests.support.commands import evalkit_command
from tests.support.processes import run_command, run_evalkit

pytestmark = pytest.mark.slow


def test_python_dash_m_evalkit_is_the_command(tmp_path: Path) -> None:
    done = run_evalkit(tmp_path, "--version", seed_store=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"evalkit-mlflow {VERSION}\n"


def test_init_then_make_eval_passes_and_leaves_git_clean(tmp_path: Path) -> None:
    repo = tmp_path / "my-repo"
    assert evalkit_command("init", repo) == 0
    for git in (("init", "-q"), ("add", "-A"),
                ("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "scaffold")):
        assert run_command(repo, "git", *git).returncode == 0
    make = run_command(repo, "make", "eval", f"PYTHON={sys.executable}")
    assert make.returncode == 0, make.stderr
    assert "7 entries, valid" in make.stdout
    assert "PASS  repeatability_accuracy 1.000" in make.stdout  # request_id is not compared
    assert (repo / "reports" / "report-human-review.md").is_file()
    assert (repo / "mlflow.db.lock").is_file()  # the store, its lock, runs and reports: ignored
    status = run_command(repo, "git", "status", "--porcelain", "--untracked-files=all")
    assert status.stdout == ""
