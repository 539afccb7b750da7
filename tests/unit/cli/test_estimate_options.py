"""``--estimate``, ``--ignore-estimate`` and ``MAX_COST_USD`` at eval.py's command line: what
is refused, with what message and status, before any store or call exists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry
from evalkit.cli._exit import EXIT_STATUSES, ExitStatus
from tests.support.builders import entry, write_dataset
from tests.support.commands import eval_script


def _never_called(entry: Entry, call: Call) -> str:
    raise AssertionError("the component was called")


def _constants(tmp_path: Path, **more: Any) -> dict[str, Any]:
    dataset = write_dataset(tmp_path / "ds", {"e": entry("functional")})
    return {"EXPERIMENT_NAME": "cost/options", "DATASET_PATH": str(dataset),
            "EVAL_MIN_ACCURACY": 0.5, "TOKEN_PRICES": {"m": (1.0, 2.0)}, **more}


@pytest.mark.parametrize("mode", [["--resume", "abcd1234"], ["--rescore", "abcd1234"],
                                  ["--type=all", "--calibrate"]])
def test_estimate_takes_a_new_run_only(tmp_path: Path, mode: list[str],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    status = eval_script(_constants(tmp_path), _never_called, "--estimate", *mode)
    assert status == ExitStatus.USAGE
    assert "--estimate estimates a new run: give --type" in capsys.readouterr().err
    assert not (tmp_path / "mlflow.db").exists()


@pytest.mark.parametrize(("value", "shown"), [(0, "0"), (-2.5, "-2.5"), ("10", "'10'"),
                                              (float("inf"), "inf")])
def test_a_bad_max_cost_usd_is_refused_before_anything_runs(
        tmp_path: Path, value: Any, shown: str, capsys: pytest.CaptureFixture[str]) -> None:
    for options in (["--type=all"], ["--type=all", "--estimate"]):
        status = eval_script(_constants(tmp_path, MAX_COST_USD=value), _never_called, *options)
        assert status == ExitStatus.USAGE
        err = capsys.readouterr().err
        assert (f"error: eval.py: MAX_COST_USD={shown} must be a positive, finite number of US "
                "dollars, e.g. MAX_COST_USD = 5.0 (or remove it: no limit)") in err
        assert "Traceback" not in err
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / ".evalkit").exists()


def test_max_cost_usd_without_prices_is_refused(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    constants = {k: v for k, v in _constants(tmp_path, MAX_COST_USD=1.0).items()
                 if k != "TOKEN_PRICES"}
    assert eval_script(constants, _never_called, "--type=all") == ExitStatus.USAGE
    assert "MAX_COST_USD is declared but TOKEN_PRICES is not" in capsys.readouterr().err


def test_help_documents_the_budget_status_and_the_options(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert "  7    stopped for budget: the next call would have taken the run's spending past\n" \
           "       MAX_COST_USD" in EXIT_STATUSES
    assert eval_script({}, _never_called, "--help") == 0
    shown = capsys.readouterr().out
    assert "--estimate" in shown and "--ignore-estimate" in shown and "  7    " in shown


def test_estimate_takes_sequential_and_refuses_it_with_replicates(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    constants = _constants(tmp_path)
    assert eval_script(constants, _never_called, "--type=all", "--estimate",
                       "--sequential") == ExitStatus.OK
    # nothing to simulate from: the full run's calls, the most a sequential run makes
    assert "1 entries, 1 component calls; nothing was called" in capsys.readouterr().out
    status = eval_script({**constants, "SEQUENTIAL": True}, _never_called, "--type=all",
                         "--estimate", "--replicates")
    assert status == ExitStatus.USAGE
    assert "cannot be used with --replicates" in capsys.readouterr().err
