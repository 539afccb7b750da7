"""Lint against a corpus of broken datasets: every violation listed, nothing run.

Each folder of ``tests/promises/broken_datasets/`` is a small dataset with exactly the
defect(s) named in its README (and in ``tests/promises/broken_datasets/README.md``).
:data:`EXPECTED` is what lint must report for it: the exact multiset of (file relative to the
dataset folder, JSON pointer, a distinctive substring of the message). Nothing more, nothing
less.

``tests/promises/datasets/minimal_valid/`` is the control: it must lint clean, and the
end-to-end control test (test_lint_corpus_control.py, slow) proves that the harness used for the
broken datasets does see calls and runs when there are some. The ``evalkit lint`` command and
eval.py run in-process (they return the exit status).
"""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import evalkit
from tests.promises.lint_corpus_expected import EXPECTED, Expected
from tests.support.builders import REPO
from tests.support.commands import eval_script, evalkit_command

BROKEN = REPO / "tests" / "promises" / "broken_datasets"
VALID = REPO / "tests" / "promises" / "datasets" / "minimal_valid"

CASES = sorted(EXPECTED)
CLI_CASES = ["many_violations", "schema_file_missing", "no_readme"]


# --- helpers ----------------------------------------------------------------------------------


def _relative(file: str, dataset: Path) -> str:
    """``LintViolation.file`` (relative to the cwd when possible) relative to ``dataset``."""
    # abspath, not resolve(): a violation about a symlink names the link, not its target.
    return Path(os.path.abspath(file)).relative_to(os.path.abspath(dataset)).as_posix()


def _summarise(violations: tuple[evalkit.LintViolation, ...], dataset: Path,
               expected: list[Expected]) -> list[Expected]:
    """Violations as (file, pointer, message) with the message replaced by the expected
    substring it matches, so that the comparison with ``expected`` reads well when it fails."""
    found = []
    for v in violations:
        file = _relative(v.file, dataset)
        matches = [m for f, p, m in expected if f == file and p == v.pointer and m in v.message]
        found.append((file, v.pointer, matches[0] if len(matches) == 1 else v.message))
    return found


def _assert_violations(violations: tuple[evalkit.LintViolation, ...], dataset: Path,
                       expected: list[Expected]) -> None:
    found = _summarise(violations, dataset, expected)
    assert Counter(found) == Counter(expected), (
        f"{dataset.name}: lint reported\n  " + "\n  ".join(map(str, found))
        + "\nexpected\n  " + "\n  ".join(map(str, expected)))
    for v in violations:
        assert v.fix.strip(), f"{v.file}: {v.pointer}: {v.message}: no fix"
        assert v.message.strip()


@dataclass(frozen=True)
class Done:
    """What a command line run in-process ended with."""

    returncode: int
    stdout: str
    stderr: str


def _evalkit(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
             *args: str | Path, cwd: Path = REPO) -> Done:
    """``evalkit ARGS`` from ``cwd``."""
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    status = evalkit_command(*args)
    out, err = capsys.readouterr()
    return Done(status, out, err)


def _violation_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ". Fix: " in line]


def _assert_listed(stderr: str, prefix: str, expected: list[Expected]) -> None:
    """Every expected violation has a line of its own:
    ``<prefix><file>: <pointer>: <message>. Fix: <fix>`` (pointer ``/`` for the whole file)."""
    lines = _violation_lines(stderr)
    unclaimed = list(lines)
    for file, pointer, message in expected:
        head = f"{prefix}{file}: {pointer or '/'}: "
        match = next((line for line in unclaimed
                      if head in line and message in line.split(head, 1)[1].split(". Fix: ")[0]
                      and line.split(". Fix: ", 1)[1].strip()), None)
        assert match is not None, f"no line for {(file, pointer, message)} in:\n{stderr}"
        unclaimed.remove(match)


# --- the corpus is what its README says -------------------------------------------------------


def test_every_folder_has_expectations_and_a_readme_row() -> None:
    folders = sorted(p.name for p in BROKEN.iterdir() if p.is_dir())
    assert folders == CASES
    table = (BROKEN / "README.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([a-z0-9_]+)` \|", table, flags=re.MULTILINE))
    assert rows == set(CASES)


def test_many_violations_has_at_least_six_kinds_over_three_files() -> None:
    expected = EXPECTED["many_violations"]
    assert len({file for file, _, _ in expected}) >= 3
    assert len({(pointer, message) for _, pointer, message in expected}) >= 6


# --- lint, in process ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_lint_reports_every_violation(case: str) -> None:
    dataset = BROKEN / case
    report = evalkit.lint_dataset(dataset)
    assert not report.ok
    _assert_violations(report.violations, dataset, EXPECTED[case])


@pytest.mark.parametrize("case", CASES)
def test_load_dataset_refuses(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    dataset = BROKEN / case
    monkeypatch.chdir(dataset)  # files are then displayed relative to the dataset itself
    with pytest.raises(evalkit.DatasetInvalid) as raised:
        evalkit.load_dataset(".")
    error = raised.value
    assert error.exit_status == evalkit.ExitStatus.DATASET_INVALID == 3
    _assert_violations(error.report.violations, dataset, EXPECTED[case])
    assert error.report.violations == evalkit.lint_dataset(".").violations
    for v in error.report.violations:
        assert v.render() in str(error)


def test_violations_are_listed_in_file_order() -> None:
    report = evalkit.lint_dataset(BROKEN / "many_violations")
    files = [_relative(v.file, BROKEN / "many_violations") for v in report.violations]
    assert files == sorted(files, key=lambda f: Path(f).parts)
    assert "3 file(s)" in report.render() and "10 violation(s)" in report.render()


def test_wrong_depth_fix_names_the_right_path() -> None:
    report = evalkit.lint_dataset(BROKEN / "schema_ref_wrong_depth")
    assert report.violations
    for v in report.violations:
        assert "'../../dataset.schema.json'" in v.fix


def test_stray_files_are_warned_about_not_linted() -> None:
    report = evalkit.lint_dataset(BROKEN / "no_data_files")
    assert report.files_checked == 0
    assert len(report.warnings) == 1 and "entry.txt" in report.warnings[0]
    assert "ignored" in report.warnings[0]


def test_missing_dataset_folder_is_a_violation(tmp_path: Path) -> None:
    report = evalkit.lint_dataset(tmp_path / "nope")
    assert [v.message for v in report.violations] == ["dataset folder not found"]
    assert report.violations[0].fix


# --- the valid control --------------------------------------------------------------------------


def test_minimal_valid_lints_clean() -> None:
    report = evalkit.lint_dataset(VALID)
    assert report.ok, report.render()
    assert report.warnings == ()
    assert report.files_checked == 4
    dataset = evalkit.load_dataset(VALID)
    assert [e.id for e in dataset.entries] == [
        "bias/casual", "bias/formal", "functional/opening_hours", "repeatability/opening_hours"]
    by_id = {e.id: e for e in dataset.entries}
    assert by_id["functional/opening_hours"].expected_output is not None
    assert by_id["repeatability/opening_hours"].expected_output is None
    assert by_id["bias/casual"].bias_key == by_id["bias/formal"].bias_key == ("str", "register")


def test_minimal_valid_cli_exits_0(capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    done = _evalkit(capsys, monkeypatch, "lint", VALID)
    assert done.returncode == 0, done.stderr
    assert "4 entries, valid" in done.stdout
    assert _violation_lines(done.stderr) == []


# --- the evalkit command --------------------------------------------------------------------------


@pytest.mark.parametrize("case", CLI_CASES)
def test_cli_lint_lists_every_violation(case: str, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    done = _evalkit(capsys, monkeypatch, "lint", case, cwd=BROKEN)
    assert done.returncode == 3, done.stderr
    _assert_listed(done.stderr, f"{case}/", EXPECTED[case])
    assert len(_violation_lines(done.stderr)) == len(EXPECTED[case])


def test_cli_lints_all_cases_at_once(capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    done = _evalkit(capsys, monkeypatch, "lint",
                    *(BROKEN.relative_to(REPO) / case for case in CASES))
    assert done.returncode == 3, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    for case in CASES:
        _assert_listed(done.stderr, f"tests/promises/broken_datasets/{case}/", EXPECTED[case])
        assert f"tests/promises/broken_datasets/{case}: " in done.stderr
    assert len(_violation_lines(done.stderr)) == sum(map(len, EXPECTED.values()))


def test_cli_lints_valid_and_broken_together(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    done = _evalkit(capsys, monkeypatch, "lint", VALID, BROKEN / "no_readme")
    assert done.returncode == 3
    assert "4 entries, valid" in done.stdout
    assert "README.md is missing" in done.stderr


# --- end to end: an invalid dataset makes no call and no MLflow run -------------------------------


def eval_constants(dataset: Path) -> dict[str, Any]:
    return {"EXPERIMENT_NAME": "broken/lint", "DATASET_PATH": str(dataset),
            "EVAL_MIN_ACCURACY": 0.5, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5, "REPEAT_COUNT": 3}


@dataclass(frozen=True)
class EvalDone(Done):
    calls: list[tuple[str, int]]
    """(entry id, repeat) of every component call."""


def _run_eval(capsys: pytest.CaptureFixture[str], dataset: Path, *args: str) -> EvalDone:
    """eval.py over ``dataset``, in-process; its store is the test's own,
    so whether a run was created shows as whether ``mlflow.db`` exists."""
    calls: list[tuple[str, int]] = []

    def invoke_component(entry: evalkit.Entry, call: evalkit.Call) -> str:
        calls.append((entry.id, call.repeat))
        return "9am to 5pm, Monday to Friday"

    capsys.readouterr()
    status = eval_script(eval_constants(dataset), invoke_component, *args)
    out, err = capsys.readouterr()
    return EvalDone(status, out, err, calls)


def _assert_nothing_run(tmp_path: Path, done: EvalDone) -> None:
    """No call, and no store at all (so no MLflow run), no raw results, no reports."""
    assert done.calls == [], "the component was called"
    assert not (tmp_path / "mlflow.db").exists()
    assert not (tmp_path / "reports").exists()
    assert not (tmp_path / ".evalkit").exists()


@pytest.mark.parametrize("case", CASES)
def test_invalid_dataset_makes_no_call_and_no_mlflow_run(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = tmp_path / "dataset"
    shutil.copytree(BROKEN / case, dataset)
    done = _run_eval(capsys, Path("dataset"), "--type=all")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    _assert_listed(done.stderr, "dataset/", EXPECTED[case])
    assert len(_violation_lines(done.stderr)) == len(EXPECTED[case])
    assert "no component was called and no MLflow run was created" in done.stderr
    _assert_nothing_run(tmp_path, done)
