"""The harness of the lint promises (promises/test_lint_corpus.py and its control,
test_hostile_datasets.py): lint's violations held against what each case expects, and eval.py
or ``evalkit`` run in-process over a dataset, with what they printed and called.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import evalkit
from tests.promises.lint_corpus_expected import Expected
from tests.support.builders import REPO
from tests.support.commands import eval_script, evalkit_command


def relative_to(file: str, dataset: Path) -> str:
    """``LintViolation.file`` (relative to the cwd when possible) relative to ``dataset``."""
    # abspath, not resolve(): a violation about a symlink names the link, not its target.
    return Path(os.path.abspath(file)).relative_to(os.path.abspath(dataset)).as_posix()


def summarise(violations: tuple[evalkit.LintViolation, ...], dataset: Path,
               expected: list[Expected]) -> list[Expected]:
    """Violations as (file, pointer, message) with the message replaced by the expected
    substring it matches, so that the comparison with ``expected`` reads well when it fails."""
    found = []
    for v in violations:
        file = relative_to(v.file, dataset)
        matches = [m for f, p, m in expected if f == file and p == v.pointer and m in v.message]
        found.append((file, v.pointer, matches[0] if len(matches) == 1 else v.message))
    return found


def assert_violations(violations: tuple[evalkit.LintViolation, ...], dataset: Path,
                       expected: list[Expected]) -> None:
    found = summarise(violations, dataset, expected)
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


def evalkit_in_process(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
             *args: str | Path, cwd: Path = REPO) -> Done:
    """``evalkit ARGS`` from ``cwd``."""
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    status = evalkit_command(*args)
    out, err = capsys.readouterr()
    return Done(status, out, err)


def violation_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ". Fix: " in line]


def assert_listed(stderr: str, prefix: str, expected: list[Expected]) -> None:
    """Every expected violation has a line of its own:
    ``<prefix><file>: <pointer>: <message>. Fix: <fix>`` (pointer ``/`` for the whole file)."""
    lines = violation_lines(stderr)
    unclaimed = list(lines)
    for file, pointer, message in expected:
        head = f"{prefix}{file}: {pointer or '/'}: "
        match = next((line for line in unclaimed
                      if head in line and message in line.split(head, 1)[1].split(". Fix: ")[0]
                      and line.split(". Fix: ", 1)[1].strip()), None)
        assert match is not None, f"no line for {(file, pointer, message)} in:\n{stderr}"
        unclaimed.remove(match)


def eval_constants(dataset: Path) -> dict[str, Any]:
    return {"EXPERIMENT_NAME": "broken/lint", "DATASET_PATH": str(dataset),
            "EVAL_MIN_ACCURACY": 0.5, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5, "REPEAT_COUNT": 3}


@dataclass(frozen=True)
class EvalDone(Done):
    calls: list[tuple[str, int]]
    """(entry id, repeat) of every component call."""


def run_eval_in_process(capsys: pytest.CaptureFixture[str], dataset: Path, *args: str) -> EvalDone:
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


def assert_nothing_run(tmp_path: Path, done: EvalDone) -> None:
    """No call, and no store at all (so no MLflow run), no raw results, no reports."""
    assert done.calls == [], "the component was called"
    assert not (tmp_path / "mlflow.db").exists()
    assert not (tmp_path / "reports").exists()
    assert not (tmp_path / ".evalkit").exists()
