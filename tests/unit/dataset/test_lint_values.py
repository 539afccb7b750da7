"""Lint takes entry values literally: only null means "no expected output"; 0, false and ""
are expected outputs like any other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import evalkit
from tests.support.builders import entry, write_dataset

FALSY = [0, 0.0, False, "", [], {}]


@pytest.mark.parametrize("expected", FALSY, ids=repr)
def test_a_falsy_expected_output_is_valid_and_kept(tmp_path: Path, expected: Any) -> None:
    dataset = write_dataset(tmp_path / "ds", {"e": entry("functional", "smoke",
                                                         expected=expected)})
    report = evalkit.lint_dataset(dataset)
    assert report.ok, report.render()
    (loaded,) = evalkit.load_dataset(dataset).entries
    assert loaded.expected_output == expected
    assert type(loaded.expected_output) is type(expected)


@pytest.mark.parametrize("expected", FALSY, ids=repr)
def test_a_falsy_expected_output_is_not_null_for_rule_c(tmp_path: Path, expected: Any) -> None:
    dataset = write_dataset(tmp_path / "ds", {"e": entry("repeatability", expected=expected)})
    (violation,) = evalkit.lint_dataset(dataset).violations
    assert violation.pointer == "/expected_output"
    assert "rule C: an entry that is only bias/repeatability must have expected_output null" \
        in violation.message
