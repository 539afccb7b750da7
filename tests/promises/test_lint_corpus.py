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

import re
import shutil
from pathlib import Path

import pytest

import evalkit
from evalkit.cli._exit import exit_status_of
from tests.promises.lint_corpus_expected import BROKEN, EXPECTED, VALID
from tests.support.builders import REPO
from tests.support.lint import (
    assert_listed,
    assert_nothing_run,
    assert_violations,
    evalkit_in_process,
    relative_to,
    run_eval_in_process,
    violation_lines,
)

CASES = sorted(EXPECTED)
CLI_CASES = ["many_violations", "schema_file_missing", "no_readme"]


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
    assert_violations(report.violations, dataset, EXPECTED[case])


@pytest.mark.parametrize("case", CASES)
def test_load_dataset_refuses(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    dataset = BROKEN / case
    monkeypatch.chdir(dataset)  # files are then displayed relative to the dataset itself
    with pytest.raises(evalkit.DatasetInvalid) as raised:
        evalkit.load_dataset(".")
    error = raised.value
    assert exit_status_of(error) == evalkit.ExitStatus.DATASET_INVALID == 3
    assert_violations(error.report.violations, dataset, EXPECTED[case])
    assert error.report.violations == evalkit.lint_dataset(".").violations
    for v in error.report.violations:
        assert v.render() in str(error)


def test_violations_are_listed_in_file_order() -> None:
    report = evalkit.lint_dataset(BROKEN / "many_violations")
    files = [relative_to(v.file, BROKEN / "many_violations") for v in report.violations]
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
    done = evalkit_in_process(capsys, monkeypatch, "lint", VALID)
    assert done.returncode == 0, done.stderr
    assert "4 entries, valid" in done.stdout
    assert violation_lines(done.stderr) == []


# --- the evalkit command --------------------------------------------------------------------------


@pytest.mark.parametrize("case", CLI_CASES)
def test_cli_lint_lists_every_violation(case: str, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    done = evalkit_in_process(capsys, monkeypatch, "lint", case, cwd=BROKEN)
    assert done.returncode == 3, done.stderr
    assert_listed(done.stderr, f"{case}/", EXPECTED[case])
    assert len(violation_lines(done.stderr)) == len(EXPECTED[case])


def test_cli_lints_all_cases_at_once(capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    done = evalkit_in_process(capsys, monkeypatch, "lint",
                    *(BROKEN.relative_to(REPO) / case for case in CASES))
    assert done.returncode == 3, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    for case in CASES:
        assert_listed(done.stderr, f"tests/promises/broken_datasets/{case}/", EXPECTED[case])
        assert f"tests/promises/broken_datasets/{case}: " in done.stderr
    assert len(violation_lines(done.stderr)) == sum(map(len, EXPECTED.values()))


def test_cli_lints_valid_and_broken_together(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    done = evalkit_in_process(capsys, monkeypatch, "lint", VALID, BROKEN / "no_readme")
    assert done.returncode == 3
    assert "4 entries, valid" in done.stdout
    assert "README.md is missing" in done.stderr


# --- end to end: an invalid dataset makes no call and no MLflow run -------------------------------


@pytest.mark.parametrize("case", CASES)
def test_invalid_dataset_makes_no_call_and_no_mlflow_run(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = tmp_path / "dataset"
    shutil.copytree(BROKEN / case, dataset)
    done = run_eval_in_process(capsys, Path("dataset"), "--type=all")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert_listed(done.stderr, "dataset/", EXPECTED[case])
    assert len(violation_lines(done.stderr)) == len(EXPECTED[case])
    assert "no component was called and no MLflow run was created" in done.stderr
    assert_nothing_run(tmp_path, done)
