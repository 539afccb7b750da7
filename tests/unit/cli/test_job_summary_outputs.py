"""Where CI shows the verdict, in this process over a store in memory: ``eval.py`` appends its
Markdown to the file ``GITHUB_STEP_SUMMARY`` names and writes ``--summary-md`` and
``--pr-comment``; a destination that cannot be written is one warning naming it and changes
nothing else; ``evalkit compare --json`` keeps stdout for its JSON; no secret of the
environment reaches a file. A real store and processes
of their own: tests/e2e/test_job_summary_store.py."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from evalkit.cli._job_summary import write_markdown
from evalkit.reports import EVAL_COMMENT_MARKER
from evalkit.tracking import Tracker
from tests.support.builders import RecordingComponent, entry, write_dataset
from tests.support.commands import eval_script, evalkit_command
from tests.support.markdown import tables

CONSTANTS = {"EXPERIMENT_NAME": "ci/summary", "DATASET_PATH": "ds", "EVAL_MIN_ACCURACY": 0.6}
EARLIER = "## Lint\n\nall datasets valid\n"


@pytest.fixture
def project(tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two functional entries and a smoke entry, tracked in memory."""
    write_dataset(tmp_path / "ds", {"right": entry("functional"), "wrong": entry("functional"),
                                    "s": entry("smoke")})
    monkeypatch.setattr("evalkit.evaluation._context.Tracker", lambda *args, **kwargs: tracker)
    monkeypatch.setattr("evalkit.cli._main._reachable", lambda: tracker)
    return tmp_path


def component() -> RecordingComponent:
    return RecordingComponent({"wrong": "nope"})


def test_eval_appends_to_the_job_summary_and_writes_both_files(
        project: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    step = project / "step-summary.md"
    step.write_text(EARLIER, encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    assert eval_script(CONSTANTS, component(), "--type=all", "--summary-md", "out/summary.md",
                       "--pr-comment", "out/comment.md") == 1
    out, err = capsys.readouterr()
    verdict, url = out.strip().splitlines()[-2:]  # still the last two lines
    assert verdict.startswith("FAIL: 1/2 types passed (failed: functional); 3 entries")
    assert ["job summary: " + str(step), "summary-md: out/summary.md",
            "pr-comment: out/comment.md"] == out.strip().splitlines()[-5:-2]
    assert "warning" not in err
    markdown = (project / "out" / "summary.md").read_text(encoding="utf-8")
    assert step.read_text(encoding="utf-8") == EARLIER + "\n" + markdown
    assert (project / "out" / "comment.md").read_text(encoding="utf-8") == (
        "<!-- evalkit: eval.py verdict -->\n" + markdown)
    assert markdown.startswith(f"### {verdict}\n\nRun [")
    assert f"]({url.removeprefix('run: ')}) in experiment ci/summary\n" in markdown
    (table,) = tables(markdown)
    assert [(row[0], row[4]) for row in table.rows] == [("functional", "FAIL"),
                                                         ("smoke", "PASS")]
    assert table.rows[0][2].startswith("0.500 [0.095, 0.905] (n = 2)")


def test_unwritable_destinations_warn_once_each_and_change_nothing_else(
        project: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (project / "a-file").write_text("", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project))  # a folder
    passing = {**CONSTANTS, "EVAL_MIN_ACCURACY": 0.5}
    assert eval_script(passing, component(), "--type=all", "--pr-comment",
                       "a-file/comment.md", "--summary-md", "out/summary.md") == 0
    out, err = capsys.readouterr()
    assert err.count("warning: ") == 2
    assert (f"warning: cannot write the Markdown verdict to {project} (named by "
            "GITHUB_STEP_SUMMARY): Is a directory; it is missing there, the run and its exit "
            "status are as without it") in err
    assert ("warning: cannot write the Markdown verdict to a-file/comment.md (named by "
            "--pr-comment): Not a directory;") in err
    assert "summary-md: out/summary.md" in out and "job summary" not in out
    assert (project / "out" / "summary.md").read_text(encoding="utf-8").startswith("### PASS")
    assert out.strip().splitlines()[-2].startswith("PASS: 2/2 types passed")


def test_the_job_summary_named_again_by_summary_md_is_appended_once(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    step = project / "step.md"
    step.write_text(EARLIER, encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "step.md")
    assert eval_script(CONSTANTS, component(), "--type=smoke", "--summary-md", str(step)) == 0
    text = step.read_text(encoding="utf-8")
    assert text.startswith(EARLIER + "\n### PASS: 1/1 types passed") and text.count("###") == 1


def run_id(component: RecordingComponent, capsys: pytest.CaptureFixture[str]) -> str:
    """The run of ``eval.py --type=functional`` with ``component``, by the line naming it."""
    eval_script(CONSTANTS, component, "--type=functional")
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("mlflow: run ")]
    return line.split()[2]


def test_compare_json_keeps_stdout_for_the_document(
        project: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    older, newer = (run_id(component(), capsys), run_id(RecordingComponent(), capsys))
    step = project / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    capsys.readouterr()
    assert evalkit_command("compare", newer, older, "--json", "--pr-comment", "c.md") == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["metrics"][0]["gap"] == pytest.approx(0.5)
    assert err.splitlines() == [f"job summary: {step}", "pr-comment: c.md"]
    markdown = step.read_text(encoding="utf-8").removeprefix("\n")
    assert (project / "c.md").read_text(encoding="utf-8") == (
        "<!-- evalkit: compare verdict -->\n" + markdown)
    (table,) = tables(markdown)
    row: Any = table.rows[0]
    assert row[:3] == ("functional", "1.000", "0.500")
    assert row[5:] == ("1 / 0 of 2", "not gated (no replicates)")


def test_a_secret_of_the_environment_never_reaches_the_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-proj-" + "7" * 32
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step.md"))
    options = argparse.Namespace(summary_md=None, pr_comment=tmp_path / "comment.md")
    assert write_markdown(options, f"### FAIL: the provider said {key} is invalid\n",
                          EVAL_COMMENT_MARKER) == [f"job summary: {tmp_path / 'step.md'}",
                                                   f"pr-comment: {tmp_path / 'comment.md'}"]
    for name in ("step.md", "comment.md"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert key not in text and "said [REDACTED:OPENAI_API_KEY] is invalid" in text
