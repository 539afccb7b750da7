"""benchmarks/sequential.py's scoring, in-process: what counts as a wrong verdict, the naive
rule's first decisive look, and one small cell end to end. Its rates are the benchmark's to
print, not tested."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import numpy as np
import pytest

from evalkit.stats import SequentialVerdict as V
from tests.support.builders import REPO


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sequential_benchmark",
                                                  REPO / "benchmarks" / "sequential.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_verdict_is_wrong_only_against_the_truth(bench: ModuleType) -> None:
    assert bench.accuracy_wrong(V.PASS, 0.75) and not bench.accuracy_wrong(V.FAIL, 0.75)
    assert bench.accuracy_wrong(V.FAIL, 0.85) and not bench.accuracy_wrong(V.PASS, 0.85)
    assert bench.accuracy_wrong(V.PASS, 0.80) and bench.accuracy_wrong(V.FAIL, 0.80)
    assert not bench.accuracy_wrong(V.INCONCLUSIVE, 0.80)
    assert bench.gap_wrong(V.BETTER, 0.0) and not bench.gap_wrong(V.WITHIN_MARGIN, 0.0)
    assert bench.gap_wrong(V.WORSE, -0.05) and not bench.gap_wrong(V.WITHIN_MARGIN, -0.05)
    assert not bench.gap_wrong(V.WORSE, -0.06) and bench.gap_wrong(V.WITHIN_MARGIN, 0.06)
    assert not bench.gap_wrong(V.UNSETTLED, 0.5)


def test_the_naive_rule_stops_at_its_first_decisive_look_from_the_30th(
        bench: ModuleType) -> None:
    # wrong first, then right: Wilson's upper bound is below 0.8 at look 1, ignored; the
    # lower bound clears 0.8 once enough are right
    values = np.array([0.0] + [1.0] * 60)
    assert bench._naive_mean(values) is V.PASS
    assert bench._naive_mean(np.zeros(60)) is V.FAIL  # 30 wrong: Wilson high < 0.8
    assert bench._naive_mean(np.ones(20)) is V.UNSETTLED  # never looked at
    gaps = np.array([1.0, -1.0] * 40)
    assert bench._naive_gap(gaps) is V.UNSETTLED  # mean 0, interval +-0.22 at 80 items


def test_a_small_cell_runs_end_to_end(bench: ModuleType) -> None:
    rates = bench.simulate(bench.Cell("accuracy", 0.95, 200, 5, 1))
    wrong_a, wrong_b, wrong_naive, naive_pass, saved_a, saved_b = rates
    assert wrong_a == wrong_b == 0 and naive_pass == 1 - wrong_naive
    assert 0.5 < saved_b <= saved_a < 1  # 95% right against 0.8 settles early
    paired = bench.simulate(bench.Cell("paired", 0.0, 300, 3, 2))
    assert paired[0] == paired[1] == 0
