"""What defines the component, on a real local store and git: the commit before the first
commit and the diff of a dirty tree, prompts versioned only when changed, and history marking
a run made with an uncommitted prompt change.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from dataclasses import replace
from pathlib import Path

import mlflow
import pytest

from evalkit import RunContext, Selection, evaluate
from evalkit.records import names
from evalkit.tracking import Tracker, history, render_history, source_state
from tests.support.builders import RecordingComponent, config_for, entry, write_dataset
from tests.unit.tracking.test_what_changed import CHATTY, TERSE, compare_output, run_with_prompt

# --- git checkouts (subprocesses), a real prompt registry --------------------------------------

def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=folder, check=True, capture_output=True)


def test_git_commit_before_the_first_commit_and_the_diff_of_a_dirty_tree(
        tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    (outside / "eval.py").write_text("X = 1\n")
    state = source_state("eval.py", outside / "eval.py", modules=[])
    assert state.tags[names.GIT_COMMIT_TAG] == names.NOT_A_CHECKOUT and state.diff == ""

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "eval.py").write_text("PROMPT = 'terse'\n")
    git(repo, "add", "eval.py")
    state = source_state("eval.py", repo / "eval.py", modules=[])
    assert state.tags[names.GIT_COMMIT_TAG] == names.NO_COMMIT
    assert "+PROMPT = 'terse'" in state.diff and names.CODE_DIFF_SHA_TAG in state.tags

    git(repo, "commit", "-q", "-m", "first")
    clean = source_state("eval.py", repo / "eval.py", modules=[])
    assert clean.tags[names.GIT_DIRTY_TAG] == "false" and clean.diff == ""
    assert names.CODE_DIFF_SHA_TAG not in clean.tags
    (repo / "eval.py").write_text("PROMPT = 'chatty'\n")
    (repo / "untracked.py").write_text("SECRET = 1\n")
    dirty = source_state("eval.py", repo / "eval.py", modules=[])
    assert dirty.tags[names.GIT_COMMIT_TAG] == clean.tags[names.GIT_COMMIT_TAG]
    assert dirty.tags[names.GIT_DIRTY_TAG] == "true"
    assert "-PROMPT = 'terse'\n+PROMPT = 'chatty'" in dirty.diff
    assert "untracked" not in dirty.diff  # tracked files only
    assert dirty.tags[names.COMPONENT_SOURCE_SHA_TAG] != clean.tags[
        names.COMPONENT_SOURCE_SHA_TAG]


@pytest.mark.mlflow_api
def test_component_prompts_get_a_version_only_when_changed_and_are_linked(
        tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    tracker = Tracker(tracking_uri)
    experiment = f"registry-{uuid.uuid4().hex[:8]}/golden"
    runs = [run_with_prompt(tmp_path, tracker, text, EXPERIMENT_NAME=experiment,
                            TRACE_CALLS=False) for text in (TERSE, CHATTY, CHATTY)]
    client = mlflow.MlflowClient(tracking_uri)
    name = f"{experiment.split('/')[0]}-system"
    linked = [json.loads(client.get_run(r).data.tags[names.LINKED_PROMPTS_TAG]) for r in runs]
    assert linked == [[{"name": name, "version": "1"}], [{"name": name, "version": "2"}],
                      [{"name": name, "version": "2"}]]  # unchanged: no third version
    assert client.load_prompt(f"prompts:/{name}/2").template == CHATTY
    status, out = compare_output(tracker, runs[0], runs[1], monkeypatch, capsys)
    assert status == 0
    assert out.splitlines()[1].startswith(f"  prompt {name}: v1 (sha256 ")
    assert " -> v2 (sha256 " in out.splitlines()[1]


def test_history_marks_the_run_made_with_an_uncommitted_prompt_change(
        tmp_path: Path, tracker: Tracker) -> None:
    """Two runs at one commit, the second after the prompt in eval.py was edited and not
    committed: history shows the same commit for both, the second followed by '+'."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "eval.py").write_text("PROMPT = 'terse'\n")
    git(repo, "add", "eval.py")
    git(repo, "commit", "-q", "-m", "first")
    dataset = write_dataset(tmp_path / "ds", {"q": entry("functional")})
    config = replace(config_for(tmp_path, dataset), source_file=repo / "eval.py")
    clean = evaluate(config, RecordingComponent({"q": "a"}), Selection("all"),
                     RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    (repo / "eval.py").write_text("PROMPT = 'chatty'\n")
    dirty = evaluate(config, RecordingComponent({"q": "a"}), Selection("all"),
                     RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))

    rows = history(tracker.reader, config.experiment_name)
    assert [(r.run_id, r.git_dirty) for r in rows] == [(dirty.run_id, True),
                                                       (clean.run_id, False)]
    assert rows[0].git_commit == rows[1].git_commit
    lines = render_history(rows).splitlines()
    commits = [line.split()[-1] for line in lines if line.startswith("20")]
    assert commits == [rows[0].git_commit[:7] + "+", rows[1].git_commit[:7]]
    assert lines[-1].startswith("commit+: the run started with uncommitted changes")
